"""A share bundle is untrusted input: unpacking is streamed and bounded, only files and folders, nothing outside."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.share import BundleError, share_bundle, unpack_bundle
from tests.conftest import FIXTURES
from tests.support.archives import gzip_bomb

SMALL = FIXTURES / "h200x1-vm"


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return gzip.compress(buffer.getvalue())


def _file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _special(name: str, kind: bytes, linkname: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info, None


MANIFEST = b'{"format": "rigaudit.snapshot/1", "hostname": "x"}'


def test_a_real_bundle_unpacks(tmp_path: Path) -> None:
    share_bundle(SMALL, tmp_path / "b.tar.gz")
    snapshot = unpack_bundle(tmp_path / "b.tar.gz", tmp_path / "out")
    assert (snapshot / "snapshot.json").is_file() and (snapshot / "files").is_dir()


def test_a_gzip_bomb_stops_at_the_limit(tmp_path: Path) -> None:
    gzip_bomb(tmp_path / "bomb.tar.gz", 64 * 1024 * 1024)
    assert (tmp_path / "bomb.tar.gz").stat().st_size < 1024 * 1024
    with pytest.raises(BundleError, match="more than 8 MiB"):
        unpack_bundle(tmp_path / "bomb.tar.gz", tmp_path / "out", max_bytes=8 * 1024 * 1024)
    written = sum(p.stat().st_size for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert written <= 8 * 1024 * 1024


def test_diff_of_a_gzip_bomb_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("rigaudit.tools.share._unpack.MAX_BUNDLE_BYTES", 8 * 1024 * 1024)  # 256 MiB by default
    gzip_bomb(tmp_path / "bomb.tar.gz", 12 * 1024 * 1024)
    assert main(["diff", str(tmp_path / "bomb.tar.gz"), str(SMALL)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "MiB" in err[0] and "Traceback" not in err[0]


@pytest.mark.parametrize(
    ("member", "reason"),
    [
        (_special("snap/files/etc/passwd", tarfile.SYMTYPE, "/etc/passwd"), "not a regular file"),
        (_special("snap/files/link", tarfile.LNKTYPE, "snap/snapshot.json"), "not a regular file"),
        (_special("snap/files/zero", tarfile.CHRTYPE), "not a regular file"),
        (_special("snap/files/fifo", tarfile.FIFOTYPE), "not a regular file"),
        (_file("/etc/evil", b"x"), "not a relative name"),
        (_file("snap/../../evil", b"x"), "climbs out"),
        (_file("snap/snapshot.json", MANIFEST), "appears twice"),
    ],
)
def test_crafted_members_are_refused(
    tmp_path: Path, member: tuple[tarfile.TarInfo, bytes | None], reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = tmp_path / "b.tar.gz"
    bundle.write_bytes(_tar([_file("snap/snapshot.json", MANIFEST), member]))
    assert main(["diff", str(bundle), str(SMALL)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and reason in err[0]
    assert not (tmp_path / "evil").exists() and not Path("/etc/evil").exists()


def test_too_many_members(tmp_path: Path) -> None:
    bundle = tmp_path / "b.tar.gz"
    bundle.write_bytes(_tar([_file(f"snap/files/f{i}", b"") for i in range(20)]))
    with pytest.raises(BundleError, match="more than 10 members"):
        unpack_bundle(bundle, tmp_path / "out", max_members=10)


@pytest.mark.parametrize(
    "data",
    [b"\x1f\x8b\x08\x00garbage", gzip.compress(b"not a tar" * 100, mtime=0)[:-20], b"\x1f\x8b"],
    ids=["garbage after the magic", "truncated", "magic alone"],  # the same ids in every process (pytest-xdist)
)
def test_damaged_bundles_are_one_line(tmp_path: Path, data: bytes, capsys: pytest.CaptureFixture[str]) -> None:
    bundle = tmp_path / "b.tar.gz"
    bundle.write_bytes(data)
    assert main(["diff", str(bundle), str(SMALL)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0]
