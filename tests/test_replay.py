"""`rigaudit replay` / `transcripts`: an audit of the seed recorded, replayed, re-diagnosed; bad files."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.diffing import diff_findings
from rigaudit.tools.schema.events.audit import InvestigatorActivity, SnapshotReads, ToolCall
from rigaudit.tools.schema.events.session import SessionEnded, SessionStarted, Warning_
from rigaudit.tools.schema.events.union import Event
from rigaudit.tools.schema.finding import Finding
from rigaudit.transcripts.reader import read_transcript
from rigaudit.transcripts.replay import replay_events
from rigaudit.transcripts.segments import audit_segments
from rigaudit.transcripts.store import default_transcript_path, find_transcript, inspect_transcript, list_transcripts
from rigaudit.transcripts.writer import TranscriptWriter

SEED = Path(__file__).parent / "fixtures" / "seed-lxc-8x-rtxpro6000"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`rigaudit audit --snapshot SEED --transcript FILE`, run once for the module."""
    path = tmp_path_factory.mktemp("rec") / "audit.jsonl"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
        assert main(["audit", "--snapshot", str(SEED), "--transcript", str(path), "--no-live"]) == 0
    return path


def _mutated(recorded: Path, tmp_path: Path, check: str, **changes: object) -> Path:
    """A copy of the recording whose findings for ``check`` say something else."""
    out = []
    for line in recorded.read_text().splitlines():
        data = json.loads(line)
        if data.get("type") == "finding" and data["finding"]["check"] == check:
            data["finding"].update(changes)
        elif data.get("type") == "audit_finished":
            for finding in data["result"].get("findings", ()):  # it refers to the findings recorded before it
                if finding["check"] == check:
                    finding.update(changes)
        out.append(json.dumps(data))
    path = tmp_path / "mutated.jsonl"
    path.write_text("\n".join(out) + "\n")
    return path


