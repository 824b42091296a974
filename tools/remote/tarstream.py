"""Snapshots on the wire: a gzip'd tar of the snapshot directory, packed on the node, unpacked here.

Packing follows symbolic links (a snapshot holds none; a prepared copy may link its files),
normalizes owners and times, and leaves out folders that hold files (unpacking makes them).
Unpacking trusts nothing: only regular files and directories, no absolute names, no ``..``, no
links, bounded in size and member count, every file created anew.
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

from rigaudit.tools.errors import OperationError

MAX_BYTES = 1024 * 1024 * 1024
MAX_MEMBERS = 200_000


class ArchiveError(OperationError):
    """The stream is not a snapshot archive this coordinator accepts; the message is one line."""


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


def _parts(name: str) -> list[str]:
    if not name or name.startswith("/") or "\x00" in name:
        raise ArchiveError(f"refused member {name[:80]!r}: not a relative name")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise ArchiveError(f"refused member {name[:80]!r}: climbs out with '..'")
    return parts


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
    made: set[str] = {str(dest)}
    files = members = total = 0
    current = ""
    view = memoryview(raw)
    try:
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as archive:
            for member in archive:
                members += 1
                current = member.name[:80]
                if members > max_members:
                    raise ArchiveError(f"more than {max_members} members; refused")
                parts = _parts(member.name)
                if not parts:
                    continue
                target = os.path.join(dest, *parts)
                if member.isdir():
                    os.makedirs(target, exist_ok=True)
                    made.add(target)
                    continue
                if not member.isfile():
                    raise ArchiveError(f"refused member {member.name[:80]!r}: only files and folders belong in a snapshot")
                total += member.size
                if total > max_bytes:
                    raise ArchiveError(f"more than {max_bytes // (1024 * 1024)} MiB unpacked; refused")
                folder = os.path.dirname(target)
                if folder not in made:
                    os.makedirs(folder, exist_ok=True)
                    made.add(folder)
                if member.offset_data + member.size > len(raw):
                    raise ArchiveError(f"member {current!r} is cut short")
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
                try:
                    chunk = view[member.offset_data : member.offset_data + member.size]
                    while chunk:
                        chunk = chunk[os.write(fd, chunk) :]
                finally:
                    os.close(fd)
                files += 1
    except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
        if isinstance(exc, FileExistsError):
            raise ArchiveError(f"member {current!r} appears twice; refused") from None
        raise ArchiveError(f"not a readable snapshot stream ({exc.__class__.__name__}: {str(exc)[:120]})") from None
    if not (dest / "snapshot.json").is_file():
        raise ArchiveError("the stream holds no snapshot.json: not a snapshot")
    return files
