"""The exceptions of the benchmarks (the CLI maps them to one-line messages).

BenchError
├── BenchUnavailable   what a benchmark needs is missing here (torch, GPUs, a tool): exit 2
├── BenchInputError    an input file or argument is unreadable or of the wrong format: exit 2
└── BenchFailed        the benchmark ran and failed (a worker crashed, a command exited non-zero): exit 1
"""

from __future__ import annotations


class BenchError(Exception):
    """Base of the benchmark errors."""


class BenchUnavailable(BenchError):
    """The benchmark cannot run here; the message says what is missing."""


class BenchInputError(BenchError):
    """An input (a result file, a config.json, a size list) is unreadable or malformed."""


class BenchFailed(BenchError):
    """The benchmark started and failed."""
