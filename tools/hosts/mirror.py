"""A snapshot's ``files/`` mirror, read and written without ever leaving it.

Every path is walked component by component from the mirror's root with ``O_NOFOLLOW`` directory
file descriptors, so no symbolic link inside the mirror is followed (links belong in
``links.json``, where they are resolved inside the snapshot) and a folder swapped for a link after
a check cannot redirect an access. Only regular files are opened (``lstat`` first, then ``fstat``
confirms); FIFOs, devices, sockets and links read as ``ENOTREG``. Writes replace a file by a new
one renamed into place; nothing is written through a link or outside the mirror.

Errors are errno names (``ENOENT``, ``ENOTDIR``, ``EFBIG``, ``ENOTREG``...), as a Host reports them.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from pathlib import Path
from typing import Literal

from rigaudit.tools.core.errors import OperationError
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.files.atomic import write_all
from rigaudit.tools.files.bounded import MAX_FILE_BYTES, InputError, kind_of, open_regular, read_fd_bounded

Kind = Literal["file", "dir", "other"]
MAX_DEPTH = 64
"""Components of one mirrored path."""
MAX_LISTING = 100_000
"""Entries of one directory listed."""
MAX_TREE_ENTRIES = 500_000
"""Files and folders of a whole mirror walked (share, diff, copy)."""
MAX_TREE_BYTES = 1024 * 1024 * 1024
"""Bytes of a whole mirror read (share, diff, copy)."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class MirrorError(OperationError):
    """An access refused or failed; ``code`` is the errno name a Host result carries."""

    def __init__(self, code: str, message: str = "") -> None:
        super().__init__(message or code)
        self.code = code


def _temp_name(name: str) -> str:
    """The name a new file is written under before it is renamed over ``name``: of a fixed length,
    so that any name the file system takes also has a temporary one it takes."""
    digest = hashlib.sha256(os.fsencode(name)).hexdigest()[:16]
    return f".rigaudit-tmp-{digest}"