def test_replay_shows_the_recorded_audit(recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    transcript = read_transcript(recorded)
    assert transcript.warnings == [] and transcript.session is not None and transcript.ended is not None
    ops = {e.op for e in transcript.events if isinstance(e, ToolCall)}
    ops |= {read[0] for e in transcript.events if isinstance(e, SnapshotReads) for read in e.reads}
    assert ops >= {"read", "list_dir", "readlink", "nvml"}
    assert main(["replay", str(recorded), "--no-live"]) == 0
    out = capsys.readouterr().out
    assert "rigaudit audit: pve-gpu01" in out
    for check in ("numa.balancing", "pcie.mrrs", "power.cstates"):
        assert check in out
    assert f"{len(transcript.audit.result.findings) if transcript.audit else -1} checks, 4 problem(s)" in out


def test_rediagnose_of_the_seed_audit_is_identical(recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_json = tmp_path / "rediag.json"
    assert main(["replay", str(recorded), "--rediagnose", "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "No change: today's investigators reach the same" in out
    payload = json.loads(out_json.read_text())
    assert payload["identical"] is True and payload["changes"] == [] and payload["rebuild"]["mismatches"] == []
    assert payload["recorded"] == payload["current"] > 20


def test_rediagnose_reports_what_changed(recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _mutated(recorded, tmp_path, "numa.balancing", status="ok", severity=None, fix=None)
    out_json = tmp_path / "rediag.json"
    assert main(["replay", str(path), "--rediagnose", "--json", str(out_json)]) == 1
    out = capsys.readouterr().out
    assert "1 change(s)" in out and "appeared" in out and "numa.balancing" in out and "ok -> problem (medium)" in out
    change = json.loads(out_json.read_text())["changes"][0]
    assert (change["kind"], change["check"], change["a"]["status"], change["b"]["status"]) == (
        "appeared",
        "numa.balancing",
        "ok",
        "problem",
    )


def test_truncated_transcript_replays_its_prefix_with_a_warning(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = recorded.read_bytes()
    cut = tmp_path / "crashed.jsonl"
    cut.write_bytes(raw[: raw.rindex(b'"type":"audit_finished"') + 300])
    assert main(["replay", str(cut), "--no-live"]) == 0
    captured = capsys.readouterr()
    assert "rigaudit audit: pve-gpu01" in captured.out
    assert "last line is cut short" in captured.err


@pytest.mark.parametrize("content", [b"not a transcript\n", b"", b"\x00\x01\x02garbage"])
def test_garbage_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes) -> None:
    path = tmp_path / "junk.jsonl"
    path.write_bytes(content)
    for argv in (["replay", str(path)], ["replay", str(path), "--rediagnose"], ["transcripts", "show", str(path)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("rigaudit: ") and str(path) in err


def test_replay_paces_events_by_their_recorded_times() -> None:
    events: list[Event] = [
        SessionStarted(t=100.0, command="audit"),
        InvestigatorActivity(t=100.5, area="numa", ref="file:/a"),
        InvestigatorActivity(t=100.501, area="numa", ref="file:/b"),
        Warning_(t=160.0, text="a long pause"),
        SessionEnded(t=161.0),
    ]
    now = [0.0]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(round(seconds, 3))
        now[0] += seconds

    seen: list[Event] = []
    stats = replay_events(events, seen.append, speed=2.0, max_gap_s=3.0, clock=lambda: now[0], sleep=sleep)
    assert seen == events and stats.events == 5
    assert sleeps == pytest.approx(
        [0.25, 1.5, 0.5], abs=0.002
    )  # 0.5 s / 2; the 1 ms gap folds into the next; 59.5 s capped at 3 s, / 2
    assert replay_events(events, seen.append, speed=0, sleep=sleep).slept_s == 0.0


def test_events_stepping_back_in_time_are_never_slept_again() -> None:
    """A crafted transcript whose times go back and forth replays in its recorded span, not once per step."""
    events: list[Event] = [SessionStarted(t=100.0, command="audit")]
    for _ in range(1000):
        events += [InvestigatorActivity(t=101.0, area="numa", ref="file:/a"), Warning_(t=100.0, text="back")]
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    stats = replay_events(events, lambda event: None, speed=1.0, clock=lambda: now[0], sleep=sleep)
    assert stats.events == 2001 and stats.slept_s == pytest.approx(1.0, abs=0.01)


def test_compare_findings_names_each_kind_of_change() -> None:
    def f(check: str, status: str, severity: str | None = None, observed: str = "") -> Finding:
        return Finding(check=check, area="numa", status=status, severity=severity, title=check, observed=observed)  # type: ignore[arg-type]

    before = [
        f("a", "ok"),
        f("b", "problem", "high"),
        f("c", "unknown"),
        f("d", "problem", "low"),
        f("e", "ok", observed="1"),
        f("g", "ok"),
    ]
    after = [
        f("a", "problem", "medium"),
        f("b", "ok"),
        f("c", "not_applicable"),
        f("d", "problem", "high"),
        f("e", "ok", observed="2"),
        f("h", "ok"),
    ]
    kinds = {c.check: c.kind for c in diff_findings(before, after).changes}
    assert kinds == {
        "a": "appeared",
        "b": "resolved",
        "c": "status",
        "d": "severity",
        "e": "observed",
        "g": "only_a",
        "h": "only_b",
    }
    assert diff_findings(before, before).changes == ()


def test_apply_sessions_split_into_audits(recorded: Path) -> None:
    events = read_transcript(recorded).events
    assert len(audit_segments(events)) == 1
    assert len(audit_segments(events + events[1:])) == 2


def test_store_lists_newest_first_without_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    older = default_transcript_path("audit", now=datetime(2026, 1, 1, 10, 0, 0))
    newer = default_transcript_path("bench", now=datetime(2026, 1, 2, 10, 0, 0))
    assert older.parent == tmp_path / "state" / "rigaudit" / "transcripts"
    assert older.name.startswith("20260101-100000-audit-") and older.suffix == ".jsonl"
    for path, command, t, end in ((older, "audit", 1000.0, True), (newer, "bench", 2000.0, False)):
        with TranscriptWriter(path) as writer:
            writer(SessionStarted(t=t, command=command, host="gpu-node"))
            writer(Warning_(t=t + 5, text="x"))
            if end:
                writer(SessionEnded(t=t + 7.5, exit_code=3))
    (older.parent / "junk.jsonl").write_text("nope\n")
    infos = [i for i in list_transcripts() if i.error is None]
    assert [i.path for i in infos] == [newer, older]
    assert (infos[1].command, infos[1].host, infos[1].events, infos[1].duration_s, infos[1].exit_code) == (
        "audit",
        "gpu-node",
        3,
        7.5,
        3,
    )
    assert infos[0].exit_code is None and infos[0].events == 2
    assert find_transcript("last") == newer and find_transcript("bench") == newer
    assert inspect_transcript(older.parent / "junk.jsonl").error == "not a rigaudit transcript"
    assert main(["transcripts", "list"]) == 0
    out = capsys.readouterr().out
    assert out.index(newer.name) < out.index(older.name) and "junk.jsonl (not a rigaudit transcript)" in out
    assert main(["transcripts", "path"]) == 0
    assert capsys.readouterr().out.strip() == str(older.parent)
    assert main(["transcripts", "show", "audit", "--events"]) == 0
    out = capsys.readouterr().out
    assert "session:   audit of gpu-node" in out and "exit 3" in out and "warning" in out
