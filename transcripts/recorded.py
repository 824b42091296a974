"""The audit's result by reference to what its transcript recorded before it: the findings (each a ``finding`` event)
and the plan (the ``plan`` event) are not written again inside ``audit_finished``.

Such a line leaves ``findings`` or ``plan`` (or both) out of its ``result`` and says what it refers to beside it:
``"recorded": {"findings": N, "plan": true}``, the last ``N`` findings recorded since the previous audit result and
the last plan. :class:`Recorded` follows a transcript's events, as the writer writes them and as the reader reads
them; :meth:`Recorded.restore` puts the parts back. A line that refers to what is not there (more findings than
were recorded, no plan, a finding's or a plan's line skipped as damaged) is refused with why (the reader skips it
with one warning), never guessed.
"""

from __future__ import annotations

from typing import Any

from rigaudit.tools.schema.events.audit import AuditFinished, FindingReported, PlanReady
from rigaudit.tools.schema.finding import Finding
from rigaudit.tools.schema.plan import Plan

RECORDED_KEY = "recorded"
_PARTS = ("findings", "plan")
_LOST_TYPES = (None, "finding", "plan")
"""The lines whose loss makes a reference unsure: a finding's, a plan's, or one whose type cannot be told."""


class Recorded:
    """The findings and the plan a transcript recorded since its last audit result."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.plan: Plan | None = None
        self.lost = False
        """A line that may have been a finding or the plan was skipped since the last audit result."""

    def saw(self, event: object) -> None:
        """Follow one event recorded (written, or read)."""
        if isinstance(event, FindingReported):
            self.findings.append(event.finding)
        elif isinstance(event, PlanReady):
            self.plan = event.plan
        elif isinstance(event, AuditFinished):
            self.findings, self.plan, self.lost = [], None, False

    def skipped(self, kind: object) -> None:
        """A line of type ``kind`` (``None``: unknown) was not read."""
        if kind in _LOST_TYPES or not isinstance(kind, str):
            self.lost = True

    def refers(self, event: AuditFinished) -> tuple[bool, bool]:
        """Whether ``event``'s result may refer to (its findings, its plan) recorded before it: the very objects,
        the findings the last ones recorded and in their order."""
        findings = event.result.findings
        count = len(findings)
        tail = self.findings[-count:] if count else []
        by_findings = 0 < count <= len(self.findings) and all(a is b for a, b in zip(findings, tail, strict=True))
        return by_findings, self.plan is not None and event.result.plan is self.plan

    def restore(self, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` (an ``audit_finished`` line that refers to what was recorded) with its findings and plan put
        back, as models; :class:`ValueError` (one line) when it refers to what is not there."""
        refs, result = data.get(RECORDED_KEY), data.get("result")
        if not isinstance(refs, dict) or not isinstance(result, dict) or not refs or set(refs) - set(_PARTS):
            raise ValueError(f"{RECORDED_KEY!r} names neither {_PARTS[0]!r} nor {_PARTS[1]!r} alone")
        count, plan = refs.get("findings", 0), refs.get("plan", False)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0 or not isinstance(plan, bool):
            raise ValueError(f"{RECORDED_KEY!r} is not a count of findings and whether the plan is recorded")
        if any(refs.get(part) and part in result for part in _PARTS):
            raise ValueError("its result holds what it says was recorded before it")
        if self.lost and (count or plan):
            raise ValueError("it refers to findings or a plan recorded before it, and a line before it was skipped")
        if count > len(self.findings):
            raise ValueError(f"it refers to {count} finding(s) recorded before it; {len(self.findings)} are")
        if plan and self.plan is None:
            raise ValueError("it refers to a plan recorded before it; none is")
        restored = dict(result)
        if count:
            restored["findings"] = self.findings[-count:]
        if plan:
            restored["plan"] = self.plan
        return {key: value for key, value in data.items() if key != RECORDED_KEY} | {"result": restored}
