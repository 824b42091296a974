"""`rigaudit snapshot --share -o bundle.tar.gz` (recording this machine, or --from an existing snapshot)."""

from __future__ import annotations

import json
import tarfile
import tempfile
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.hosts import snapshots as snapshot_command
from rigaudit.tools.hosts.snapshot import SnapshotHost

UUID = "GPU-9a807d56-52cc-4e07-26b2-4b15f3398b9b"


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """A one-GPU snapshot small enough to audit in a blink."""
    root = tmp_path / "tiny"
    (root / "files/etc").mkdir(parents=True)
    (root / "files/proc/sys/kernel").mkdir(parents=True)
    (root / "snapshot.json").write_text(json.dumps({"format": "rigaudit.snapshot/1", "hostname": "gpu-node-7"}))
    (root / "files/etc/hostname").write_text("gpu-node-7\n")
    (root / "files/proc/sys/kernel/osrelease").write_text("6.8.0-45-generic\n")
    nvml = [
        {"fn": "nvmlInit", "args": []},
        {"fn": "nvmlSystemGetDriverVersion", "args": [], "result": "580.95.05"},
        {"fn": "nvmlDeviceGetCount", "args": [], "result": 1},
        {"fn": "nvmlDeviceGetName", "args": [0], "result": "NVIDIA H200"},
        {"fn": "nvmlDeviceGetUUID", "args": [0], "result": UUID},
        {"fn": "nvmlDeviceGetSerial", "args": [0], "result": "1652722001234"},
    ]
    (root / "nvml.jsonl").write_text("".join(json.dumps(r) + "\n" for r in nvml))
    uname = {"argv": ["uname", "-a"], "exit_code": 0, "stdout": "Linux gpu-node-7 6.8.0-45-generic x86_64\n", "stderr": ""}
    (root / "commands.jsonl").write_text(json.dumps(uname) + "\n")
    return root


def _members(bundle: Path) -> dict[str, bytes]:
    with tarfile.open(bundle, "r:gz") as archive:
        return {m.name: archive.extractfile(m).read() for m in archive.getmembers() if m.isfile()}  # type: ignore[union-attr]


def _no_identity(members: dict[str, bytes]) -> None:
    for name, data in members.items():
        for value in (b"gpu-node-7", UUID.encode(), b"1652722001234"):
            assert value not in data and value.decode() not in name, (name, value)


def test_share_from_an_existing_snapshot(tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bundle = tmp_path / "gpu-node-7.tar.gz"
    assert main(["snapshot", "--share", "--from", str(tiny), "-o", str(bundle)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("rigaudit share bundle of host-1") and "gpus:    1 x NVIDIA H200" in out
    assert "problems: " in out and out.rstrip().splitlines()[-1].startswith("share bundle: ") and str(bundle) in out
    members = _members(bundle)
    assert set(members) >= {"host-1/SHARE.md", "host-1/snapshot.json", "host-1/files/etc/hostname", "host-1/nvml.jsonl"}
    assert members["host-1/files/etc/hostname"] == b"host-1\n"
    assert b"GPU-00000000-0000-0000-0000-000000000001" in members["host-1/nvml.jsonl"]
    _no_identity(members)


def test_share_records_this_machine_first(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(snapshot_command, "make_host", lambda: SnapshotHost(tiny))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    bundle = tmp_path / "out" / "bundle.tar.gz"
    assert main(["snapshot", "--share", "-o", str(bundle)]) == 0
    members = _members(bundle)
    assert json.loads(members["bundle/snapshot.json"])["hostname"] == "host-1"
    _no_identity(members)
    assert list(scratch.iterdir()) == []  # the recorded snapshot did not outlive the command
    assert sorted(p.name for p in bundle.parent.iterdir()) == ["bundle.tar.gz"]  # written by rename, nothing left over
    assert "share bundle: " in capsys.readouterr().out


def test_share_usage_errors(tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    existing = tmp_path / "b.tar.gz"
    existing.write_bytes(b"old")
    cases = [
        (["snapshot", "--from", str(tiny), "-o", str(tmp_path / "x.tar.gz")], "--from needs --share"),
        (["snapshot", "--share", "--from", str(tiny), "-o", str(existing)], "exists (use --force"),
        (["snapshot", "--share", "--from", str(tmp_path), "-o", str(tmp_path / "y.tar.gz")], "not a snapshot"),
        (["snapshot", "--share", "--from", str(tiny), "-o", str(tmp_path)], "is a directory"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1, err
    assert existing.read_bytes() == b"old" and not (tmp_path / "x.tar.gz").exists()
    assert main(["snapshot", "--share", "--force", "--from", str(tiny), "-o", str(existing)]) == 0
    assert existing.read_bytes()[:2] == b"\x1f\x8b"
