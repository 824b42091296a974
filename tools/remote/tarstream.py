"""Snapshots on the wire: a gzip'd tar of the snapshot directory, packed on the node, unpacked here.

Packing follows symbolic links (a snapshot holds none; a prepared copy may link its files),
normalizes owners and times, and leaves out folders that hold files (unpacking makes them).
Unpacking trusts nothing: the stream is gunzipped with its size bounded, then unpacked by
:mod:`rigaudit.tools.files.bounded_tar` (only regular files and folders, no absolute names, no ``..``,
no links, bounded in size and member count, every file created anew).
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
import zlib
from pathlib import Path
from typing import BinaryIO

from rigaudit.tools.core.errors import OperationError
from rigaudit.tools.files.bounded_tar import Refusal, Words, extract_members

MAX_BYTES = 1024 * 1024 * 1024
MAX_MEMBERS = 200_000


class ArchiveError(OperationError):
    """The stream is not a snapshot archive this coordinator accepts; the message is one line."""


_WORDS: Words = {
    Refusal.NOT_RELATIVE: "refused member {name!r}: not a relative name",
    Refusal.CLIMBS: "refused member {name!r}: climbs out with '..'",
    Refusal.TOO_MANY: "more than {members} members; refused",
    Refusal.NOT_REGULAR: "refused member {name!r}: only files and folders belong in a snapshot",
    Refusal.TOO_LARGE: "more than {mib} MiB unpacked; refused",
    Refusal.TWICE: "member {name!r} appears twice; refused",
    Refusal.CUT_SHORT: "member {name!r} is cut short",
}


def _info(name: str, st: os.stat_result) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mtime = int(st.st_mtime)
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def write_snapshot_tar(root: Path, out: BinaryIO, *, compresslevel: int = 6) -> int:
    """Write ``root`` (a snapshot directory) to ``out`` as a gzip'd tar stream; return the member count."""
    count = 0
    with (
        gzip.GzipFile(fileobj=out, mode="wb", compresslevel=compresslevel, mtime=0) as packed,
        tarfile.open(fileobj=packed, mode="w|", format=tarfile.PAX_FORMAT) as archive,
    ):
        for folder, dirs, files in os.walk(root, followlinks=True):
            dirs.sort()
            relative = os.path.relpath(folder, root)
            prefix = "" if relative == "." else relative.replace(os.sep, "/") + "/"
            if prefix and not dirs and not files:  # folders with files are implied by them
                info = _info(prefix.rstrip("/"), os.stat(folder))
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                archive.addfile(info)
                count += 1
            for name in sorted(files):
                path = os.path.join(folder, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue  # a dangling link: nothing to send
                if not stat.S_ISREG(st.st_mode):
                    continue
                info = _info(prefix + name, st)
                info.size, info.mode = st.st_size, 0o644
                with open(path, "rb") as handle:
                    archive.addfile(info, handle)
                count += 1
    return count


def snapshot_tar_bytes(root: Path) -> bytes:
    buffer = io.BytesIO()
    write_snapshot_tar(root, buffer)
    return buffer.getvalue()


def _unpacked(data: bytes, limit: int) -> bytes:
    """The tar bytes: gunzipped in one C call, refusing more than ``limit`` bytes (no gzip bombs)."""
    if not data.startswith(b"\x1f\x8b"):
        return data
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        raw = inflater.decompress(data, limit + 1)
    except zlib.error as exc:
        raise ArchiveError(f"not a readable snapshot stream (gzip: {exc})") from None
    if len(raw) > limit or inflater.unconsumed_tail:
        raise ArchiveError(f"more than {limit // (1024 * 1024)} MiB unpacked; refused")
    return raw


def extract_snapshot_tar(
    data: bytes | BinaryIO, dest: Path, *, max_bytes: int = MAX_BYTES, max_members: int = MAX_MEMBERS
) -> int:
    """Unpack a snapshot stream into ``dest`` (created; must not exist). Return the number of files."""
    raw = _unpacked(data if isinstance(data, (bytes, bytearray)) else data.read(), max_bytes + 64 * 1024 * 1024)
    dest.mkdir(parents=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as archive:
            files = extract_members(archive, dest, max_members=max_members, max_bytes=max_bytes, words=_WORDS, error=ArchiveError)
    except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
        raise ArchiveError(f"not a readable snapshot stream ({exc.__class__.__name__}: {str(exc)[:120]})") from None
    if not (dest / "snapshot.json").is_file():
        raise ArchiveError("the stream holds no snapshot.json: not a snapshot")
    return files
