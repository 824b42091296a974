"""The benchmarks' errors (drawn in the tree of :mod:`rigaudit.tools.errors`)."""

from __future__ import annotations

from rigaudit.tools.errors import OperationError, UsageError


class BenchUnavailable(UsageError):
    """The benchmark cannot run here (torch, GPUs, a tool missing); the message says what is missing."""


class BenchInputError(UsageError):
    """An input (a result file, a config.json, a size list) is unreadable or malformed."""


class BenchFailed(OperationError):
    """The benchmark started and failed (a worker crashed, a command exited non-zero)."""
