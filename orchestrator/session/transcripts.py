"""What ``rigaudit transcripts`` shows about recorded sessions, as events: the stored ones listed, one summed up."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from rigaudit.tools.schema.events.apply import ApprovalDecided, ChangeApplied
from rigaudit.tools.schema.events.audit import (
    FindingReported,
    InvestigatorActivity,
    InvestigatorFinished,
    SnapshotReads,
    ToolCall,
)
from rigaudit.tools.schema.events.bench import BenchResultReported
from rigaudit.tools.schema.events.chat import LlmExchange, Message
from rigaudit.tools.schema.events.session import ReportWritten, Warning_
from rigaudit.tools.schema.events.transcripts import EventLine, TranscriptEntry, TranscriptShown, TranscriptsListed
from rigaudit.tools.schema.events.union import Event
from rigaudit.transcripts.reader import Transcript
from rigaudit.transcripts.store import list_transcripts

_DESCRIBED = 160
"""The longest line about an event's other fields."""


def describe(event: Event) -> str:
    """One line about an event, for ``show --events``."""
    if isinstance(event, ToolCall):
        error = event.result.get("error")
        return f"{event.area or '-'}: {event.op} {event.target}" + (f" -> {error}" if error else "")
    if isinstance(event, SnapshotReads):
        return f"{event.area or '-'}: {len(event.reads)} read(s) of the snapshot, by reference"
    if isinstance(event, InvestigatorActivity):
        return f"{event.area}: {event.ref}"
    if isinstance(event, InvestigatorFinished):
        return f"{event.area}: {event.status} in {event.duration_s:.2f}s"
    if isinstance(event, FindingReported):
        f = event.finding
        return f"{f.check}: {f.status}{f' ({f.severity})' if f.severity else ''}: {f.title}"
    if isinstance(event, (Message, Warning_)):
        return event.text.splitlines()[0] if event.text else ""
    fields = event.model_dump(exclude={"t", "type"})
    text = ", ".join(f"{k}={v}" for k, v in fields.items() if isinstance(v, (str, int, float)) and v != "")
    return text if len(text) <= _DESCRIBED else text[: _DESCRIBED - 3] + "..."


def listed(folder: Path) -> TranscriptsListed:
    """The transcripts stored in ``folder``, newest first (a file that cannot be read says why)."""
    entries = []
    for info in list_transcripts(folder):
        if info.error:
            entries.append(TranscriptEntry(file=info.path.name, error=info.error))
            continue
        entries.append(
            TranscriptEntry(
                file=info.path.name,
                started=info.started,
                command=info.command,
                host=info.host,
                events=info.events,
                duration_s=info.duration_s,
                exit_code=info.exit_code,
            )
        )
    return TranscriptsListed(folder=str(folder), entries=entries)


def summary(transcript: Transcript, *, with_events: bool = False) -> TranscriptShown:
    """What ``transcript`` holds: its session, counts, findings and plan; every event with ``with_events``."""
    header, events = transcript.header, transcript.events
    session, ended = transcript.session, transcript.ended
    problems = [f.finding for f in transcript.findings if f.finding.status == "problem"]
    exchanges = [e for e in events if isinstance(e, LlmExchange)]
    totals = [e for e in exchanges if e.agent == "total"]  # what the session spent, its requests together
    usage = Counter[str]()
    for event in totals or exchanges:
        usage.update(event.usage)
    costs = [e.cost_usd for e in totals if e.cost_usd is not None]
    start = events[0].t if events else 0.0
    return TranscriptShown(
        path=str(transcript.path),
        format=str(header.get("transcript")),
        written_by=str(header["rigaudit"]) if header.get("rigaudit") else "",
        created_at=str(header["created_at"]) if header.get("created_at") else "",
        command=session.command if session is not None else None,
        host=session.host if session is not None else "",
        source=session.source if session is not None else "",
        options=dict(session.options) if session is not None else {},
        versions=dict(session.versions) if session is not None else {},
        duration_s=transcript.duration_s,
        exit_code=ended.exit_code if ended is not None else None,
        end_reason=ended.reason if ended is not None else "",
        counts=Counter[str](e.type for e in events).most_common(),
        investigators=[(e.area, e.status) for e in events if isinstance(e, InvestigatorFinished)],
        findings=len(transcript.findings),
        problems=[(p.check, p.severity) for p in problems],
        plan_steps=len(transcript.audit.result.plan.steps) if transcript.audit is not None else None,
        approvals=sum(1 for e in events if isinstance(e, ApprovalDecided)),
        changes=sum(1 for e in events if isinstance(e, ChangeApplied)),
        benchmarks=sum(1 for e in events if isinstance(e, BenchResultReported)),
        llm_usage=dict(usage),
        llm_cost_usd=sum(costs) if costs else None,
        reports=[e.path for e in events if isinstance(e, ReportWritten)],
        listing=[EventLine(after_s=e.t - start, type=e.type, text=describe(e)) for e in events] if with_events else [],
    )
