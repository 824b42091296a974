"""Writing inside an output folder (``audit --out O``'s ``hosts/NAME/``) without following a link in it.

The folder given was checked by :mod:`.outputs` before the work; the folders rigaudit makes inside it are
opened one at a time from the one above (``O_NOFOLLOW``, through directory descriptors), so a link planted
there, before the check or after it, is refused rather than followed, and so is a folder others may write
(where a link could be planted between opening and writing). What is written is written through the
descriptor's own path (``/proc/self/fd/N``), which names the folder opened, whatever is renamed around it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from rigaudit.tools.files.outputs import OutputRefused, others_may_write

_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _step(parent: int, name: str, shown: Path) -> int:
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o755, dir_fd=parent)
    try:
        fd = os.open(name, _FLAGS, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise OutputRefused(f"{shown}: is a link or not a directory: not followed") from None
        raise
    if others_may_write(os.fstat(fd)):
        os.close(fd)
        raise OutputRefused(f"{shown}: others may write in it: a link planted there could steer the write")
    return fd


@contextlib.contextmanager
def held_folder(folder: Path, levels: int) -> Iterator[Path]:
    """``folder``, its last ``levels`` names made where missing and opened without following a link; yields the
    path to write in (the descriptor's, valid while held). :class:`OutputRefused` for a link or a folder others
    may write; ``OSError`` when it cannot be made."""
    names, root = folder.parts[-levels:], Path(*folder.parts[:-levels])
    root.mkdir(parents=True, exist_ok=True)  # the output folder itself (its path was checked before the work)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        shown = root
        for name in names:
            shown = shown / name
            child = _step(fd, name, shown)
            os.close(fd)
            fd = child
        yield Path(f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)


def no_link(folder: Path, name: str, shown: Path) -> None:
    """Refuse ``name`` in a held folder when it is a link or not a regular file (it is written whole there)."""
    try:
        mode = os.lstat(folder / name).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise OutputRefused(f"{shown / name}: is a link or not a regular file: not followed")


__all__ = ["held_folder", "no_link"]