def _code(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "ENOTREG"  # a link where a folder or file was expected
    return errno.errorcode.get(exc.errno or 0, "EIO")


def parts_of(path: str) -> list[str]:
    """The components of an absolute host path inside the mirror; ``..`` and NUL are refused."""
    if "\x00" in path:
        raise MirrorError("EINVAL", "a NUL byte in the path")
    parts = [p for p in path.split("/") if p and p != "."]
    if ".." in parts:
        raise MirrorError("EINVAL", "'..' in the path")
    if len(parts) > MAX_DEPTH:
        raise MirrorError("ENAMETOOLONG", f"more than {MAX_DEPTH} components")
    return parts


class TreeWalk(Record, frozen=False):
    """What :meth:`Mirror.walk` found: folders, regular files (with sizes) and what it skipped."""

    dirs: list[str] = field(default_factory=list)
    files: dict[str, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    """``/path: a FIFO`` for each entry that is not a folder or a regular file."""


class Mirror:
    """The folder ``root/name`` (``files``), whose own entry must be a real folder, not a link;
    with ``name=None``, ``root`` itself (a folder the person named, followed if it is a link)."""

    def __init__(self, root: Path | str, name: str | None = "files") -> None:
        self.root = Path(root)
        self.name = name

    @property
    def path(self) -> Path:
        return self.root if self.name is None else self.root / self.name

    # -- descriptors ----------------------------------------------------------------------

    def _open_top(self) -> int:
        top = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        if self.name is None:
            return top
        try:
            return os.open(self.name, _DIR_FLAGS, dir_fd=top)
        finally:
            os.close(top)

    def _open_dir(self, parts: list[str], *, create: bool = False) -> int:
        """An fd of the folder ``parts`` (created with ``create``); ``OSError`` / ``MirrorError``."""
        fd = self._open_top()
        try:
            for part in parts:
                try:
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    os.mkdir(part, 0o755, dir_fd=fd)
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _lstat(self, parts: list[str]) -> os.stat_result | None:
        try:
            if not parts:
                fd = self._open_top()
                try:
                    return os.fstat(fd)
                finally:
                    os.close(fd)
            parent = self._open_dir(parts[:-1])
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return None
            raise
        try:
            return os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return None
        finally:
            os.close(parent)

    # -- reads ----------------------------------------------------------------------------

    def available(self) -> bool:
        """Whether the mirror folder exists as a real folder (a snapshot may lack ``files/``)."""
        try:
            os.close(self._open_top())
        except OSError:
            return False
        return True

    def kind(self, path: str) -> Kind | None:
        """``file``, ``dir``, ``other`` (link, FIFO, device...) or ``None`` when absent."""
        try:
            st = self._lstat(parts_of(path))
        except (MirrorError, OSError):
            return None
        if st is None:
            return None
        return "dir" if stat.S_ISDIR(st.st_mode) else "file" if stat.S_ISREG(st.st_mode) else "other"

    def read(self, path: str, limit: int = MAX_FILE_BYTES) -> bytes:
        """The bytes of the regular file ``path``; :class:`MirrorError` otherwise."""
        parts = parts_of(path)
        if not parts:
            raise MirrorError("EISDIR")
        try:
            parent = self._open_dir(parts[:-1])
        except OSError as exc:
            raise MirrorError(_code(exc)) from None
        try:
            try:
                fd = open_regular(parts[-1], follow=False, dir_fd=parent)
            except InputError:
                st = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
                raise MirrorError("EISDIR" if stat.S_ISDIR(st.st_mode) else "ENOTREG") from None
            try:
                return read_fd_bounded(fd, limit, path)
            except InputError:
                raise MirrorError("EFBIG") from None
            finally:
                os.close(fd)
        except OSError as exc:
            raise MirrorError(_code(exc)) from None
        finally:
            os.close(parent)

    def list(self, path: str, limit: int = MAX_LISTING) -> list[tuple[str, Kind]]:
        """The entries of the folder ``path`` with their kinds; :class:`MirrorError` otherwise."""
        try:
            fd = self._open_dir(parts_of(path))
        except OSError as exc:
            raise MirrorError(_code(exc)) from None
        try:
            return _entries(fd, limit)
        except OSError as exc:
            raise MirrorError(_code(exc)) from None
        finally:
            os.close(fd)

    def walk(
        self, *, max_entries: int = MAX_TREE_ENTRIES, max_bytes: int = MAX_TREE_BYTES, skip: frozenset[str] = frozenset()
    ) -> TreeWalk:
        """Every folder and regular file of the mirror (links and special files skipped and named),
        except the top-level entries named in ``skip``.

        :class:`MirrorError` past ``max_entries`` entries or ``max_bytes`` bytes of files.
        """
        found = TreeWalk()
        if not self.available():
            return found
        total = 0
        pending: list[tuple[str, list[str]]] = [("", [])]
        while pending:
            base, parts = pending.pop()
            try:
                fd = self._open_dir(parts)
            except OSError:
                found.skipped.append(f"{base or '/'}: not a folder any more")
                continue
            try:
                entries = _entries(fd, max_entries)
                for name, kind in entries:
                    host_path = f"{base}/{name}"
                    if not parts and name in skip:
                        continue
                    if len(found.dirs) + len(found.files) >= max_entries:
                        raise MirrorError("E2BIG", f"more than {max_entries} files and folders")
                    if kind == "dir":
                        if len(parts) + 1 >= MAX_DEPTH:
                            found.skipped.append(f"{host_path}: nested deeper than {MAX_DEPTH} folders")
                            continue
                        found.dirs.append(host_path)
                        pending.append((host_path, [*parts, name]))
                    elif kind == "file":
                        size = os.stat(name, dir_fd=fd, follow_symlinks=False).st_size
                        total += size
                        if total > max_bytes:
                            raise MirrorError("EFBIG", f"more than {max_bytes // (1024 * 1024)} MiB of files")
                        found.files[host_path] = size
                    else:
                        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                        found.skipped.append(f"{host_path}: {kind_of(st.st_mode)}")
            except FileNotFoundError:
                continue
            finally:
                os.close(fd)
        found.dirs.sort()
        return found

    # -- writes ---------------------------------------------------------------------------

    def write(self, path: str, data: bytes, *, offset: int | None = None, create: bool = False) -> None:
        """Replace the regular file ``path`` (``offset``: patch it in place of those bytes) by a new
        file renamed over it; ``create`` also makes a missing file and its folders."""
        parts = parts_of(path)
        if not parts:
            raise MirrorError("EISDIR")
        try:
            parent = self._open_dir(parts[:-1], create=create)
        except OSError as exc:
            raise MirrorError(_code(exc)) from None
        name = parts[-1]
        temp = _temp_name(name)
        try:
            try:
                st: os.stat_result | None = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            if st is None and (not create or offset is not None):
                raise MirrorError("ENOENT")
            if st is not None and not stat.S_ISREG(st.st_mode):
                raise MirrorError("EISDIR" if stat.S_ISDIR(st.st_mode) else "ENOTREG")
            if offset is not None:
                fd = open_regular(name, follow=False, dir_fd=parent)
                try:
                    old = read_fd_bounded(fd, MAX_FILE_BYTES, path)
                finally:
                    os.close(fd)
                if offset < 0 or offset > len(old):
                    raise MirrorError("EINVAL", f"offset {offset} outside {len(old)} bytes")
                data = old[:offset] + data + old[offset + len(data) :]
            mode = stat.S_IMODE(st.st_mode) if st is not None else 0o644
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=parent)
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=parent)
            try:
                write_all(fd, data)
            finally:
                os.close(fd)
            os.rename(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except InputError:
            raise MirrorError("ENOTREG") from None
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=parent)
            raise MirrorError(_code(exc), exc.strerror or "") from None
        finally:
            os.close(parent)

    def remove(self, path: str, *, prune_to: str) -> None:
        """Delete the regular file ``path`` (absent is fine), then the folders its removal leaves empty,
        up to (not including) ``prune_to``."""
        parts = parts_of(path)
        stop = len(parts_of(prune_to))
        if not parts:
            raise MirrorError("EISDIR")
        try:
            parent = self._open_dir(parts[:-1])
        except FileNotFoundError:
            return
        except OSError as exc:
            raise MirrorError(_code(exc)) from None
        try:
            try:
                st = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                return
            if stat.S_ISDIR(st.st_mode):
                raise MirrorError("EISDIR", "is a directory")
            os.unlink(parts[-1], dir_fd=parent)
        except OSError as exc:
            raise MirrorError(_code(exc)) from None
        finally:
            os.close(parent)
        for depth in range(len(parts) - 1, stop, -1):
            try:
                above = self._open_dir(parts[: depth - 1])
            except OSError:
                return
            try:
                os.rmdir(parts[depth - 1], dir_fd=above)
            except OSError:
                return
            finally:
                os.close(above)


def _entries(fd: int, limit: int) -> list[tuple[str, Kind]]:
    out: list[tuple[str, Kind]] = []
    with os.scandir(fd) as scan:
        for entry in scan:
            if len(out) >= limit:
                raise MirrorError("E2BIG", f"more than {limit} entries in one folder")
            if entry.is_dir(follow_symlinks=False):
                out.append((entry.name, "dir"))
            elif entry.is_file(follow_symlinks=False):
                out.append((entry.name, "file"))
            else:
                out.append((entry.name, "other"))
    return out


__all__ = ["MAX_LISTING", "MAX_TREE_BYTES", "MAX_TREE_ENTRIES", "Kind", "Mirror", "MirrorError", "TreeWalk", "parts_of"]
