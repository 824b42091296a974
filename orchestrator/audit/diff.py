"""The two sides of ``rigaudit diff``: a snapshot, an audit JSON, a transcript or a share bundle.

Each side becomes findings (a snapshot or a bundle is audited now; an audit JSON and a transcript
give the findings they recorded) and, where it can, a snapshot directory whose values are compared:
a snapshot as it is, a bundle unpacked, a transcript rebuilt from its tool calls (``values=True``).
Bad input is a :class:`~rigaudit.tools.core.errors.UsageError` with one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import anyio
from pydantic import ValidationError

from rigaudit.orchestrator.audit.run import AuditOptions, run_audit
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.diffing import DIFF_SCHEMA, SideInfo
from rigaudit.tools.files.bounded import InputError, JsonError, load_json, loads, open_regular
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.audit import AUDIT_SCHEMA, AuditResult
from rigaudit.tools.schema.events.audit import AuditFinished, SnapshotReads, ToolCall
from rigaudit.tools.schema.events.diff import DiffReported, DiffValueChange
from rigaudit.tools.schema.events.session import SessionStarted
from rigaudit.tools.schema.finding import Finding
from rigaudit.tools.share import unpack_bundle
from rigaudit.transcripts.format import HEADER_KEY
from rigaudit.transcripts.reader import read_transcript
from rigaudit.transcripts.rebuild import rebuild_snapshot
from rigaudit.transcripts.references import resolve_references
from rigaudit.transcripts.segments import audit_segments, recorded_findings

SideKind = Literal["snapshot", "audit", "transcript", "bundle"]


class Side(Record, frozen=False):
    path: Path
    kind: SideKind
    host: str
    findings: tuple[Finding, ...]
    snapshot: Path | None = None
    """A snapshot directory whose values can be compared (``None``: this side has none)."""
    warnings: list[str] = field(default_factory=list)
    facts: dict[str, str] = field(default_factory=dict)
    """The host's baseline facts the audit recorded (GPUs, driver, kernel...): the diff's headline."""

    @property
    def info(self) -> SideInfo:
        return SideInfo(str(self.path), self.kind, self.host)


def _first_line(path: Path) -> bytes:
    with open(open_regular(path), "rb") as handle:
        return handle.readline(1 << 20)


def detect(path: Path) -> SideKind:
    """What ``path`` is, by its content; :class:`UsageError` when it is none of the four."""
    if path.is_dir():
        if (path / "snapshot.json").is_file():
            return "snapshot"
        raise UsageError(f"{path}: a directory without snapshot.json is not a snapshot")
    if not path.exists():
        raise UsageError(f"{path}: no such file or directory")
    try:
        first = _first_line(path)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if first.startswith(b"\x1f\x8b"):
        return "bundle"
    try:
        header = loads(first)
    except JsonError:
        header = None
    if isinstance(header, dict) and HEADER_KEY in header:
        return "transcript"
    return "audit"


def _audit_json(path: Path) -> AuditResult:
    try:
        raw = load_json(path)
    except InputError as exc:
        raise UsageError(f"{exc} (not a snapshot, an audit JSON ({AUDIT_SCHEMA}) or a transcript)") from None
    schema = raw.get("schema") if isinstance(raw, dict) else None
    if schema != AUDIT_SCHEMA:
        raise UsageError(f"{path}: not an audit JSON (schema {repr(schema)[:60]}, expected {AUDIT_SCHEMA!r})")
    try:
        return AuditResult.model_validate(raw)
    except ValidationError as exc:
        errors = exc.errors()
        reason = f"{'.'.join(str(p) for p in errors[0]['loc'])}: {errors[0]['msg']}" if errors else "invalid"
        raise UsageError(f"{path}: invalid audit JSON ({reason})") from None


def _unpack(path: Path, scratch: Path) -> Path:
    """Unpack a share bundle (``snapshot --share``), bounded, and return the snapshot inside it."""
    return unpack_bundle(path, scratch / "unpacked")


async def _audit(snapshot: Path, options: AuditOptions) -> AuditResult:
    return await run_audit(SnapshotHost(snapshot), options=options)


async def load_side(path: Path, *, values: bool, scratch: Path, options: AuditOptions | None = None) -> Side:
    """Read one side; ``scratch`` is a private folder for unpacked bundles and rebuilt snapshots."""
    options = options or AuditOptions()
    kind = detect(path)
    if kind in ("snapshot", "bundle"):
        snapshot = path if kind == "snapshot" else await anyio.to_thread.run_sync(_unpack, path, scratch)
        audited = await _audit(snapshot, options)
        return Side(path, kind, audited.host.name, audited.findings, snapshot, list(audited.warnings), dict(audited.host.facts))
    if kind == "audit":
        result = _audit_json(path)
        return Side(path, "audit", result.host.name, result.findings, facts=dict(result.host.facts))
    transcript = read_transcript(path)
    segments = audit_segments(transcript.events)
    if not segments:
        raise UsageError(f"{path}: the transcript recorded no audit (no findings)")
    events = segments[-1]
    findings = tuple(recorded_findings(events))
    if not findings:
        raise UsageError(f"{path}: the transcript recorded no audit (no findings)")
    started = transcript.session
    audit = next((e for e in reversed(events) if isinstance(e, AuditFinished)), None)
    host = (audit.result.host.name if audit else "") or (started.host if isinstance(started, SessionStarted) else "")
    facts = dict(audit.result.host.facts) if audit is not None else {}
    side = Side(path, "transcript", host, findings, warnings=list(transcript.warnings), facts=facts)
    if values:
        if any(isinstance(e, (ToolCall, SnapshotReads)) for e in events):
            events = await resolve_references(events, elsewhere="diff it against the snapshot where it is now")
            rebuilt = scratch / "rebuilt"
            report = await anyio.to_thread.run_sync(lambda: rebuild_snapshot(events, rebuilt, source=str(path)))
            side.snapshot = rebuilt
            side.warnings.extend(f"{path.name}: rebuild: {w}" for w in report.warnings[:5])
        else:
            side.warnings.append(f"{path}: no tool calls recorded; its values cannot be compared")
    return side


def diff_event(document: dict[str, object], *, facts_compared: bool, rows: int) -> DiffReported:
    """The diff as its event (``document`` is ``rigaudit.diff/1``); :func:`diff_json` gives the document back."""
    fields = {key: value for key, value in document.items() if key != "schema"}
    return DiffReported.model_validate({**fields, "facts_compared": facts_compared, "rows": rows})


def _value_json(change: DiffValueChange) -> dict[str, object]:
    out: dict[str, object] = {"kind": change.kind, "ref": change.ref, "change": change.change, "detail": change.detail}
    if change.volatile:
        out["volatile"] = True
    if change.diff:
        out["diff"] = change.diff
    return out


def diff_json(event: DiffReported) -> dict[str, object]:
    """``rigaudit.diff/1`` from the diff's event: what ``rigaudit diff --json`` writes."""
    values = event.values
    values_json: dict[str, object] = {"compared": False, "note": values.note}
    if values.compared:
        values_json = {
            "compared": True,
            "compared_count": values.compared_count,
            "counts": dict(values.counts),
            "changes": [_value_json(c) for c in values.changes],
            "warnings": list(values.warnings),
        }
    return {
        "schema": DIFF_SCHEMA,
        "a": event.a.model_dump(mode="json"),
        "b": event.b.model_dump(mode="json"),
        "different": event.different,
        "headline": list(event.headline),
        "findings": event.findings.model_dump(mode="json"),
        "values": values_json,
        "warnings": list(event.warnings),
    }
