"""Where an output may be written: the one rule every output flag of every command is checked by, before any work.

A *file* output (``--json``, ``--report``, ``--prometheus``, ``--transcript``, a bundle...) is written whole or
appended to: an existing target must be a regular file (or a FIFO, written through); a folder, a device or a
socket is refused. A link as the file's own name is replaced, never followed (see :mod:`.atomic`). ``-`` is
stdout where the flag says so; ``/dev/stdout``, ``/dev/stderr``, ``/dev/null``, ``/dev/tty``, ``/dev/fd/N`` and
``/proc/self/fd/N`` are the shell's streams and are written through.

A *folder* output (``audit --out``, ``bench calibrate --keep``) is created or written into; a *new folder*
(``--into``, ``snapshot -o``) must be absent or empty.

For every kind: missing folders on the way are created (as ``mkdir -p``) once every output of the command
is checked, and the deepest folder that exists must be one that can be written. Nothing is written under
``/proc``, ``/sys`` or ``/dev`` (but ``/dev/shm``), whatever link leads there. A link on the way is followed
only where the link and every folder on the way to it belong to root or the running user and no one else may
write there (a sticky folder such as ``/tmp`` protects the links its owners made: the kernel's
``protected_symlinks`` rule); else it is refused.
Every refusal is an :class:`OutputRefused` with one line that names the flag.
"""

from __future__ import annotations

import os
import stat
from enum import Enum
from pathlib import Path

from rigaudit.tools.core.errors import UsageError


class OutputRefused(UsageError):
    """An output path that cannot or must not be written: one line naming the flag, before any work."""


class Kind(Enum):
    FILE = "file"
    FOLDER = "folder"
    NEW_FOLDER = "new folder"


KERNEL_FOLDERS = ("/proc", "/sys", "/dev")
"""Kernel interfaces, not places for files."""
_SCRATCH = ("/dev/shm",)
"""Under /dev, but a place for files (tmpfs)."""
_STREAMS = ("/dev/stdout", "/dev/stderr", "/dev/null", "/dev/tty")
_STREAM_FDS = ("/dev/fd/", "/proc/self/fd/")


def _stream(path: str) -> bool:
    """One of the shell's streams: a person's own choice, written through (``--json /dev/stdout``, ``>(jq .)``).
    (No regular expression: ``rigaudit check`` compiles none as it starts.)"""
    fds = next((path[len(p) :] for p in _STREAM_FDS if path.startswith(p)), None)
    return path in _STREAMS or (fds is not None and fds.isdigit())


_MAX_LINKS = 40
"""Links followed on one path, as the kernel's ``ELOOP`` limit."""


def _within(path: str, folders: tuple[str, ...]) -> bool:
    return any(path == f or path.startswith(f + "/") for f in folders)


def _ours(uid: int) -> bool:
    return uid in (0, os.geteuid())


def others_may_write(info: os.stat_result) -> bool:
    """Whether someone but root and the running user may write in a folder (its group counts unless it is root's
    or the running user's own)."""
    if not _ours(info.st_uid):
        return True
    group = info.st_mode & stat.S_IWGRP and info.st_gid not in (0, os.getegid())
    return bool(info.st_mode & stat.S_IWOTH or group)


def _folders_safe(folder: str, link_owner: int) -> str | None:
    """Why a link in ``folder`` (a resolved path) owned by ``link_owner`` may have been planted or swapped by
    someone else; ``None`` when it cannot have been."""
    if not _ours(link_owner):
        return "belongs to someone else"
    here = folder
    while True:
        info = os.stat(here)
        sticky = info.st_mode & stat.S_ISVTX and _ours(info.st_uid)
        if others_may_write(info) and not sticky:
            return f"is in {here}, which others may write"
        if here == "/":
            return None
        here = os.path.dirname(here)


class _Walk:
    """A path resolved one name at a time, each link on the way judged before it is followed."""

    def __init__(self, path: Path, what: str, *, follow_last: bool) -> None:
        self.what, self.given = what, path
        self.real = "/"
        self.missing: list[str] = []
        self.last_link = False
        names = [n for n in str(path.absolute()).split("/") if n]
        links = 0
        while names:
            name = names.pop(0)
            if name == ".":
                continue
            if name == "..":
                self.real = os.path.dirname(self.real)
                continue
            here = os.path.join(self.real, name)
            try:
                info = os.lstat(here)
            except FileNotFoundError:
                self.missing = [name, *names]
                return
            except NotADirectoryError:
                raise self.refused(f"{self.real} is not a directory") from None
            except OSError as exc:
                raise self.refused(f"cannot reach {here}: {exc.strerror or exc}") from None
            if stat.S_ISLNK(info.st_mode) and (names or follow_last):
                links += 1
                if links > _MAX_LINKS:
                    raise self.refused("too many links on the way")
                if not _within(self.real, KERNEL_FOLDERS) and (why := _folders_safe(self.real, info.st_uid)):
                    raise self.refused(f"the link {here} {why}: not followed (give the real path)")
                target = os.readlink(here)
                if target.startswith("/"):
                    self.real = "/"
                names = [n for n in target.split("/") if n] + names
                continue
            if names and not stat.S_ISDIR(info.st_mode):
                raise self.refused(f"{here} is not a directory")
            self.last_link = stat.S_ISLNK(info.st_mode)
            self.real = here

    def refused(self, why: str) -> OutputRefused:
        return OutputRefused(f"{self.what} {self.given}: {why}")

    @property
    def exists(self) -> bool:
        return not self.missing


