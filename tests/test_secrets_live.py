"""A live recording: `rigaudit snapshot` through RecordingHost over this machine's own host code, rooted
in a temporary folder that stands for ``/`` (a serving process with the corpus in its environment
and arguments, configs and logs that hold more). Nothing planted reaches the snapshot; what the
checks read is still there, and still found."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.orchestrator.hosts import snapshots as snapshot_command
from rigaudit.tools.hosts.base import CommandResult, DirResult, FileResult
from rigaudit.tools.hosts.local import LocalHost
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.redact import REDACTED
from tests.support.secrets_corpus import DOMAIN, Planted, _server_argv, _server_environment


class RootedHost(LocalHost):
    """LocalHost's file reading over ``root`` (standing for /); commands answer from ``outputs``."""

    def __init__(self, root: Path, outputs: dict[tuple[str, ...], str]) -> None:
        super().__init__()
        self.root = root
        self.outputs = outputs

    @property
    def name(self) -> str:
        return f"gpu-node-9.{DOMAIN}"

    def _at(self, path: str) -> str:
        return str(self.root) + path

    async def read(self, path: str) -> FileResult:
        result = await super().read(self._at(path))
        return FileResult(path, result.data, result.error)

    async def list_dir(self, path: str) -> DirResult:
        result = await super().list_dir(self._at(path))
        return DirResult(path, result.entries, result.error)

    async def readlink(self, path: str) -> str | None:
        return await super().readlink(self._at(path))

    async def exists(self, path: str) -> bool:
        return await super().exists(self._at(path))

    async def run(self, argv: Sequence[str], *, timeout_s: float = 10.0) -> CommandResult:
        if tuple(argv) in self.outputs:
            return CommandResult(tuple(argv), 0, self.outputs[tuple(argv)], "", 0.01)
        return CommandResult(tuple(argv), error="not_found")


def _root(tmp_path: Path) -> tuple[Path, Planted, dict[tuple[str, ...], str]]:
    planted = Planted()
    root = tmp_path / "root"
    env, argv = _server_environment(planted), _server_argv(planted)
    pid = root / "proc" / str(planted.pid)
    pid.mkdir(parents=True)
    (pid / "comm").write_text("python3\n")
    (pid / "cmdline").write_bytes(b"".join(a.encode() + b"\x00" for a in argv))
    (pid / "environ").write_bytes(b"".join(f"{k}={v}".encode() + b"\x00" for k, v in env.items()))
    (pid / "stat").write_text(f"{planted.pid} (python3) S 1 {planted.pid} {planted.pid} 0 -1\n")
    (pid / "cgroup").write_text("0::/system.slice/sglang.service\n")
    (root / "proc/1").mkdir()
    password = planted.add("PID 1 environment", "Zq8vT3mW1pLx", "env")
    (root / "proc/1/environ").write_bytes(f"container=lxc\0DB_PASSWORD={password}\0".encode())
    (root / "etc").mkdir()
    (root / "etc/hostname").write_text("gpu-node-9\n")
    token = planted.add("nccl.conf", "hf_" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF", "file")
    (root / "etc/nccl.conf").write_text(f"NCCL_IB_DISABLE=0\n# HF_TOKEN={token}\n")
    bearer = planted.add("dmesg Bearer", "Yx7Wv5Ut3Sr1Qp9On7Ml5Kj3Ih1Gf", "log")
    outputs = {("dmesg",): f"[ 3.0] app: retry with Authorization: Bearer {bearer}\n"}
    return root, planted, outputs


def test_a_live_recording_keeps_no_secret_and_every_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, planted, outputs = _root(tmp_path)
    snapshot = tmp_path / "snap"
    monkeypatch.setattr(snapshot_command, "make_host", lambda: RootedHost(root, outputs))
    recorded = anyio.run(lambda: snapshot_command.record_snapshot(snapshot, concurrency=4))
    assert recorded.summary.files > 0
    written = b"\n".join(p.read_bytes() for p in snapshot.rglob("*") if p.is_file())
    assert [s.name for s in planted.secrets if s.value.encode() in written] == []
    environ = (snapshot / f"files/proc/{planted.pid}/environ").read_bytes().split(b"\x00")
    assert b"NCCL_P2P_DISABLE=1" in environ and b"OPENAI_API_KEY=" + REDACTED.encode() in environ
    cmdline = (snapshot / f"files/proc/{planted.pid}/cmdline").read_bytes().split(b"\x00")
    assert cmdline[:4] == [b"python3", b"-m", b"sglang.launch_server", b"--model-path"]
    assert cmdline[cmdline.index(b"--api-key") + 1] == REDACTED.encode() and b"--tp" in cmdline
    assert (snapshot / "files/etc/nccl.conf").read_text() == f"NCCL_IB_DISABLE=0\n# HF_TOKEN={REDACTED}\n"
    dmesg = [json.loads(line) for line in (snapshot / "commands.jsonl").read_text().splitlines()]
    assert any(r["argv"] == ["dmesg"] and f"Bearer {REDACTED}" in r["stdout"] for r in dmesg)
    result = anyio.run(lambda: run_audit(SnapshotHost(snapshot)))
    finding = next(f for f in result.findings if f.check == "nccl.env")
    assert "NCCL_P2P_DISABLE=1 is harmless here (0 GPU(s) on this host" in finding.observed  # read, and judged
    assert f"in environment of pid {planted.pid}" in finding.observed
