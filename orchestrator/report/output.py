"""Writing result files: atomically, or to stdout for ``-``."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.printable import printable
from rigaudit.tools.files.atomic import atomic_write_text
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
    """Before any work: ``path`` can be written as a file (``-`` is stdout); :class:`UsageError` with one line."""
    if str(path) == "-":
        return
    if path.is_dir():
        raise UsageError(f"{what} {path}: is a directory; give a file name")
    if path.exists() and not path.is_file():
        return  # a device or a FIFO: written through
    if path.exists() and not os.access(path, os.W_OK):
        raise UsageError(f"{what} {path}: permission denied")
    folder = path.absolute().parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise UsageError(f"{what} {path}: {folder} is not a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {path}: cannot write in {folder}: permission denied")


def warn(lines: Iterable[str]) -> None:
    """``rigaudit: warning: ...`` on stderr, one line each (for commands that have no session to report to); the
    host or file text a warning quotes shows its control characters as escapes."""
    for line in lines:
        print(f"rigaudit: warning: {printable(line)}", file=sys.stderr)
