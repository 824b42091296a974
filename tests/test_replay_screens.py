"""Every command renders from its events: replaying its transcript draws the screen the live run drew.

Each command runs in-process as a person would run it (plain lines: no terminal), recording its
transcript; ``rigaudit replay FILE --no-live`` then draws that transcript. The two screens must be
the same, but for the replay's own header line and the audit's ``transcript: FILE`` footer (neither
is an event). Timings are the recorded ones, so nothing else may differ. The query commands (diff,
checks, policy, schema, transcripts, replay --rediagnose) record only when given ``--transcript``,
and write ``--json`` from the same event they show. ``bench p2p`` and ``bench nccl`` are replayed beside their
own tests (tests/test_bench_p2p.py, tests/test_bench_nccl.py), on their recorded measurement and fake binary.
"""

from __future__ import annotations

import functools
import io
import json
import random
from pathlib import Path
from typing import TypeVar

import anyio
import pytest

from rigaudit.orchestrator.audit.diff import diff_json
from rigaudit.orchestrator.audit.rediagnose import rediagnose_json
from rigaudit.orchestrator.bench.ab import Load, run_ab
from rigaudit.orchestrator.bench.explain import run_profile
from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.fleet.runner import FleetOptions, run_fleet
from rigaudit.orchestrator.options.screen import Screen
from rigaudit.orchestrator.session.core import open_session
from rigaudit.orchestrator.ui.terminal import terminal_for
from rigaudit.tools.bench.fake_server import FakeTiming, fake_server
from rigaudit.tools.hosts.fake_nvml import FakeGpu
from rigaudit.tools.remote.tarstream import snapshot_tar_bytes
from rigaudit.tools.remote.transport import ReplayTransport
from rigaudit.tools.schema.events.diff import DiffReported, RediagnoseFinished
from rigaudit.tools.schema.events.gate import GateReported
from rigaudit.tools.testing.bench_pairs import Session, session_result
from rigaudit.transcripts.reader import read_transcript
from tests.support.bench_ab import ScriptedClock, SpeedClient, make_plan, make_snapshot
from tests.support.profile_load import GpuClient, InLoopHost
from tests.support.replay import live_then_replayed, same, screen

RECORDED = Path(__file__).resolve().parent.parent / "docs" / "validation" / "h200x2"
SMALL = Path(__file__).resolve().parent / "fixtures" / "h200x1-vm"
H200X2 = Path(__file__).resolve().parent / "fixtures" / "transcripts" / "h200x2-audit.jsonl"
E = TypeVar("E", DiffReported, RediagnoseFinished, GateReported)


def test_audit(capsys: pytest.CaptureFixture[str], seed_dir: Path, tmp_path: Path) -> None:
    t = tmp_path / "audit.jsonl"
    argv = ["audit", "--snapshot", str(seed_dir), "--no-live", "--transcript", str(t)]
    live, replayed = live_then_replayed(capsys, lambda: main(argv), t)
    same(live, replayed, expect="plan step(s)")


def test_apply_into_a_copy_then_rollback(capsys: pytest.CaptureFixture[str], seed_dir: Path, tmp_path: Path) -> None:
    copy, journal, t1, t2 = tmp_path / "copy", tmp_path / "j.jsonl", tmp_path / "apply.jsonl", tmp_path / "rollback.jsonl"
    apply = ["apply", "--snapshot", str(seed_dir), "--into", str(copy), "--yes", "--journal", str(journal)]
    live, replayed = live_then_replayed(capsys, lambda: main([*apply, "--no-live", "--transcript", str(t1)]), t1)
    same(live, replayed, expect="undo: rigaudit rollback")
    rollback = ["rollback", str(journal), "--snapshot", str(copy), "--yes", "--no-live", "--transcript", str(t2)]
    live, replayed = live_then_replayed(capsys, lambda: main(rollback), t2)
    same(live, replayed, expect="restored and verified")


