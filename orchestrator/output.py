"""Writing result files: atomically, or to stdout for ``-``."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from rigaudit.tools.atomic import atomic_write_text
from rigaudit.tools.errors import UsageError
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


def warn(lines: Iterable[str]) -> None:
    """``rigaudit: warning: ...`` on stderr, one line each (for commands that have no session to report to)."""
    for line in lines:
        print(f"rigaudit: warning: {line}", file=sys.stderr)
