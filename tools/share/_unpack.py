"""Unpacking a share bundle (``snapshot --share``), which is untrusted: bounded, streamed, nothing but
regular files and folders, nothing outside the destination.

The gzip stream is inflated chunk by chunk and counted, so a gzip bomb stops at the limit (its
bytes are never all in memory or on disk); members are refused when they are links, devices,
FIFOs, absolute, climb out with ``..``, repeat a name, or pass the member or byte limits. Every file
is created anew (``O_EXCL | O_NOFOLLOW``).
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import zlib
from pathlib import Path

from rigaudit.tools.bounded import InputError, open_regular
from rigaudit.tools.errors import OperationError

MAX_BUNDLE_BYTES = 256 * 1024 * 1024
"""Bytes of the unpacked tar stream (headers included)."""
MAX_BUNDLE_MEMBERS = 200_000
_CHUNK = 1024 * 1024


class BundleError(InputError):
    """The bundle is refused or damaged; the message is one line naming it."""


class _Capped(io.RawIOBase):
    """The inflated stream, refusing to give more than ``limit`` bytes."""

    def __init__(self, inner: io.BufferedIOBase, limit: int) -> None:
        self._inner = inner
        self._limit = limit
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self._inner.read(min(len(buffer), _CHUNK))
        self.count += len(data)
        if self.count > self._limit:
            raise _TooLarge
        buffer[: len(data)] = data
        return len(data)


class _TooLarge(OperationError):
    """A member past the bundle's limits (turned into a :class:`BundleError` naming the bundle)."""


def _parts(name: str) -> list[str]:
    if not name or name.startswith("/") or "\x00" in name:
        raise BundleError(f"member {name[:80]!r} is not a relative name; refused")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise BundleError(f"member {name[:80]!r} climbs out with '..'; refused")
    return parts


def _write_member(archive: tarfile.TarFile, member: tarfile.TarInfo, target: str) -> None:
    source = archive.extractfile(member)
    if source is None:
        raise BundleError(f"member {member.name[:80]!r} has no data")
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        while chunk := source.read(_CHUNK):
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _extract(archive: tarfile.TarFile, dest: Path, max_members: int) -> int:
    made = {str(dest)}
    members = files = 0
    for member in archive:
        members += 1
        if members > max_members:
            raise BundleError(f"more than {max_members} members; refused")
        parts = _parts(member.name)
        if not parts:
            continue
        target = os.path.join(dest, *parts)
        if member.isdir():
            os.makedirs(target, exist_ok=True)
            made.add(target)
            continue
        if not member.isreg():
            raise BundleError(f"member {member.name[:80]!r} is not a regular file or folder (links and devices are refused)")
        folder = os.path.dirname(target)
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        try:
            _write_member(archive, member, target)
        except FileExistsError:
            raise BundleError(f"member {member.name[:80]!r} appears twice; refused") from None
        files += 1
    return files


def unpack_bundle(path: Path, dest: Path, *, max_bytes: int | None = None, max_members: int | None = None) -> Path:
    """Unpack the bundle ``path`` into ``dest`` (created; must not exist) and return the snapshot in it.

    Limits default to :data:`MAX_BUNDLE_BYTES` and :data:`MAX_BUNDLE_MEMBERS`. Raises
    :class:`BundleError` with one line; ``dest`` is then left for the caller to remove.
    """
    max_bytes = MAX_BUNDLE_BYTES if max_bytes is None else max_bytes
    max_members = MAX_BUNDLE_MEMBERS if max_members is None else max_members
    try:
        fd = open_regular(path)
    except InputError as exc:
        raise BundleError(str(exc)) from None
    except OSError as exc:
        raise BundleError(f"{path}: cannot read: {exc.strerror or exc}") from None
    dest.mkdir(parents=True)
    with os.fdopen(fd, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as inflated:
        capped = _Capped(inflated, max_bytes)  # type: ignore[arg-type]
        try:
            with tarfile.open(fileobj=io.BufferedReader(capped, _CHUNK), mode="r|") as archive:
                _extract(archive, dest, max_members)
        except _TooLarge:
            raise BundleError(f"{path}: unpacks to more than {max_bytes // (1024 * 1024)} MiB; refused") from None
        except BundleError as exc:
            raise BundleError(f"{path}: {exc}") from None
        except (tarfile.TarError, EOFError, OSError, zlib.error, ValueError) as exc:
            raise BundleError(f"{path}: not a readable share bundle ({exc.__class__.__name__})") from None
    found = sorted(p.parent for p in dest.glob("*/snapshot.json")) or sorted(p.parent for p in dest.glob("snapshot.json"))
    if not found:
        raise BundleError(f"{path}: the archive holds no snapshot (no snapshot.json)")
    return found[0]


__all__ = ["MAX_BUNDLE_BYTES", "MAX_BUNDLE_MEMBERS", "BundleError", "unpack_bundle"]
