"""Writing result files: atomically, or to stdout for ``-``."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.printable import printable
from rigaudit.tools.files.atomic import atomic_write_text
from rigaudit.tools.files.outputs import Kind, check_output
from rigaudit.tools.redact import redact_json_text


def write_json(path: Path, text: str) -> None:
    """Write a JSON document (secrets redacted) to ``path``, or to stdout for ``-``."""
    text = redact_json_text(text)
    if str(path) == "-":
        sys.stdout.write(text + "\n")
        return
    try:
        atomic_write_text(path, text + "\n")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def check_writable(path: Path, what: str) -> None:
    """Before any work: ``path`` can be written as a file (``-`` is stdout): the rule of
    :mod:`rigaudit.tools.files.outputs` (:class:`OutputRefused`, one line)."""
    check_output(path, what, Kind.FILE, stdout=True)


def warn(lines: Iterable[str]) -> None:
    """``rigaudit: warning: ...`` on stderr, one line each (for commands that have no session to report to); the
    host or file text a warning quotes shows its control characters as escapes."""
    for line in lines:
        print(f"rigaudit: warning: {printable(line)}", file=sys.stderr)