def test_bench_compare(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    t = tmp_path / "compare.jsonl"
    argv = ["bench", "compare", str(RECORDED / "inference_base.json"), str(RECORDED / "inference_after.json")]
    live, replayed = live_then_replayed(capsys, lambda: main([*argv, "--transcript", str(t)]), t)
    same(live, replayed, expect="method:")


def test_bench_inference_on_a_fake_server(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    t = tmp_path / "inference.jsonl"
    with fake_server(FakeTiming(ttft_s=0.0, itl_s=0.001)) as server:
        argv = ["bench", "inference", "--base-url", server.base_url, "--model", "m", "--concurrency", "1,2"]
        argv += ["--requests", "4", "--max-tokens", "5", "--yes", "--transcript", str(t)]
        live, replayed = live_then_replayed(capsys, lambda: main(argv), t)
    same(live, replayed, expect="Inference benchmark: m")


def test_roofline(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    t, report = tmp_path / "roofline.jsonl", tmp_path / "system-improve.md"
    argv = ["roofline", "--params-b", "40", "--bytes-per-param", "1.16", "--gpus", "8", "--gpu-model", "RTX PRO 6000"]
    argv += ["--measured-tok-s", "10.34", "--layers", "78", "--interconnect", "pcie", "--transcript", str(t)]
    live, replayed = live_then_replayed(capsys, lambda: main(argv), t)
    same(live, replayed, expect="tok/s")
    assert any("█" in line for line in live)  # the bar of measured against the bound
    assert main([*argv[:-2], "--report", str(report), "--json", "-", "--no-transcript"]) == 0
    shown = capsys.readouterr()
    assert json.loads(shown.out)["schema"] == "rigaudit.roofline/1" and f"report written: {report}" in shown.err
    assert "Decode roofline" in report.read_text()


def test_snapshot_share(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    t = tmp_path / "share.jsonl"
    argv = ["snapshot", "--share", "--from", str(SMALL), "-o", str(tmp_path / "b.tar.gz"), "--transcript", str(t)]
    live, replayed = live_then_replayed(capsys, lambda: main(argv), t)
    same(live, replayed, expect="share bundle: ")


def test_snapshot(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rigaudit.tools.hosts.snapshot import SnapshotHost

    monkeypatch.setattr("rigaudit.orchestrator.hosts.snapshots.make_host", lambda: SnapshotHost(SMALL))
    t = tmp_path / "snapshot.jsonl"
    argv = ["snapshot", "-o", str(tmp_path / "snap"), "--transcript", str(t)]
    capsys.readouterr()
    assert main(argv) == 0
    live = capsys.readouterr()
    assert main(["replay", str(t), "--no-live"]) == 0
    replayed = screen(capsys.readouterr().out)
    assert replayed == screen(live.out) and replayed[-1].startswith("snapshot: ") and "NVML calls" in replayed[-1]


def test_chat_without_an_llm(
    capsys: pytest.CaptureFixture[str], seed_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = tmp_path / "chat.jsonl"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO("/audit\n/plan\n/why pcie.mrrs\n/report\n"))
    argv = ["chat", "--snapshot", str(seed_dir), "--yes", "--no-live", "--transcript", str(t)]
    live, replayed = live_then_replayed(capsys, lambda: main(argv), t)
    same(live, replayed, expect="pcie.mrrs [problem medium]")


def test_fleet(capsys: pytest.CaptureFixture[str], seed_dir: Path, tmp_path: Path) -> None:
    archive = tmp_path / "a.tar.gz"
    archive.write_bytes(snapshot_tar_bytes(seed_dir))
    (tmp_path / "junk.tar.gz").write_bytes(b"not a snapshot stream\n")
    archives = {"a": archive, "b": archive, "junk": tmp_path / "junk.tar.gz"}
    t = tmp_path / "fleet.jsonl"

    def run() -> int:
        with open_session("audit", consumers=[terminal_for(Screen(no_live=True))], transcript=t) as session:
            anyio.run(lambda: run_fleet(["a", "b", "junk"], ReplayTransport(archives), FleetOptions(workers=0), session.emit))
        return 0

    live, replayed = live_then_replayed(capsys, run, t)
    same(live, replayed, expect="host(s) audited")
    kinds = {e.type for e in read_transcript(t).events}
    assert {"fleet_started", "host_collected", "host_audited", "host_failed", "fleet_finished"} <= kinds


def test_rollback_warnings_reach_its_transcript(capsys: pytest.CaptureFixture[str], seed_dir: Path, tmp_path: Path) -> None:
    copy, journal = tmp_path / "copy", tmp_path / "j.jsonl"
    assert main(["apply", "--snapshot", str(seed_dir), "--into", str(copy), "--yes", "--journal", str(journal)]) == 0
    with journal.open("a") as handle:
        handle.write('{"torn": \n')  # a crash mid-line: the journal still rolls back, with a warning
    t = tmp_path / "rollback.jsonl"
    assert main(["rollback", str(journal), "--snapshot", str(copy), "--yes", "--no-live", "--transcript", str(t)]) == 0
    warnings = [json.loads(line) for line in t.read_text().splitlines()[1:] if '"type":"warning"' in line]
    assert any("damaged line" in w["text"] for w in warnings)
    capsys.readouterr()


def _recorded(transcript: Path, kind: type[E]) -> E:
    return next(e for e in read_transcript(transcript).events if isinstance(e, kind))


def _changed_h200x2(tmp_path: Path) -> Path:
    """The H200 recording with NUMA balancing read as on (its value and its finding): a diff of both kinds."""
    lines = []
    for line in H200X2.read_text().splitlines():
        data = json.loads(line)
        if data.get("target") == "/proc/sys/kernel/numa_balancing":
            data["result"] = {"data_b64": "MQo="}
        findings = [data["finding"]] if data.get("type") == "finding" else data.get("result", {}).get("findings", [])
        for finding in findings:
            if isinstance(finding, dict) and finding.get("check") == "numa.balancing":
                finding.update(status="problem", severity="medium", observed="numa_balancing=1")
        lines.append(json.dumps(data))
    path = tmp_path / "changed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_diff(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    t, out = tmp_path / "diff.jsonl", tmp_path / "diff.json"
    argv = ["diff", str(H200X2), str(_changed_h200x2(tmp_path)), "--values", "--json", str(out), "--transcript", str(t)]
    live, replayed = live_then_replayed(capsys, lambda: main(argv), t)
    same(live, replayed, expect="Values read that differ")
    assert any("Findings that changed" in line for line in live) and live[-1].startswith("different: ")
    assert json.loads(out.read_text()) == diff_json(_recorded(t, DiffReported))


@pytest.mark.parametrize("form", [[], ["--json"], ["--markdown"]], ids=["table", "json", "markdown"])
def test_checks(capsys: pytest.CaptureFixture[str], tmp_path: Path, form: list[str]) -> None:
    t = tmp_path / "checks.jsonl"
    live, replayed = live_then_replayed(capsys, lambda: main(["checks", *form, "--transcript", str(t)]), t)
    same(live, replayed, expect="nvlink.links")


def test_a_query_records_only_when_asked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for argv in (["checks"], ["policy", "list"], ["schema"], ["transcripts", "path"]):
        assert main(argv) == 0
    assert not (tmp_path / "state").exists()
    capsys.readouterr()


def test_policy(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    t = tmp_path / "policy.jsonl"
    live, replayed = live_then_replayed(capsys, lambda: main(["policy", "list", "--transcript", str(t)]), t)
    same(live, replayed, expect="nvidia-smi-state")
    argv = ["policy", "check", "--transcript", str(t), "nvidia-smi -pm 1"]
    live, replayed = live_then_replayed(capsys, lambda: main(argv), t)
    assert replayed == live and len(live) == 1 and live[0].startswith("deny ")


def test_schema(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    t = tmp_path / "schema.jsonl"
    live, replayed = live_then_replayed(capsys, lambda: main(["schema", "--transcript", str(t)]), t)
    same(live, replayed, expect='"title": "AuditResult"')
    assert json.loads("\n".join(live))["title"] == "AuditResult"


def test_transcripts(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    t = tmp_path / "transcripts.jsonl"
    show = ["transcripts", "show", str(H200X2), "--events", "--transcript", str(t)]
    live, replayed = live_then_replayed(capsys, lambda: main(show), t)
    same(live, replayed, expect="session:   audit of vm")
    stored = tmp_path / "stored"
    stored.mkdir()
    for name in ("a", "b", "c"):
        (stored / f"2026010{len(name)}-000000-audit-{name}.jsonl").write_bytes(H200X2.read_bytes())
    live, replayed = live_then_replayed(
        capsys, lambda: main(["transcripts", "list", "--dir", str(stored), "--transcript", str(t)]), t
    )
    same(live, replayed, expect="(3 in ")
    live, replayed = live_then_replayed(capsys, lambda: main(["transcripts", "path", "--transcript", str(t)]), t)
    assert replayed == live == [str(tmp_path / "state" / "rigaudit" / "transcripts")]


def test_replay_rediagnose(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    t, out = tmp_path / "rediagnose.jsonl", tmp_path / "changes.json"
    argv = ["replay", str(H200X2), "--rediagnose", "--json", str(out), "--transcript", str(t)]
    live, replayed = live_then_replayed(capsys, lambda: main(argv), t)
    same(live, replayed, expect="change(s) between the 45 recorded findings")
    assert live[0].startswith(f"Re-diagnosing {H200X2}: audit of vm, recorded ")
    assert json.loads(out.read_text()) == rediagnose_json(_recorded(t, RediagnoseFinished))


@pytest.mark.parametrize("form", [[], ["--verbose"], ["--only", "pcie,gpu.xid", "--fail-on", "critical"]], ids=str)
def test_check(capsys: pytest.CaptureFixture[str], seed_dir: Path, tmp_path: Path, form: list[str]) -> None:
    t = tmp_path / "check.jsonl"
    argv = ["check", "--snapshot", str(seed_dir), *form, "--transcript", str(t)]
    live, replayed = live_then_replayed(capsys, lambda: main(argv), t)
    assert live[-1].startswith("rigaudit check: ") and "; exit " in live[-1]  # the gate's summary, not the audit's
    assert replayed == live and len(live) >= 2
    recorded = _recorded(t, GateReported)
    assert recorded.result.reason == live[0] and f"exit {recorded.result.exit_code}" in live[-1]
    assert not any("plan step(s)" in line for line in replayed)  # no audit screen drawn for a gate


def test_check_quiet_replays_its_one_line(capsys: pytest.CaptureFixture[str], seed_dir: Path, tmp_path: Path) -> None:
    t = tmp_path / "check.jsonl"
    argv = ["check", "--snapshot", str(seed_dir), "-q", "--transcript", str(t)]
    live, replayed = live_then_replayed(capsys, lambda: main(argv), t)
    assert replayed == live and len(live) == 1 and live[0] == _recorded(t, GateReported).result.reason


def test_bench_ab(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr("rigaudit.orchestrator.change.approval.is_interactive", lambda: False)
    make_snapshot(tmp_path / "src")
    make_plan(tmp_path / "plan.json")
    client = SpeedClient(tmp_path / "copy")  # the load on a scripted client and clock: the same figures on any machine
    monkeypatch.setattr(
        "rigaudit.orchestrator.bench.ab.run_ab", functools.partial(run_ab, load=Load(client.connect, client.clock))
    )
    t = tmp_path / "ab.jsonl"
    argv = ["bench", "ab", "--plan", str(tmp_path / "plan.json"), "--only", "vm.swappiness", "--snapshot", str(tmp_path / "src")]
    argv += ["--into", str(tmp_path / "copy"), "--base-url", "http://127.0.0.1:9", "--model", "m", "--concurrency", "1"]
    argv += ["--requests", "3", "--max-tokens", "8", "--warmup", "1", "--cycles", "2", "--journal", str(tmp_path / "j.jsonl")]
    live, replayed = live_then_replayed(capsys, lambda: main([*argv, "--yes", "--no-live", "--transcript", str(t)]), t)
    same(live, replayed, expect="vm.swappiness")


def test_bench_calibrate(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    rng = random.Random(7)
    runs = []
    for index in range(5):  # five sessions of one workload on one host, as `bench inference` writes them
        path = tmp_path / f"run{index}.json"
        path.write_text(session_result(rng, Session(drift=0.065, session_cv=0.06, levels=(1, 4)), 5, 1.0).to_json())
        runs.append(str(path))
    t = tmp_path / "calibrate.jsonl"
    argv = ["bench", "calibrate", *runs, "--json", str(tmp_path / "cal.json"), "--no-live", "--transcript", str(t)]
    live, replayed = live_then_replayed(capsys, lambda: main(argv), t)
    same(live, replayed, expect="session CV")


def test_profile_then_explain(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = ScriptedClock()  # the load, the fake GPU and the sampler on one scripted clock: the same split on any machine
    serving = FakeGpu(pids=[1], clock=clock)
    client = GpuClient(serving, 0.010, 0.010, 0.004, clock)
    seam = functools.partial(run_profile, open_host=lambda: InLoopHost([FakeGpu(clock=clock), serving]), load=client.load())
    monkeypatch.setattr("rigaudit.orchestrator.bench.explain.run_profile", seam)
    out, t = tmp_path / "profile.json", tmp_path / "profile.jsonl"
    argv = ["bench", "inference", "--base-url", "http://127.0.0.1:9", "--model", "m", "--concurrency", "1", "--requests", "4"]
    argv += ["--max-tokens", "16", "--prompt-tokens", "8", "--warmup", "1", "--profile", "--profile-interval-ms", "20"]
    argv += ["--params-b", "0.15", "--bytes-per-param", "2", "--bandwidth-gbs", "100", "--yes", "--json", str(out)]
    live, replayed = live_then_replayed(capsys, lambda: main([*argv, "--no-live", "--transcript", str(t)]), t)
    same(live, replayed, expect="where the time of a token goes")
    t = tmp_path / "explain.jsonl"
    again = ["explain", str(out), "--bandwidth-gbs", "200", "--no-live", "--transcript", str(t)]
    live, replayed = live_then_replayed(capsys, lambda: main(again), t)
    same(live, replayed, expect="streaming")
