"""An audit of a sealed snapshot records its reads by reference (the snapshot's digest of each answer, not its text),
an area's in one event; a replay answers them from that snapshot, and a snapshot that is missing, another one or
changed is one line."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.orchestrator.cli import main
from rigaudit.tools.hosts.base import CommandResult, FileResult
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.events.audit import SnapshotReads, SnapshotReferenced, ToolCall
from rigaudit.tools.schema.events.union import Event
from rigaudit.transcripts.format import DUMPS
from rigaudit.transcripts.reader import read_transcript
from rigaudit.transcripts.references import ReferencedReads, resolved
from rigaudit.transcripts.writer import encode_event
from tests.support.mutate import set_file

SMALL = Path(__file__).resolve().parent / "fixtures" / "h200x1-vm"
SEED = Path(__file__).resolve().parent / "fixtures" / "seed-lxc-8x-rtxpro6000"


@pytest.fixture
def audited(tmp_path: Path) -> tuple[Path, Path]:
    """(a private copy of a snapshot, the transcript of its audit)."""
    snapshot, transcript = tmp_path / "snap", tmp_path / "audit.jsonl"
    shutil.copytree(SMALL, snapshot)
    args = [
        "audit",
        "--snapshot",
        str(snapshot),
        "--no-live",
        "--json",
        str(tmp_path / "a.json"),
        "--transcript",
        str(transcript),
    ]
    assert main(args) == 0
    return snapshot, transcript


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_a_snapshot_audit_records_no_read_text(audited: tuple[Path, Path]) -> None:
    snapshot, transcript = audited
    lines = _lines(transcript)
    named = [e for e in lines if e["type"] == "snapshot_referenced"]
    assert len(named) == 1 and named[0]["path"] == str(snapshot.resolve())
    assert not [e for e in lines if e["type"] == "tool_call"]
    reads = [read for e in lines if e["type"] == "snapshot_reads" for read in e["reads"]]  # type: ignore[attr-defined]
    assert len(reads) > 100 and all(len(read) == 4 and len(read[3]) == 32 for read in reads)
    cpuinfo = (snapshot / "files" / "proc" / "cpuinfo").read_text()
    flags = json.dumps(next(line for line in cpuinfo.splitlines() if line.startswith("flags")))[1:-1]
    holding = [json.loads(line)["type"] for line in transcript.read_text().splitlines() if flags in line]
    assert holding == ["audit_finished"]  # only where the result cites it as evidence, never as a read


def test_its_rediagnosis_answers_the_reads_from_the_snapshot(
    audited: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot, transcript = audited
    out = tmp_path / "changes.json"
    assert main(["replay", str(transcript), "--rediagnose", "--no-live", "--json", str(out)]) == 0
    document = json.loads(out.read_text())
    assert document["identical"] and document["recorded"] == document["current"] > 0
    capsys.readouterr()
    assert main(["diff", str(transcript), str(snapshot), "--values"]) == 1  # the values too: the rebuilt side's digests
    assert "findings: no change" in capsys.readouterr().out
    moved = tmp_path / "moved"
    snapshot.rename(moved)
    capsys.readouterr()
    assert main(["replay", str(transcript), "--rediagnose", "--no-live"]) == 2
    assert "cannot be read (not found); pass the snapshot it audited with --snapshot DIR" in _one_line_error(capsys)
    assert main(["diff", str(transcript), str(moved), "--values"]) == 2
    assert "cannot be read (not found); diff it against the snapshot where it is now" in _one_line_error(capsys)
    assert main(["replay", str(transcript), "--rediagnose", "--no-live", "--snapshot", str(moved)]) == 0
    assert main(["replay", str(transcript), "--no-live"]) == 0  # the screens need no snapshot


def test_a_changed_or_another_snapshot_is_one_line(
    audited: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot, transcript = audited
    other = tmp_path / "other"
    shutil.copytree(Path(__file__).resolve().parent / "fixtures" / "h200x2-vm", other)
    assert main(["replay", str(transcript), "--rediagnose", "--no-live", "--snapshot", str(other)]) == 2
    assert "is not the snapshot the transcript audited (its snapshot.json differs)" in _one_line_error(capsys)
    set_file(snapshot, "/proc/cpuinfo", "processor : 0\n")
    assert main(["replay", str(transcript), "--rediagnose", "--no-live"]) == 2
    assert "answers read /proc/cpuinfo differently" in _one_line_error(capsys)


def test_resolved_reads_are_what_an_embedding_transcript_records(tmp_path: Path) -> None:
    """Answered from the snapshot, each read is the event a transcript of the same audit embedding its reads holds."""
    referenced: list[Event] = []
    anyio.run(lambda: run_audit(SnapshotHost(SMALL), emit=referenced.append))
    embedded: list[Event] = []
    anyio.run(lambda: run_audit(SnapshotHost(SMALL, writable=True), emit=embedded.append))  # written to: embedded
    assert not any(isinstance(e, SnapshotReferenced) for e in embedded)

    def recorded(events: list[Event]) -> list[dict[str, object]]:
        calls = [json.loads(encode_event(e)) for e in events if isinstance(e, ToolCall)]
        return sorted(({k: v for k, v in c.items() if k != "t"} for c in calls), key=json.dumps)

    answered = [e for e in resolved(referenced) if not isinstance(e, SnapshotReferenced)]
    assert recorded(answered) == recorded(embedded) and any("data_b64" in str(c["result"]) for c in recorded(answered))


def _reads(*results: tuple[str, FileResult]) -> SnapshotReads:
    kept = ReferencedReads(lambda: "gpu")
    for ref, result in results:
        kept.observe(ref, result)
    (event,) = kept.take("gpu")
    assert isinstance(event, SnapshotReads)
    return event


def test_a_read_whose_path_redaction_changes_is_embedded() -> None:
    """A path holding an identifier is written digested: a replay could not name it, so its answer is embedded, in a
    line of its own before the area's reads by reference."""
    path = "/run/nvidia/GPU-3f2b1c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d/state"
    reads = _reads((f"file:{path}", FileResult(path, b"data\n")), ("file:/proc/version", FileResult("/proc/version", b"6.8\n")))
    embedded, referenced = (json.loads(line) for line in encode_event(reads).splitlines())
    assert embedded["type"] == "tool_call" and "data_b64" in embedded["result"] and "3f2b1c4d" not in embedded["target"]
    assert [read[:3] for read in referenced["reads"]] == [["read", "/proc/version", []]]
    plain = _reads(("file:/proc/version", FileResult("/proc/version", b"Linux 6.8\n")))
    assert encode_event(plain) == DUMPS(plain.model_dump(mode="json", by_alias=True))  # by hand, the model's bytes


