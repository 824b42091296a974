"""Unpacking an untrusted tar archive: the one rule for snapshot streams and share bundles.

Only folders and regular files are made (no links, devices, FIFOs or sparse files, whose holes
would be written past any byte count); no absolute name, none with ``..`` or a NUL; at most
``max_members`` members and ``max_bytes`` bytes of file data, counted from the headers before a
byte is written; every file created anew (``O_EXCL | O_NOFOLLOW``), so a name that appears twice,
or as a file and a folder, is refused. Each caller words the refusals and names the error class.
"""

from __future__ import annotations

import enum
import os
import tarfile
from collections.abc import Callable, Mapping
from pathlib import Path

from rigaudit.tools.files.atomic import write_all

_CHUNK = 1024 * 1024
_MIB = 1024 * 1024


class Refusal(enum.Enum):
    """Why a member is refused; a caller's words for each take ``{name}``, ``{members}`` and ``{mib}``."""

    NOT_RELATIVE = "not_relative"
    CLIMBS = "climbs"
    TOO_MANY = "too_many"
    NOT_REGULAR = "not_regular"
    TOO_LARGE = "too_large"
    TWICE = "twice"
    CUT_SHORT = "cut_short"


Words = Mapping[Refusal, str]
"""A caller's message for each refusal, as ``str.format`` templates (``{name!r}``: the member's name, cut to 80)."""


class _Extraction:
    def __init__(self, dest: Path, max_members: int, max_bytes: int, words: Words, error: Callable[[str], Exception]):
        self.dest, self.max_members, self.max_bytes = dest, max_members, max_bytes
        self.words, self.error = words, error
        self.made = {str(dest)}

    def refused(self, why: Refusal, name: str = "") -> Exception:
        text = self.words[why].format(name=name[:80], members=self.max_members, mib=self.max_bytes // _MIB)
        return self.error(text)

    def parts(self, name: str) -> list[str]:
        if not name or name.startswith("/") or "\x00" in name:
            raise self.refused(Refusal.NOT_RELATIVE, name)
        parts = [p for p in name.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise self.refused(Refusal.CLIMBS, name)
        return parts

    def folder(self, path: str, name: str) -> None:
        if path in self.made:
            return
        try:
            os.makedirs(path, exist_ok=True)
        except (FileExistsError, NotADirectoryError):  # a file took the name
            raise self.refused(Refusal.TWICE, name) from None
        self.made.add(path)

    def write(self, archive: tarfile.TarFile, member: tarfile.TarInfo, target: str) -> None:
        source = archive.extractfile(member)
        if source is None:
            raise self.refused(Refusal.NOT_REGULAR, member.name)
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            raise self.refused(Refusal.TWICE, member.name) from None
        try:
            while chunk := source.read(_CHUNK):
                write_all(fd, chunk)
        except tarfile.ReadError:  # the archive ends inside the member's data
            raise self.refused(Refusal.CUT_SHORT, member.name) from None
        finally:
            os.close(fd)


def extract_members(
    archive: tarfile.TarFile,
    dest: Path,
    *,
    max_members: int,
    max_bytes: int,
    words: Words,
    error: Callable[[str], Exception],
) -> int:
    """Unpack ``archive`` into the folder ``dest`` (which exists and is empty); return the number of files.

    A refusal raises ``error(words[why].format(...))``; what the archive's own reading raises
    (``tarfile.TarError``, ``OSError``, ``EOFError``...) passes through for the caller to word.
    """
    run = _Extraction(dest, max_members, max_bytes, words, error)
    members = files = total = 0
    for member in archive:
        members += 1
        if members > max_members:
            raise run.refused(Refusal.TOO_MANY)
        parts = run.parts(member.name)
        if not parts:
            continue
        target = os.path.join(dest, *parts)
        if member.isdir():
            run.folder(target, member.name)
            continue
        if not member.isreg() or member.issparse():
            raise run.refused(Refusal.NOT_REGULAR, member.name)
        total += member.size
        if total > max_bytes:
            raise run.refused(Refusal.TOO_LARGE, member.name)
        run.folder(os.path.dirname(target), member.name)
        run.write(archive, member, target)
        files += 1
    return files


__all__ = ["Refusal", "Words", "extract_members"]