def _kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a link"
    if stat.S_ISREG(mode):
        return "a file"
    return "not a regular file"


def _writable_folder(walk: _Walk, folder: str) -> None:
    if not os.access(folder, os.W_OK | os.X_OK):
        raise walk.refused(f"cannot write in {folder}: permission denied")


def check_output(path: Path, what: str, kind: Kind = Kind.FILE, *, stdout: bool = False, force: bool | None = None) -> None:
    """Before any work: ``path`` may be written as ``kind`` (the rule of this module), else :class:`OutputRefused`.

    ``stdout``: ``-`` means stdout (file outputs). ``force``: whether a new folder may replace a non-empty one
    (``None``: the command has no ``--force``)."""
    text = str(path)
    if kind is Kind.FILE and text == "-" and stdout:
        return
    if not text:
        raise OutputRefused(f"{what}: an empty path")
    if kind is Kind.FILE and _stream(os.path.abspath(text)):
        if not os.path.exists(text):
            raise OutputRefused(f"{what} {path}: no such stream (no open file descriptor)")
        if os.path.isdir(text):
            raise OutputRefused(f"{what} {path}: is a directory; give a file name")
        return
    walk = _Walk(path, what, follow_last=kind is Kind.FOLDER)
    if _within(walk.real, KERNEL_FOLDERS) and not _within(walk.real, _SCRATCH):
        top = next(f for f in KERNEL_FOLDERS if _within(walk.real, (f,)))
        raise walk.refused(f"{top} is the kernel's, not a place for files")
    if walk.exists:
        info = os.lstat(walk.real)
        if kind is Kind.FILE:
            _existing_file(walk, info)
        else:
            _existing_folder(walk, info, kind, force)
        return
    if not os.path.isdir(walk.real):
        raise walk.refused(f"{walk.real} is not a directory")
    _writable_folder(walk, walk.real)
    return


def missing_folders(path: Path) -> Path | None:
    """The folder ``path`` goes in, when it does not exist yet (:func:`make_folders` creates it); ``None`` when it
    does, or ``path`` is a stream."""
    text = str(path)
    if text == "-" or _stream(os.path.abspath(text)):
        return None
    folder = path.absolute().parent
    return None if folder.exists() else folder


def make_folders(path: Path, what: str) -> None:
    """Create the missing folders ``path`` goes in (after :func:`check_output`), as ``mkdir -p``."""
    folder = missing_folders(path)
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputRefused(f"{what} {path}: cannot create {folder}: {exc.strerror or exc}") from None


def _existing_file(walk: _Walk, info: os.stat_result) -> None:
    folder = os.path.dirname(walk.real)
    if walk.last_link:  # replaced, never followed
        _writable_folder(walk, folder)
        return
    if stat.S_ISDIR(info.st_mode):
        raise walk.refused("is a directory; give a file name")
    if stat.S_ISFIFO(info.st_mode):
        return
    if not stat.S_ISREG(info.st_mode):
        raise walk.refused(f"is {_kind_of(info.st_mode)}, not a file to write")
    if not os.access(walk.real, os.W_OK):
        raise walk.refused("permission denied")
    _writable_folder(walk, folder)


def _existing_folder(walk: _Walk, info: os.stat_result, kind: Kind, force: bool | None) -> None:
    if walk.last_link:  # a new folder is made in its place: the link would be replaced or followed
        raise walk.refused("is a link; give a new directory")
    if not stat.S_ISDIR(info.st_mode):
        raise walk.refused(f"exists and is {_kind_of(info.st_mode)}, not a directory")
    _writable_folder(walk, walk.real)
    if kind is Kind.NEW_FOLDER and not force:
        try:
            empty = next(os.scandir(walk.real), None) is None
        except OSError as exc:
            raise walk.refused(f"cannot read it: {exc.strerror or exc}") from None
        if not empty:
            hint = "give a new directory" if force is None else "give a new directory, or --force to replace it"
            raise walk.refused(f"exists and is not empty ({hint})")


__all__ = ["KERNEL_FOLDERS", "Kind", "OutputRefused", "check_output", "make_folders", "missing_folders", "others_may_write"]
