"""Re-diagnosis: rebuild a recorded audit's host from its tool results and judge it with today's rules."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import anyio

from rigaudit.orchestrator.audit.run import AuditOptions, run_audit
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.record import Record
from rigaudit.tools.diffing import FindingChange, diff_findings
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.events.audit import AuditFinished
from rigaudit.tools.schema.events.chat import LlmExchange
from rigaudit.tools.schema.events.diff import DiffFindingChange, LlmReplay, RediagnoseFinished
from rigaudit.tools.schema.events.session import SessionStarted
from rigaudit.tools.schema.events.union import Event
from rigaudit.tools.schema.finding import Finding
from rigaudit.transcripts.reader import Transcript
from rigaudit.transcripts.rebuild import RebuildReport, rebuild_snapshot, verify_rebuild
from rigaudit.transcripts.references import resolved
from rigaudit.transcripts.segments import audit_segments, recorded_findings


def _areas(events: list[Event], all_areas: bool) -> list[str] | None:
    start = next((e for e in events if isinstance(e, SessionStarted)), None)
    recorded = start.options.get("areas") if start else None
    if all_areas or not isinstance(recorded, list) or not recorded:
        return None
    return [str(a) for a in recorded]


def _rediagnose_segment(transcript: Transcript, number: int) -> list[Event]:
    segments = audit_segments(transcript.events)
    if not segments or not any(recorded_findings(s) for s in segments):
        raise UsageError(f"{transcript.path}: the session recorded no audit findings to re-diagnose")
    if not 1 <= number <= len(segments):
        raise UsageError(f"--audit {number}: the session recorded {len(segments)} audit(s)")
    segment = segments[number - 1]
    if transcript.session is not None and not any(isinstance(e, SessionStarted) for e in segment):
        segment = [transcript.session, *segment]
    return segment


def _scratch_dir() -> str | None:
    """RAM-backed /dev/shm for the throwaway snapshot (thousands of small files), unless TMPDIR says otherwise."""
    if os.environ.get("TMPDIR"):
        return None
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


def rediagnose(
    transcript: Transcript, *, number: int = 1, all_areas: bool = False, keep: Path | None = None, snapshot: Path | None = None
) -> Rediagnosis:
    """Rebuild the audit's snapshot, audit it today, and compare: (changes, recorded, rebuild, mismatches, result).
    Reads recorded by reference are answered from the snapshot they name (``snapshot``: that one, elsewhere)."""
    segment = resolved(_rediagnose_segment(transcript, number), snapshot)
    recorded = recorded_findings(segment)
    with tempfile.TemporaryDirectory(prefix="rigaudit-rediagnose-", dir=_scratch_dir()) as tmp:
        root = keep if keep is not None else Path(tmp) / "snapshot"
        if keep is not None and keep.exists() and any(keep.iterdir()):
            raise UsageError(f"--save-snapshot {keep}: the folder is not empty")
        try:
            report = rebuild_snapshot(segment, root, source=str(transcript.path))
        except OSError as exc:
            raise UsageError(f"cannot write the rebuilt snapshot to {root}: {exc.strerror or exc}") from None
        mismatches = anyio.run(verify_rebuild, segment, root)
        replay = _ModelReplay.of(segment)
        options = AuditOptions(areas=_areas(segment, all_areas), brain=replay.brain if replay else None)

        async def audit() -> AuditResult:
            host = SnapshotHost(root)
            try:
                return await run_audit(host, options=options)
            finally:
                await host.aclose()

        result = anyio.run(audit)
    llm = replay.outcome(segment, result) if replay else None
    return Rediagnosis(list(diff_findings(recorded, result.findings).changes), recorded, report, mismatches, result, llm)


class Rediagnosis(Record):
    """A recorded audit judged again: what changed, against what, from what rebuild."""

    changes: list[FindingChange]
    recorded: list[Finding]
    rebuild: RebuildReport
    mismatches: list[str]
    result: AuditResult
    llm: LlmReplay | None
    """The model's side, where the session recorded its exchanges."""


