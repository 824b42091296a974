"""A transcript's parts redacted once: the findings and the plan, written each in its own event, are what the
audit's result (:class:`AuditFinished`) repeats. The result refers to them (:mod:`.recorded`) where the objects it
holds are the very ones recorded and their redaction still stands; where one is not, its copy inside the result
reuses what its own line redacted.

A part (a finding, the plan, a piece of evidence) is redacted on its own (the walk gives it the same context wherever
it is: the events' and the result's keys add none) and kept by its value, in this process, while redaction would
give the same text again: nothing learned since (:func:`rigaudit.tools.redact._known.generation`), nor while it was
redacted. The same host audited again in one process (an ``apply``'s audits before and after, a chat's) redacts only
what changed. The line read back is the same as redacting the whole event would give.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from pydantic import BaseModel

from rigaudit.tools.redact import _known, redact_json
from rigaudit.tools.schema.events.audit import AuditFinished, FindingReported, PlanReady, TopologyReported
from rigaudit.tools.schema.events.union import Event
from rigaudit.transcripts.format import DUMPS
from rigaudit.transcripts.recorded import RECORDED_KEY, Recorded

_MOST_CHARS = 8_000_000
"""What the kept parts' texts may hold at most, in characters (the seed's audit is about 220,000); the oldest go
first."""
_LISTS = ("findings", "suggestions", "evidence")
"""The result's lists of parts."""


def _state() -> tuple[int, int]:
    return _known.epoch(), _known.generation()


class _Parts:
    """Parts redacted before, by their JSON (the same JSON, the same redaction): the redacted text of each, with the
    state of redaction it was redacted in."""

    def __init__(self) -> None:
        self._done: dict[_Key, tuple[tuple[int, int], str]] = {}
        self._chars = 0
        self._lock = threading.Lock()

    def text(self, part: BaseModel, state: tuple[int, int] | None = None) -> str:
        """``part``'s JSON text, redacted as :func:`redact_json` with ``ids`` redacts it where an event holds it
        (``state``: the state of redaction now, where the caller knows it)."""
        key = _key(part)
        done = self._done.get(key)
        before = state or _state()
        if done is not None and done[0] == before:
            return done[1]
        out = DUMPS(redact_json(part.model_dump(mode="json", by_alias=True), ids=True))
        if _state() == before:  # nothing learned while it was redacted: the same text whenever the state is this one
            self._put(key, (before, out))
        return out

    def _put(self, key: _Key, done: tuple[tuple[int, int], str]) -> None:
        size = _size(key) + len(done[1])
        with self._lock:
            old = self._done.pop(key, None)
            if old is not None:
                self._chars -= _size(key) + len(old[1])
            while self._done and self._chars + size > _MOST_CHARS:
                oldest = next(iter(self._done))
                self._chars -= _size(oldest) + len(self._done.pop(oldest)[1])
            if size <= _MOST_CHARS:
                self._done[key] = done
                self._chars += size


_Key = str | tuple[type, tuple[str | bool | None, ...]]
_EXACT = frozenset({str, bool, type(None)})
"""Values whose equality is their JSON's (``True == 1``, ``1 == 1.0``: not these)."""


def _key(part: BaseModel) -> _Key:
    """What tells ``part``'s JSON: its fields' values where each is text, a boolean or none (a piece of evidence),
    else the JSON itself."""
    values = tuple(part.__dict__.values())
    if _EXACT.issuperset(map(type, values)):
        return (type(part), values)  # type: ignore[return-value]
    return part.model_dump_json(by_alias=True)


def _size(key: _Key) -> int:
    return len(key) if isinstance(key, str) else sum(len(v) for v in key[1] if isinstance(v, str))


_PARTS = _Parts()


def _object(pairs: Sequence[tuple[str, str]]) -> str:
    """A JSON object's text from its keys and its values' texts (what :data:`DUMPS` writes for it)."""
    return "{" + ",".join(f"{DUMPS(key)}:{text}" for key, text in pairs) + "}"


