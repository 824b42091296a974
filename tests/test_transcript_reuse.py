"""transcripts/reuse.py: the findings and the plan, redacted once, are reused inside the audit's result, and every
line is the one redacting the whole event gives."""

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


def test_every_line_is_the_one_the_whole_event_gives() -> None:
    events = _seed_events()
    for event in events:  # what the host's ids are is learned (the lines below are written knowing it)
        encode_event(event)
    whole = [encode_event(e) for e in events]
    parts = RedactedParts()
    assert [encode_event(e, parts=parts) for e in events] == whole


def test_the_result_walks_no_finding_nor_plan_again(monkeypatch: pytest.MonkeyPatch) -> None:
    events = _seed_events()
    walked: list[Any] = []

    def spy(value: Any, *args: Any, **kwargs: Any) -> Any:
        walked.append(value)
        return real(value, *args, **kwargs)

    real = reuse.redact_json
    monkeypatch.setattr(reuse, "redact_json", spy)
    parts = RedactedParts()
    for event in events:
        encode_event(event, parts=parts)
    result = walked[-1]["result"]
    assert result["findings"] and set(result["findings"]) == {None}
    assert result["plan"] is None


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
    assert lines == [encode_event(e) for e in events]
