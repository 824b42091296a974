"""Unpacking a share bundle (``snapshot --share``), which is untrusted: bounded, streamed, nothing but
regular files and folders, nothing outside the destination.

The gzip stream is inflated chunk by chunk and counted, so a gzip bomb stops at the limit (its
bytes are never all in memory or on disk); the members are unpacked by :mod:`rigaudit.tools.files.bounded_tar`,
which refuses links, devices, FIFOs, sparse files, absolute names, ``..``, a name twice, and what
passes the member or byte limits, and creates every file anew (``O_EXCL | O_NOFOLLOW``).
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import zlib
from pathlib import Path

from rigaudit.tools.core.errors import OperationError
from rigaudit.tools.files.bounded import InputError, open_regular
from rigaudit.tools.files.bounded_tar import Refusal, Words, extract_members

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


_WORDS: Words = {
    Refusal.NOT_RELATIVE: "member {name!r} is not a relative name; refused",
    Refusal.CLIMBS: "member {name!r} climbs out with '..'; refused",
    Refusal.TOO_MANY: "more than {members} members; refused",
    Refusal.NOT_REGULAR: "member {name!r} is not a regular file or folder (links and devices are refused)",
    Refusal.TOO_LARGE: "unpacks to more than {mib} MiB; refused",
    Refusal.TWICE: "member {name!r} appears twice; refused",
    Refusal.CUT_SHORT: "member {name!r} is cut short; refused",
}


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
                extract_members(archive, dest, max_members=max_members, max_bytes=max_bytes, words=_WORDS, error=BundleError)
        except _TooLarge:
            raise BundleError(f"{path}: " + _WORDS[Refusal.TOO_LARGE].format(mib=max_bytes // (1024 * 1024))) from None
        except BundleError as exc:
            raise BundleError(f"{path}: {exc}") from None
        except (tarfile.TarError, EOFError, OSError, zlib.error, ValueError) as exc:
            raise BundleError(f"{path}: not a readable share bundle ({exc.__class__.__name__})") from None
    found = sorted(p.parent for p in dest.glob("*/snapshot.json")) or sorted(p.parent for p in dest.glob("snapshot.json"))
    if not found:
        raise BundleError(f"{path}: the archive holds no snapshot (no snapshot.json)")
    return found[0]


__all__ = ["MAX_BUNDLE_BYTES", "MAX_BUNDLE_MEMBERS", "BundleError", "unpack_bundle"]