def test_a_denied_command_is_embedded_before_the_areas_reads() -> None:
    """A command the policy denied is no answer of the snapshot's: its event holds the refusal, before the area's reads
    by reference; an area that read nothing tells nothing."""
    kept = ReferencedReads(lambda: "gpu")
    kept.observe("cmd:rm -rf /", CommandResult(("rm", "-rf", "/"), error="denied", stderr="policy: deny: writes"))
    kept.observe("file:/proc/version", FileResult("/proc/version", b"6.8\n"))
    call, reads = kept.take("gpu")
    assert isinstance(call, ToolCall) and call.result["error"] == "denied" and call.area == "gpu"
    assert isinstance(reads, SnapshotReads) and [r[:2] for r in reads.reads] == [("read", "/proc/version")]
    assert kept.take("gpu") == [] and kept.take_all() == []


def test_a_snapshot_audit_records_its_reads_in_an_event_an_area(tmp_path: Path) -> None:
    """However many reads an area makes, a sealed snapshot's audit records them as one event (the baseline's, and
    each investigator's): the transcript's read events are bounded by the areas, not by the reads."""
    transcript = tmp_path / "t.jsonl"
    assert (
        main(["audit", "--snapshot", str(SEED), "--no-live", "--json", str(tmp_path / "a.json"), "--transcript", str(transcript)])
        == 0
    )
    lines = _lines(transcript)
    areas = {e["area"] for e in lines if e["type"] == "investigator_started"}
    batches = [e for e in lines if e["type"] == "snapshot_reads"]
    reads = sum(len(e["reads"]) for e in batches)  # type: ignore[arg-type]
    assert reads > 1000 and len(batches) <= len(areas) + 2  # the baseline's, and reads made outside any area
    assert len({e["area"] for e in batches}) == len(batches) and not [e for e in lines if e["type"] == "tool_call"]
    finished = next(e for e in lines if e["type"] == "audit_finished")
    assert finished["recorded"] == {"findings": sum(e["type"] == "finding" for e in lines), "plan": True}
    assert "findings" not in finished["result"] and "plan" not in finished["result"]  # type: ignore[operator]
    recorded = read_transcript(transcript)
    assert not recorded.warnings and recorded.audit is not None
    live = AuditResult.model_validate_json((tmp_path / "a.json").read_text())
    assert recorded.audit.result == live and recorded.audit.result.findings and recorded.audit.result.plan.steps


