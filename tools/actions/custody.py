"""Who could have written a file: rigaudit honours a journal (and keeps its key) only where no one else could.

A file is in the running user's custody when it and its folder belong to that user or to root, neither may
be written by anyone else (a folder with the sticky bit, as ``/tmp``, may: the kernel lets no one else
replace or remove a file there that is not theirs), and neither is a symbolic link. Each is opened without
following a link (``O_NOFOLLOW``) and judged by ``fstat`` of what was opened, so a link swapped in between
is not judged in its target's place.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_OPEN = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def _owners() -> tuple[int, ...]:
    return (os.geteuid(), 0)


def _who(st: os.stat_result, what: str, *, private: bool) -> str | None:
    """Why ``st`` is not in this user's custody (``None``: it is). ``private``: no one else may even read it."""
    if st.st_uid not in _owners():
        return f"{what} belongs to uid {st.st_uid}, not to you or root"
    others = 0o077 if private else 0o022
    if st.st_mode & others and not (stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX and not private):
        return f"{what} may be {'read or written' if private else 'written'} by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def folder_problem(folder: Path, *, private: bool = False) -> str | None:
    """Why files in ``folder`` could have been written by someone else (``None``: they could not)."""
    try:
        fd = os.open(folder, _OPEN | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and folder.is_symlink():
            return f"its folder {folder} is a symbolic link"
        return f"its folder {folder}: {exc.strerror or exc}"
    try:
        return _who(os.fstat(fd), f"its folder {folder}", private=private)
    finally:
        os.close(fd)


def file_problem(path: Path, *, private: bool = False) -> str | None:
    """Why ``path`` could have been written by someone else than this user or root (``None``: it could not)."""
    problem = folder_problem(path.parent, private=private)
    if problem is not None:
        return problem
    try:
        fd = os.open(path, _OPEN)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "it is a symbolic link (rigaudit follows none to a journal)"
        return exc.strerror or str(exc)
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    if not stat.S_ISREG(st.st_mode):
        return "it is not a regular file"
    return _who(st, "it", private=private)


__all__ = ["file_problem", "folder_problem"]
