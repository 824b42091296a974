"""A share bundle of a busy machine keeps the servers' and GPU users' processes whole and only a count of the rest.

Issue 35, item 5: a bundle held the command line and environment of every process of the machine. The host is
the HGX H100 archetype (vLLM at TP 8: a server and seven spawned GPU workers) with 150 other processes, each with
a planted secret and a user name in its command line and environment.
"""

from __future__ import annotations

import json
import posixpath
from pathlib import Path

import anyio
import pytest

from rigaudit.orchestrator.audit.diff import load_side
from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.finding import Finding
from rigaudit.tools.share import share_bundle
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.cache import snapshot
from tests.test_share import members

OTHERS = 150


def _verdicts(findings: tuple[Finding, ...]) -> set[tuple[str, str, str | None]]:
    return {(f.check, f.status, f.severity) for f in findings}


def _pids(root: Path, name: str) -> set[int]:
    return {int(p.parent.name) for p in (root / "files/proc").glob(f"*/{name}") if p.parent.name.isdigit()}


@pytest.fixture(scope="module")
def busy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes], Path]:
    folder = tmp_path_factory.mktemp("busy")
    source = snapshot(faults.busy_machine(ARCHETYPES["hgx-h100-jammy"], OTHERS))  # the session's: read only
    share_bundle(source, folder / "bundle.tar.gz")
    return source, members(folder / "bundle.tar.gz"), folder


def test_only_servers_gpu_processes_and_pid_1_keep_command_line_and_environment(
    busy: tuple[Path, dict[str, bytes], Path],
) -> None:
    source, out, _ = busy
    nvml = [json.loads(line) for line in (source / "nvml.jsonl").read_text().splitlines()]
    on_gpu = {p["pid"] for r in nvml if r["fn"] == "nvmlDeviceGetComputeRunningProcesses" for p in r.get("result") or ()}
    assert len(on_gpu) == 8
    server = {p for p in _pids(source, "cmdline") if b"vllm" in (source / f"files/proc/{p}/cmdline").read_bytes()}
    kept = on_gpu | server | {1}
    others = _pids(source, "cmdline") - kept
    assert len(others) >= OTHERS
    for pid in kept:  # whole: redacted and scrubbed as every file, nothing cut
        assert out[f"files/proc/{pid}/cmdline"].count(b"\x00") == (source / f"files/proc/{pid}/cmdline").read_bytes().count(
            b"\x00"
        )
        assert f"files/proc/{pid}/environ" in out
    for pid in others:  # the program's base name alone (kernel threads: empty), no environment
        first = (source / f"files/proc/{pid}/cmdline").read_bytes().split(b"\x00")[0].split()
        assert out[f"files/proc/{pid}/cmdline"] == (posixpath.basename(first[0]) + b"\x00" if first else b"")
        assert f"files/proc/{pid}/environ" not in out
    assert out["files/proc/20002/cmdline"] == b"python3\x00"  # /usr/bin/python3 /home/alice/train.py --secret ...
    assert out["files/proc/20001/cmdline"] == b"tmux\x00"
    shared = json.loads(out["snapshot.json"])["shared"]["processes"]
    assert shared == {"kept": len(kept), "program_name_only": len(others), "environments_left_out": len(others)}
    assert f"{len(others)} others keep only their program's name" in out["SHARE.md"].decode()


def test_no_planted_value_of_the_other_processes_is_in_the_bundle(busy: tuple[Path, dict[str, bytes], Path]) -> None:
    _, out, _ = busy
    for value in (faults.BUSY_SECRET, "corp-set", "nas.corp", "alice-exp", "/var/lib/postgresql"):
        assert [name for name, data in out.items() if value.encode() in data] == [], value


def test_the_bundle_of_the_busy_machine_audits_to_the_same_findings(busy: tuple[Path, dict[str, bytes], Path]) -> None:
    source, _, folder = busy
    original = anyio.run(lambda: run_audit(SnapshotHost(source)))
    side = anyio.run(lambda: load_side(folder / "bundle.tar.gz", values=False, scratch=folder / "side"))
    assert len(side.findings) == len(original.findings) > 0
    assert _verdicts(side.findings) == _verdicts(original.findings)