def _list(texts: Sequence[str]) -> str:
    return "[" + ",".join(texts) + "]"


_BARE = frozenset({"t", "type"})
"""The fields every event has: a time and its type (nothing to redact in either)."""


def _with(event: FindingReported | PlanReady | TopologyReported, key: str, part: str) -> str:
    """``event``'s line, redacted, but for ``key``: ``part`` (already redacted) there, as the model orders it."""
    if type(event).model_fields.keys() == {*_BARE, key}:  # a finding's, the plan's: nothing else to redact
        return f'{{"t":{DUMPS(event.t)},"type":"{event.type}","{key}":{part}}}'
    out = redact_json(event.model_dump(mode="json", by_alias=True, exclude={key}), ids=True)
    return _object([*((k, DUMPS(v)) for k, v in out.items()), (key, part)])


class RedactedParts:
    """A writer's parts: the findings and the plan it recorded (:class:`Recorded`), redacted once (:data:`_PARTS`)."""

    def __init__(self) -> None:
        self._recorded = Recorded()
        self._states: set[tuple[int, int]] = set()
        """The states of redaction the findings' and the plan's lines since the last result were written in."""

    def line(self, event: Event) -> str:
        """``event``'s line, redacted as :func:`redact_json` with ``ids`` redacts it; of the audit's result, what it
        repeats referred to or reused."""
        before = _state()
        if isinstance(event, FindingReported):
            out = _with(event, "finding", _PARTS.text(event.finding))
        elif isinstance(event, PlanReady):
            out = _with(event, "plan", _PARTS.text(event.plan))
        elif isinstance(event, AuditFinished):
            out = self._result(event)
            self._states = set()
        elif isinstance(event, TopologyReported):
            state = _state()
            out = _with(event, "devices", _list([_PARTS.text(d, state) for d in event.devices]))
        else:
            out = DUMPS(redact_json(event.model_dump(mode="json", by_alias=True), ids=True))
        if isinstance(event, (FindingReported, PlanReady)):
            self._states |= {before, _state()}
        self._recorded.saw(event)
        return out

    def _result(self, event: AuditFinished) -> str:
        """The result's findings and plan referred to (not even dumped) where recorded before it and their lines'
        redaction still stands (nothing learned since); each other part redacted on its own (or reused), then the
        rest. Where a value was learned meanwhile (one the parts before were not redacted knowing), the whole event
        is redacted again, knowing it."""
        before = _state()
        result = event.result
        by_findings, by_plan = self._recorded.refers(event) if self._states <= {before} else (False, False)
        recorded: dict[str, int | bool] = {"findings": len(result.findings)} if by_findings else {}
        if by_plan:
            recorded["plan"] = True
        text = _PARTS.text
        parts = {key: _list([text(p, before) for p in getattr(result, key)]) for key in _LISTS if key not in recorded}
        if "plan" not in recorded:
            parts["plan"] = text(result.plan)
        out = redact_json(event.model_dump(mode="json", by_alias=True, exclude={"result": {*_LISTS, "plan"}}), ids=True)
        if _state() != before:
            return DUMPS(redact_json(event.model_dump(mode="json", by_alias=True), ids=True))
        texts = {key: DUMPS(value) for key, value in out["result"].items()} | parts
        result_text = _object([(key, texts[key]) for key in _keys(type(result)) if key in texts])  # as the model orders
        pairs = [*((k, DUMPS(v)) for k, v in out.items() if k != "result"), ("result", result_text)]
        return _object([*pairs, (RECORDED_KEY, DUMPS(recorded))] if recorded else pairs)


def _keys(model: type[BaseModel]) -> list[str]:
    """The keys of ``model``'s JSON (by alias), in its order."""
    return [info.alias or name for name, info in model.model_fields.items()]
