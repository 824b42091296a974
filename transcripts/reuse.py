"""A transcript's parts redacted once: the findings and the plan, written each in its own event, are written again
inside the audit's result (:class:`AuditFinished`), and that copy reuses what the first one redacted.

A part is kept by the object it was dumped from (a frozen model) and is reused only while redaction would give the
same text again: nothing learned since (:func:`rigaudit.tools.redact._known.generation`), nor while it was redacted.
The line written is the same, byte for byte, as redacting the whole event would give.
"""

from __future__ import annotations

from typing import Any

from rigaudit.tools.redact import _known, redact_json
from rigaudit.tools.schema.events.audit import AuditFinished, FindingReported, PlanReady
from rigaudit.tools.schema.events.union import Event

_UNSET = object()


def _state() -> tuple[int, int]:
    return _known.epoch(), _known.generation()


class RedactedParts:
    """The redacted JSON of the findings and the plan a writer wrote, by the object each came from."""

    def __init__(self) -> None:
        self._parts: dict[int, tuple[object, tuple[int, int], Any]] = {}

    def _keep(self, source: object, redacted: Any, before: tuple[int, int]) -> None:
        if _state() == before:  # nothing learned while it was redacted: the same text whenever the state is this one
            self._parts[id(source)] = (source, before, redacted)

    def _get(self, source: object) -> Any:
        kept = self._parts.get(id(source))
        if kept is None or kept[0] is not source or kept[1] != _state():
            return _UNSET
        return kept[2]

    def redact(self, event: Event, data: dict[str, Any]) -> Any:
        """``data`` (``event`` dumped) redacted as :func:`redact_json` with ``ids`` redacts it."""
        before = _state()
        if isinstance(event, AuditFinished):
            return self._result(event, data)
        out = redact_json(data, ids=True)
        if isinstance(event, FindingReported):
            self._keep(event.finding, out["finding"], before)
        elif isinstance(event, PlanReady):
            self._keep(event.plan, out["plan"], before)
        return out

    def _result(self, event: AuditFinished, data: dict[str, Any]) -> Any:
        """The result with each finding and the plan already redacted left out of the walk, then put back (the walk
        gives a part the same context wherever it is: the result's keys add none). Where the walk learned a value
        (one the kept parts were not redacted knowing), the whole event is redacted again, knowing it."""
        before = _state()
        out = self._result_reusing(event, data)
        return out if _state() == before else redact_json(data, ids=True)

    def _result_reusing(self, event: AuditFinished, data: dict[str, Any]) -> Any:
        result = data["result"]
        findings = [self._get(f) for f in event.result.findings]
        plan = self._get(event.result.plan)
        walked = dict(result)
        walked["findings"] = [None if f is not _UNSET else d for f, d in zip(findings, result["findings"], strict=True)]
        if plan is not _UNSET:
            walked["plan"] = None
        out = redact_json({**data, "result": walked}, ids=True)
        redacted = dict(out["result"])
        redacted["findings"] = [d if f is _UNSET else f for f, d in zip(findings, redacted["findings"], strict=True)]
        if plan is not _UNSET:
            redacted["plan"] = plan
        return {**out, "result": redacted}
