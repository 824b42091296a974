"""The exceptions the CLI turns into one-line messages.

RigauditError
├── UsageError          exit 2: bad arguments, unreadable input files, wrong formats
├── NotApprovedError    exit 3: a change or a benchmark needs an approval it did not get
└── OperationError      exit 1: the work itself failed (a write refused, a benchmark crashed)
"""

from __future__ import annotations


class RigauditError(Exception):
    exit_code = 1


class UsageError(RigauditError):
    exit_code = 2


class NotApprovedError(RigauditError):
    exit_code = 3


class OperationError(RigauditError):
    exit_code = 1
