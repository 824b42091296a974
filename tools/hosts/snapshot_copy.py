"""A new copy of a snapshot (``apply --snapshot SRC --into DST``): built beside DST, renamed into place.

The source is untrusted like any snapshot: it is walked without following a link and bounded in
size and count, and one that holds anything but folders and regular files (a link, a FIFO, a
device) is refused: a snapshot holds none, and a copy must not carry them. The copy is written
to a private folder next to DST and renamed to DST only once it is whole, so an interrupted or
killed copy never leaves a partial DST.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from rigaudit.tools.files.atomic import write_all
from rigaudit.tools.hosts.mirror import Mirror, MirrorError
from rigaudit.tools.hosts.snapshot import SnapshotError


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)


def _fill(source: Mirror, staging: Path) -> None:
    try:
        walk = source.walk()
    except MirrorError as exc:
        raise SnapshotError(f"{source.path}: {exc}; not copied") from None
    if walk.skipped:
        more = f" (and {len(walk.skipped) - 1} more)" if len(walk.skipped) > 1 else ""
        raise SnapshotError(f"{source.path}{walk.skipped[0]}{more}: a snapshot holds only folders and regular files; not copied")
    for folder in walk.dirs:
        os.mkdir(f"{staging}{folder}", 0o755)
    for path in sorted(walk.files):
        try:
            data = source.read(path, limit=max(walk.files[path], 1))
        except MirrorError as exc:
            raise SnapshotError(f"{source.path}{path}: cannot copy ({exc.code})") from None
        _write(f"{staging}{path}", data)


def copy_snapshot(src: Path, dst: Path) -> None:
    """Copy the snapshot ``src`` to the new folder ``dst`` (absent, or an empty folder).

    :class:`SnapshotError` or ``OSError`` when it cannot be done; ``dst`` is then untouched."""
    dst = dst.absolute()
    staging = Path(tempfile.mkdtemp(prefix=f".{dst.name}.copy-", dir=dst.parent))
    try:
        os.chmod(staging, 0o755)
        _fill(Mirror(src, None), staging)
        if dst.is_dir() and not dst.is_symlink():
            dst.rmdir()  # an empty folder the person made for it: replaced by the whole copy
        os.rename(staging, dst)
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(staging)
        raise


__all__ = ["copy_snapshot"]
