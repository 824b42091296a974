"""Compare the findings a transcript recorded with the findings today's investigators reach.

A finding is identified by its check id (one finding per check per host). Changes are:
``appeared`` (now a problem, was not), ``resolved`` (was a problem, is not), ``status`` (another
status change), ``severity``, ``changed`` (same verdict, other details: observed, expected,
subjects, fix), ``new`` (a check the recording did not have) and ``dropped`` (a check no longer made).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from tools.model.finding import Finding
from transcripts.events import AuditFinished, Event, FindingReported

ChangeKind = Literal["appeared", "resolved", "status", "severity", "changed", "new", "dropped"]
_ORDER: dict[str, int] = {"appeared": 0, "resolved": 1, "status": 2, "severity": 3, "new": 4, "dropped": 5, "changed": 6}


@dataclass(frozen=True)
class FindingChange:
    kind: ChangeKind
    check: str
    before: Finding | None
    after: Finding | None
    detail: str

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "check": self.check,
            "detail": self.detail,
            "before": self.before.model_dump(mode="json") if self.before else None,
            "after": self.after.model_dump(mode="json") if self.after else None,
        }


def verdict(finding: Finding) -> str:
    """``problem (medium)``, ``ok``, ``unknown``..."""
    return f"{finding.status} ({finding.severity})" if finding.status == "problem" and finding.severity else finding.status


def audit_segments(events: Sequence[Event]) -> list[list[Event]]:
    """The events split after each :class:`AuditFinished` (an ``apply`` session audits before and after).

    A trailing segment without an audit result is kept only when it holds findings (an interrupted audit).
    """
    segments: list[list[Event]] = []
    current: list[Event] = []
    for event in events:
        current.append(event)
        if isinstance(event, AuditFinished):
            segments.append(current)
            current = []
    if current and (not segments or any(isinstance(e, FindingReported) for e in current)):
        segments.append(current)
    return segments


def recorded_findings(events: Iterable[Event]) -> list[Finding]:
    """The audit result's findings if one was recorded, else the reported findings (last one per check wins)."""
    events = list(events)
    audit = next((e for e in reversed(events) if isinstance(e, AuditFinished)), None)
    if audit is not None:
        return list(audit.result.findings)
    by_check: dict[str, Finding] = {}
    for event in events:
        if isinstance(event, FindingReported):
            by_check[event.finding.check] = event.finding
    return list(by_check.values())


def _details(before: Finding, after: Finding) -> list[str]:
    out: list[str] = []
    if before.observed != after.observed:
        out.append(f"observed {before.observed!r} -> {after.observed!r}")
    if before.expected != after.expected:
        out.append(f"expected {before.expected!r} -> {after.expected!r}")
    if before.subjects != after.subjects:
        out.append(f"subjects {', '.join(before.subjects) or '-'} -> {', '.join(after.subjects) or '-'}")
    if before.fix != after.fix:
        out.append("fix changed")
    return out


def _change(before: Finding, after: Finding) -> FindingChange | None:
    check = after.check
    if before.status != after.status:
        if after.status == "problem":
            kind: ChangeKind = "appeared"
        elif before.status == "problem":
            kind = "resolved"
        else:
            kind = "status"
        return FindingChange(kind, check, before, after, f"{verdict(before)} -> {verdict(after)}")
    if before.severity != after.severity:
        return FindingChange("severity", check, before, after, f"severity {before.severity} -> {after.severity}")
    details = _details(before, after)
    if details:
        return FindingChange("changed", check, before, after, "; ".join(details))
    return None


def compare_findings(recorded: Iterable[Finding], current: Iterable[Finding]) -> list[FindingChange]:
    """Every difference, most important first (then by check id)."""
    before = {f.check: f for f in recorded}
    after = {f.check: f for f in current}
    changes: list[FindingChange] = []
    for check, finding in after.items():
        old = before.get(check)
        if old is None:
            changes.append(FindingChange("new", check, None, finding, f"new check: {verdict(finding)}"))
            continue
        change = _change(old, finding)
        if change is not None:
            changes.append(change)
    for check, finding in before.items():
        if check not in after:
            changes.append(FindingChange("dropped", check, finding, None, f"no longer checked (was {verdict(finding)})"))
    changes.sort(key=lambda c: (_ORDER[c.kind], c.check))
    return changes