def test_an_old_transcript_still_rediagnoses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = Path(__file__).resolve().parent / "fixtures" / "transcripts" / "h200x2-audit.jsonl"
    transcript = read_transcript(old)
    assert transcript.version < 3 and not transcript.warnings
    assert any(isinstance(e, ToolCall) and "data_b64" in e.result for e in transcript.events)
    assert main(["replay", str(old), "--rediagnose", "--no-live"]) in (0, 1)
    assert "Traceback" not in capsys.readouterr().err


def test_a_snapshot_named_before_every_read_is_opened_once(audited: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A crafted transcript naming its snapshot again before each of its reads: opened once, not once a read."""
    from rigaudit.transcripts import references

    _, transcript = audited
    events = read_transcript(transcript).events
    named = next(e for e in events if isinstance(e, SnapshotReferenced))
    batches = [e for e in events if isinstance(e, SnapshotReads)]
    calls = [SnapshotReads(t=b.t, area=b.area, reads=(read,)) for b in batches for read in b.reads]  # a read an event
    opened: list[str] = []
    real_open = references._open
    monkeypatch.setattr(references, "_open", lambda *args: opened.append(args[0].path) or real_open(*args))
    resolved([item for call in calls for item in (named, call)])
    assert opened == [named.path] and len(calls) > 100


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda e: e["reads"].append(["read", "/proc/x", [], "not a digest"]), "invalid 'snapshot_reads' event skipped"),
        (lambda e: e["reads"].append(["read", "/proc/x"]), "invalid 'snapshot_reads' event skipped"),
        (lambda e: e.update(reads="nope"), "invalid 'snapshot_reads' event skipped"),
    ],
)
def test_a_crafted_batch_of_reads_is_one_warning(
    audited: tuple[Path, Path], change: Callable[[dict[str, Any]], None], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _, transcript = audited
    lines = transcript.read_text().splitlines()
    number = next(n for n, line in enumerate(lines) if '"snapshot_reads"' in line)
    event = json.loads(lines[number])
    change(event)
    lines[number] = json.dumps(event)
    transcript.write_text("\n".join(lines) + "\n")
    read = read_transcript(transcript)
    assert any(said in w for w in read.warnings) and read.audit is not None
    assert main(["replay", str(transcript), "--no-live"]) == 0
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda e: e["reads"].append(["frobnicate", "/proc/x", [], "ab" * 16]), "is none rigaudit knows"),
        (lambda e: e["reads"].append(["read", "/../../etc/shadow", [], "ab" * 16]), "differently than when"),
        (lambda e: e["reads"].append(["nvml", "nvmlDeviceGetCount", ["x"], "ab" * 16]), "is none rigaudit knows"),
    ],
)
def test_a_crafted_read_is_one_line_when_answered(
    audited: tuple[Path, Path], change: Callable[[dict[str, Any]], None], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _, transcript = audited
    lines = transcript.read_text().splitlines()
    number = next(n for n, line in enumerate(lines) if '"snapshot_reads"' in line)
    event = json.loads(lines[number])
    change(event)
    lines[number] = json.dumps(event)
    transcript.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["replay", str(transcript), "--rediagnose", "--no-live"]) == 2
    assert said in _one_line_error(capsys)


def test_reads_by_reference_with_no_snapshot_named_are_one_line(
    audited: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, transcript = audited
    lines = [line for line in transcript.read_text().splitlines() if '"snapshot_referenced"' not in line]
    transcript.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["replay", str(transcript), "--rediagnose", "--no-live"]) == 2
    assert "names no snapshot (the transcript is damaged)" in _one_line_error(capsys)