class _ModelReplay:
    """A recorded LLM audit's agents, answered from the transcript (no server): built only where it recorded some."""

    def __init__(self, exchanges: list[LlmExchange], options: dict[str, object]) -> None:
        from rigaudit.agents.llm.brain import LLMBrain
        from rigaudit.agents.llm.config import LlmConfig
        from rigaudit.agents.llm.recording import RecordedModel

        self.count = len(exchanges)
        self.model = RecordedModel(exchanges)
        steps = options.get("llm_max_steps")
        tokens = options.get("llm_max_tokens")
        config = LlmConfig(
            model="recorded",
            preflight=False,
            max_steps=steps if isinstance(steps, int) and steps > 0 else LlmConfig().max_steps,
            max_audit_tokens=tokens if isinstance(tokens, int) and tokens > 0 else LlmConfig().max_audit_tokens,
        )
        self.brain = LLMBrain(config, model=self.model)

    @classmethod
    def of(cls, segment: list[Event]) -> _ModelReplay | None:
        from rigaudit.agents.llm.recording import replayable

        exchanges = replayable(segment)
        if not exchanges:
            return None
        start = next((e for e in segment if isinstance(e, SessionStarted)), None)
        return cls(exchanges, dict(start.options) if start else {})

    def outcome(self, segment: list[Event], result: AuditResult) -> LlmReplay:
        audit = next((e for e in reversed(segment) if isinstance(e, AuditFinished)), None)
        recorded = list(audit.result.suggestions) if audit is not None else []
        changes = diff_findings(recorded, result.suggestions).changes
        return LlmReplay(
            exchanges=self.count,
            changed=list(self.model.changed),
            unanswered=sorted(set(self.model.unanswered)),
            left=self.model.left(),
            recorded=len(recorded),
            changes=[DiffFindingChange.model_validate(change.to_json()) for change in changes],
        )


REDIAGNOSE_SCHEMA = "rigaudit.rediagnose/1"


def rediagnosis(
    transcript: Transcript, *, number: int = 1, all_areas: bool = False, keep: Path | None = None, snapshot: Path | None = None
) -> RediagnoseFinished:
    """:func:`rediagnose` as the event ``replay --rediagnose`` shows and records."""
    done = rediagnose(transcript, number=number, all_areas=all_areas, keep=keep, snapshot=snapshot)
    session = transcript.session
    return RediagnoseFinished(
        transcript=str(transcript.path),
        what=f"{session.command} of {session.host or '?'}" if session else "session",
        recorded_at=transcript.events[0].t,
        audit=number,
        rebuild=done.rebuild.summary(),
        warnings=list(done.rebuild.warnings),
        mismatches=list(done.mismatches),
        saved=str(keep) if keep is not None else "",
        recorded=len(done.recorded),
        changes=[DiffFindingChange.model_validate(change.to_json()) for change in done.changes],
        result=done.result,
        llm=done.llm,
    )


def rediagnose_json(event: RediagnoseFinished) -> dict[str, object]:
    """``rigaudit.rediagnose/1`` from the re-diagnosis' event: what ``replay --rediagnose --json`` writes."""
    return {
        "schema": REDIAGNOSE_SCHEMA,
        "transcript": event.transcript,
        "audit": event.audit,
        "identical": not event.changes and (event.llm is None or not event.llm.changes),
        "recorded": event.recorded,
        "current": len(event.result.findings),
        "changes": [change.model_dump(mode="json") for change in event.changes],
        "rebuild": {"summary": event.rebuild, "warnings": list(event.warnings), "mismatches": list(event.mismatches)},
        "result": event.result.model_dump(mode="json", by_alias=True),
        "llm": event.llm.model_dump(mode="json") if event.llm is not None else None,
    }
