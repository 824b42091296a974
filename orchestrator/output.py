"""Writing result files: atomically, or to stdout for ``-``."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from orchestrator.errors import UsageError


def write_json(path: Path, text: str) -> None:
    if str(path) == "-":
        sys.stdout.write(text + "\n")
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
        os.replace(tmp, path)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
