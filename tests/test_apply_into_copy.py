"""`apply --snapshot SRC --into DST`: the copy is built beside DST and renamed into place, never through a link."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.hosts import snapshot_copy
from rigaudit.tools.hosts.snapshot import SnapshotError
from rigaudit.tools.hosts.snapshot_copy import copy_snapshot
from tests.conftest import FIXTURES

SMALL = FIXTURES / "h200x1-vm"


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_copy_is_whole_and_writable(tmp_path: Path) -> None:
    copy_snapshot(SMALL, tmp_path / "copy")
    assert _files(tmp_path / "copy") == _files(SMALL)
    assert all(os.access(p, os.W_OK) for p in (tmp_path / "copy").rglob("*"))
    assert [p.name for p in tmp_path.iterdir()] == ["copy"]  # nothing left beside it


def test_an_interrupted_copy_leaves_no_partial_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[str] = []
    real = snapshot_copy._write

    def interrupted(path: str, data: bytes) -> None:
        assert not (tmp_path / "copy").exists()  # while copying, DST does not exist: a kill leaves none
        written.append(path)
        if len(written) == 20:
            raise KeyboardInterrupt
        real(path, data)

    monkeypatch.setattr(snapshot_copy, "_write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        copy_snapshot(SMALL, tmp_path / "copy")
    assert list(tmp_path.iterdir()) == []


def test_a_link_in_the_source_is_refused_and_nothing_is_copied(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "src"
    shutil.copytree(SMALL, src)
    (tmp_path / "secret").write_text("outside\n")
    (src / "files" / "proc" / "cmdline").unlink()
    (src / "files" / "proc" / "cmdline").symlink_to(tmp_path / "secret")
    with pytest.raises(SnapshotError, match="only folders and regular files"):
        copy_snapshot(src, tmp_path / "copy")
    code = main(["apply", "--snapshot", str(src), "--into", str(tmp_path / "copy"), "--yes", "--no-transcript"])
    assert code == 2 and not (tmp_path / "copy").exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "only folders and regular files" in err[-1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret", "src"]


def test_an_empty_target_folder_is_replaced_a_full_one_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "copy").mkdir()
    copy_snapshot(SMALL, tmp_path / "copy")
    assert (tmp_path / "copy" / "snapshot.json").is_file()
    code = main(["apply", "--snapshot", str(SMALL), "--into", str(tmp_path / "copy"), "--yes", "--no-transcript"])
    assert code == 2 and "not empty" in capsys.readouterr().err
