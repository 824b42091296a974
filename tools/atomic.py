"""Atomic file writes: a reader sees the old file or the new one, never half of it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write_text(path: Path, text: str, *, mode: int | None = None) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename (``mode``: the new file's permissions;
    default the temporary file's, owner only).

    A path that exists and is not a regular file (``/dev/null``, a FIFO, a terminal) is written
    through instead: renaming over it would replace the device with a plain file.
    """
    if path.exists() and not path.is_file():
        with path.open("w", encoding="utf-8") as stream:
            stream.write(text)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
