"""transcripts/reuse.py and recorded.py: the audit's result refers to the findings and the plan recorded before it
(or reuses their redaction), every part is redacted once, and what is read back is what redacting the whole events
gives."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.redact import _known, as_digest
from rigaudit.tools.schema.audit import AuditResult, HostSummary
from rigaudit.tools.schema.events.audit import AuditFinished, FindingReported
from rigaudit.tools.schema.events.union import Event
from rigaudit.tools.schema.finding import Finding
from rigaudit.transcripts import reuse
from rigaudit.transcripts.format import make_header
from rigaudit.transcripts.reader import read_transcript
from rigaudit.transcripts.reuse import RedactedParts
from rigaudit.transcripts.writer import TranscriptWriter, encode_event

SEED = Path(__file__).parent / "fixtures" / "seed-lxc-8x-rtxpro6000"
SERIAL = "PXR4410071234"


@functools.cache
def _seed_events() -> tuple[Event, ...]:
    """The events of one audit of the seed (what a transcript records), for every test here: read only."""
    events: list[Event] = []
    anyio.run(lambda: run_audit(SnapshotHost(SEED), emit=events.append))
    return tuple(e for e in events if not e.display_only)


def _read_back(path: Path, lines: list[str]) -> list[Event]:
    path.write_text(json.dumps(make_header()) + "\n" + "".join(line + "\n" for line in lines), encoding="utf-8")
    transcript = read_transcript(path)
    assert not transcript.warnings
    return transcript.events


def test_what_is_read_back_is_what_the_whole_events_give(tmp_path: Path) -> None:
    events = _seed_events()
    for event in events:  # what the host's ids are is learned (the lines below are written knowing it)
        encode_event(event)
    whole = [encode_event(e) for e in events]
    parts = RedactedParts()
    lines = [encode_event(e, parts=parts) for e in events]
    assert [a == b for a, b in zip(lines, whole, strict=True)] == [not isinstance(e, AuditFinished) for e in events]
    assert _read_back(tmp_path / "parts.jsonl", lines) == _read_back(tmp_path / "whole.jsonl", whole)


def test_the_result_walks_no_finding_nor_plan_again(monkeypatch: pytest.MonkeyPatch) -> None:
    events = _seed_events()
    for event in events:
        encode_event(event, parts=RedactedParts())  # every part redacted once
    walked: list[Any] = []

    def spy(value: Any, *args: Any, **kwargs: Any) -> Any:
        walked.append(value)
        return real(value, *args, **kwargs)

    real = reuse.redact_json
    monkeypatch.setattr(reuse, "redact_json", spy)
    parts = RedactedParts()
    lines = [encode_event(event, parts=parts) for event in events]
    assert not any("finding" in w or "plan" in w for w in walked)  # each finding's line, and the plan's, reused
    result = walked[-1]["result"]
    assert {"findings", "plan", "evidence"}.isdisjoint(result)
    assert json.loads(lines[-1])["recorded"]["plan"] is True


def _finding(observed: str) -> Finding:
    return Finding(check="gpu.ecc", area="gpu", status="ok", title="ECC", observed=observed)


def _finished(finding: Finding) -> AuditFinished:
    host = HostSummary(name="h", source="local")
    return AuditFinished(result=AuditResult(host=host, started_at="2026-01-01T00:00:00Z", duration_s=1.0, findings=(finding,)))


def test_a_value_learned_after_a_finding_is_digested_in_the_result() -> None:
    finding = _finding(f"board {SERIAL} reports ECC on")
    parts = RedactedParts()
    first = json.loads(encode_event(FindingReported(finding=finding), parts=parts))
    assert SERIAL in first["finding"]["observed"]  # not known yet: nothing says it is a serial
    token = as_digest("serial", SERIAL)  # read elsewhere, labelled: learned
    assert token is not None and _known.token_of(SERIAL) == token
    line = encode_event(_finished(finding), parts=parts)
    assert SERIAL not in line
    assert json.loads(line)["result"]["findings"] == [json.loads(encode_event(FindingReported(finding=finding)))["finding"]]


def test_a_written_transcript_holds_the_lines_of_the_whole_events(tmp_path: Path) -> None:
    events = _seed_events()
    for event in events:
        encode_event(event)
    with TranscriptWriter(tmp_path / "t.jsonl") as writer:
        for event in events:
            writer(event)
    lines = (tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()[1:]
    kept = [(line, e) for line, e in zip(lines, events, strict=True) if not isinstance(e, AuditFinished)]
    assert [line for line, _ in kept] == [encode_event(e) for _, e in kept]
    assert read_transcript(tmp_path / "t.jsonl").audit == next(e for e in events if isinstance(e, AuditFinished))


def test_a_result_that_refers_to_what_is_not_there_is_one_warning(tmp_path: Path) -> None:
    """A result that refers to more findings than were recorded, or to findings when a line before it was damaged,
    is skipped with why; the findings read stay."""
    events = _seed_events()
    parts = RedactedParts()
    lines = [encode_event(e, parts=parts) for e in events]
    first = next(n for n, e in enumerate(events) if isinstance(e, FindingReported))
    for damaged in (lines[:first] + lines[first + 1 :], [*lines[:first], "{not json", *lines[first + 1 :]]):
        path = tmp_path / "t.jsonl"
        path.write_text(json.dumps(make_header()) + "\n" + "".join(line + "\n" for line in damaged), encoding="utf-8")
        transcript = read_transcript(path)
        assert transcript.audit is None and transcript.findings
        assert any("invalid 'audit_finished' event skipped (it refers to" in w for w in transcript.warnings)
