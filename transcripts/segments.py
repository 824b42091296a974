"""A recorded session cut into its audits (an apply audits twice), and the findings each recorded.

Comparing findings is :func:`rigaudit.tools.diffing.diff_findings`' job (``replay --rediagnose`` and ``diff`` share it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rigaudit.tools.schema.events.audit import AuditFinished, FindingReported
from rigaudit.tools.schema.events.union import Event
from rigaudit.tools.schema.finding import Finding


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
    """The audit result's findings if one was recorded, else the reported findings (last one per check wins): the
    rules' alone (a transcript of an older release reported a model's findings too; they are suggestions)."""
    events = list(events)
    audit = next((e for e in reversed(events) if isinstance(e, AuditFinished)), None)
    if audit is not None:
        return list(audit.result.findings)
    by_check: dict[str, Finding] = {}
    for event in events:
        if isinstance(event, FindingReported) and event.finding.source == "rules":
            by_check[event.finding.check] = event.finding
    return list(by_check.values())
