"""Atomic file writes: a reader sees the old file or the new one, never half of it."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import sys
import tempfile
from pathlib import Path

STREAM_FOLDERS = ("/dev/", "/proc/")
"""Where a name that leads to a stream is the person's own choice (``/dev/stdout``, ``/dev/null``, ``/dev/fd/3``,
``/proc/self/fd/1``): written through even when it is a link."""


def write_all(fd: int, data: bytes) -> None:
    """All of ``data`` to ``fd``: ``os.write`` may take less than it is given."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _through(path: Path) -> bool:
    """Whether ``path`` is a stream to write through (a FIFO, a terminal, ``/dev/null``) rather than a file to replace.

    A link elsewhere is replaced, never written through: one planted in a shared folder (a textfile collector's,
    a results folder) could otherwise point a root-run gate at a disk or ``/dev/kmsg``. A block device, a socket
    or a folder is refused (``OSError``).
    """
    try:
        named = path.lstat()
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(named.st_mode):
        if not os.path.abspath(path).startswith(STREAM_FOLDERS):
            return False
        named = path.stat()  # /dev/stdout to a file, a pipe or a terminal: written as the shell's `>` would
        if stat.S_ISREG(named.st_mode):
            return True
    elif stat.S_ISREG(named.st_mode):
        return False
    if stat.S_ISCHR(named.st_mode) or stat.S_ISFIFO(named.st_mode):
        return True
    kind = "a directory" if stat.S_ISDIR(named.st_mode) else "a block device" if stat.S_ISBLK(named.st_mode) else "a socket"
    raise OSError(f"{path} is {kind}, not a file to write")


_STDOUT = ("/dev/stdout", "/dev/fd/1", "/proc/self/fd/1")
_STDERR = ("/dev/stderr", "/dev/fd/2", "/proc/self/fd/2")


def _write_through(path: Path, text: str) -> None:
    """Write to a stream: stdout and stderr as the process's own (what was printed before stays); a file reached
    through ``/dev/fd/N`` at its end; a FIFO no one reads is an error at once (``O_NONBLOCK``), never a hang."""
    name = os.path.abspath(path)
    for names, stream in ((_STDOUT, sys.stdout), (_STDERR, sys.stderr)):
        if name in names:
            stream.write(text)
            stream.flush()
            return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, f"{path} is a FIFO that no one reads") from None
        raise
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    with os.fdopen(fd, "w", encoding="utf-8") as stream:
        stream.write(text)


def atomic_write_text(path: Path, text: str, *, mode: int | None = None, through: bool = True) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename (``mode``: the new file's permissions;
    default the temporary file's, owner only).

    A FIFO or a character device (``/dev/null``, a terminal) named as itself, or by a link under ``/dev`` or
    ``/proc`` (``/dev/stdout``), is written through: renaming over it would replace the device with a plain file.
    ``through=False`` replaces whatever is there (a textfile that must be a file). A link is replaced, not
    followed; a block device, a socket or a folder is refused.
    """
    if through and _through(path):
        _write_through(path, text)
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


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename (a link there is replaced, not followed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
