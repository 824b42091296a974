"""One bounded extractor behind both doors: a crafted archive is refused for the same reason, in each door's words,
whether it arrives as a fleet node's snapshot stream or as a share bundle, and nothing lands outside or past a limit."""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from rigaudit.tools.files.bounded_tar import Refusal
from rigaudit.tools.remote import tarstream
from rigaudit.tools.remote.tarstream import ArchiveError, extract_snapshot_tar
from rigaudit.tools.share import BundleError, _unpack, unpack_bundle

MANIFEST = b'{"format": "rigaudit.snapshot/1", "hostname": "x"}'
MAX_MEMBERS = 10
MAX_BYTES = 1024 * 1024
Member = tuple[tarfile.TarInfo, bytes | None]


def _file(name: str, data: bytes = b"x") -> Member:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _special(name: str, kind: bytes, linkname: str = "") -> Member:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info, None


def _folder(name: str) -> Member:
    return _special(name, tarfile.DIRTYPE)


def _sparse(name: str, size: int) -> Member:
    """One stored byte that tarfile expands to ``size`` bytes (a PAX GNU sparse 0.1 member)."""
    info, data = _file(name, b"x")
    info.pax_headers = {"GNU.sparse.map": "0,1", "GNU.sparse.realsize": str(size)}
    return info, data


def _pack(members: list[Member], *, cut: int = 0) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    raw = buffer.getvalue()
    return gzip.compress(raw[:cut] if cut else raw, compresslevel=1, mtime=0)


def _cut_inside_the_last_member() -> bytes:
    members = [_file("snapshot.json", MANIFEST), _file("files/big", b"y" * 64 * 1024)]
    whole = gzip.decompress(_pack(members))
    return _pack(members, cut=len(whole) - 32 * 1024)


Door = Callable[[bytes, Path], object]


def _stream_door(data: bytes, dest: Path) -> object:
    return extract_snapshot_tar(data, dest, max_bytes=MAX_BYTES, max_members=MAX_MEMBERS)


def _bundle_door(data: bytes, dest: Path) -> object:
    path = dest.parent / "bundle.tar.gz"
    path.write_bytes(data)
    return unpack_bundle(path, dest, max_bytes=MAX_BYTES, max_members=MAX_MEMBERS)


DOORS = {"snapshot stream": _stream_door, "share bundle": _bundle_door}


def _expected(door: str, why: Refusal, name: str, dest: Path) -> tuple[type[Exception], str]:
    words = tarstream._WORDS if door == "snapshot stream" else _unpack._WORDS
    text = words[why].format(name=name, members=MAX_MEMBERS, mib=MAX_BYTES // (1024 * 1024))
    if door == "snapshot stream":
        return ArchiveError, text
    return BundleError, f"{dest.parent / 'bundle.tar.gz'}: {text}"


CRAFTED: dict[str, tuple[list[Member], Refusal, str]] = {
    "symbolic link": ([_special("files/etc", tarfile.SYMTYPE, "/etc")], Refusal.NOT_REGULAR, "files/etc"),
    "hard link": ([_special("files/hard", tarfile.LNKTYPE, "snapshot.json")], Refusal.NOT_REGULAR, "files/hard"),
    "character device": ([_special("files/zero", tarfile.CHRTYPE)], Refusal.NOT_REGULAR, "files/zero"),
    "block device": ([_special("files/sda", tarfile.BLKTYPE)], Refusal.NOT_REGULAR, "files/sda"),
    "FIFO": ([_special("files/fifo", tarfile.FIFOTYPE)], Refusal.NOT_REGULAR, "files/fifo"),
    "sparse bomb": ([_sparse("files/holes", 64 * MAX_BYTES)], Refusal.NOT_REGULAR, "files/holes"),
    "../ at the start": ([_file("../escape")], Refusal.CLIMBS, "../escape"),
    "../ inside": ([_file("files/../../escape")], Refusal.CLIMBS, "files/../../escape"),
    "absolute name": ([_file("/tmp/escape")], Refusal.NOT_RELATIVE, "/tmp/escape"),
    "huge member count": ([_file(f"files/f{i}") for i in range(3 * MAX_MEMBERS)], Refusal.TOO_MANY, ""),
    "size bomb": ([_file("files/big", bytes(4 * MAX_BYTES))], Refusal.TOO_LARGE, "files/big"),
    "sizes that add up": ([_file(f"files/f{i}", bytes(MAX_BYTES // 3)) for i in range(4)], Refusal.TOO_LARGE, "files/f3"),
    "duplicate name": ([_file("snapshot.json", MANIFEST)], Refusal.TWICE, "snapshot.json"),
    "a file then a folder": ([_file("files/a"), _folder("files/a")], Refusal.TWICE, "files/a"),
    "a folder then a file": ([_folder("files/a"), _file("files/a")], Refusal.TWICE, "files/a"),
    "a file then a file under it": ([_file("files/a"), _file("files/a/b")], Refusal.TWICE, "files/a/b"),
}


def _only_files_and_folders_within(dest: Path, limit: int) -> None:
    total = 0
    for folder, dirs, files in os.walk(dest):
        for name in dirs + files:
            mode = os.lstat(os.path.join(folder, name)).st_mode
            assert stat.S_ISDIR(mode) or stat.S_ISREG(mode), name
        total += sum(os.lstat(os.path.join(folder, name)).st_size for name in files)
    assert total <= limit


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("case", CRAFTED)
def test_a_crafted_archive_is_refused_alike_through_both_doors(tmp_path: Path, door: str, case: str) -> None:
    members, why, name = CRAFTED[case]
    dest = tmp_path / "inner" / "out"
    dest.parent.mkdir()
    error, message = _expected(door, why, name, dest)
    with pytest.raises(error) as caught:
        DOORS[door](_pack([_file("snapshot.json", MANIFEST), *members]), dest)
    assert str(caught.value) == message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inner"] and not Path("/tmp/escape").exists()
    _only_files_and_folders_within(dest, MAX_BYTES)


@pytest.mark.parametrize("door", DOORS)
def test_an_archive_cut_inside_a_member_is_refused_alike(tmp_path: Path, door: str) -> None:
    dest = tmp_path / "out"
    error, message = _expected(door, Refusal.CUT_SHORT, "files/big", dest)
    with pytest.raises(error) as caught:
        DOORS[door](_cut_inside_the_last_member(), dest)
    assert str(caught.value) == message


def test_both_doors_unpack_a_sound_archive_to_the_same_tree(tmp_path: Path) -> None:
    members = [
        _file("snapshot.json", MANIFEST),
        _folder("files/empty"),
        _file("files/proc/cmdline", b"quiet\n"),
        _file("./files/b"),
    ]
    trees = []
    for door, unpack in DOORS.items():
        dest = tmp_path / door.replace(" ", "-") / "out"
        dest.parent.mkdir()
        unpack(_pack(members), dest)
        trees.append(sorted((str(p.relative_to(dest)), p.read_bytes() if p.is_file() else None) for p in dest.rglob("*")))
    assert trees[0] == trees[1]
    assert ("files/proc/cmdline", b"quiet\n") in trees[0] and ("files/empty", None) in trees[0]


def test_every_refusal_has_words_in_both_doors() -> None:
    assert set(tarstream._WORDS) == set(_unpack._WORDS) == set(Refusal)
