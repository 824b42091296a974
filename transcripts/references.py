"""Reads recorded by reference: an audit of a sealed snapshot (read-only) records its reads as digests of what the
snapshot answered, not their text; the snapshot already holds the evidence, so the transcript neither copies nor
redacts it. A replay that needs the answers (``replay --rediagnose``, ``diff``) reads them in that snapshot again.

Before the reads, :class:`SnapshotReferenced` names the snapshot (its folder, the SHA-256 of its ``snapshot.json``).
:class:`ReferencedReads` keeps each read as ``(op, target, args, digest)`` (the BLAKE2b digest of the answer), by
area, no event made for it; when an area's investigator ends, its reads are one :class:`SnapshotReads` event.
A transcript of an older release (format 3) recorded each read as a :class:`ToolCall` whose result is
``{"digest": ...}``. :func:`resolve_references` gives the events back with every read a :class:`ToolCall` whose
answer is embedded, as a transcript of a live host holds them; a snapshot that is missing, another one, or one whose
answer changed is one line (:class:`TranscriptError`), never a guess.
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio

from rigaudit.tools.files.bounded import InputError, read_regular
from rigaudit.tools.hosts.base import CommandResult, DirResult, FileResult, Host, NvmlResult
from rigaudit.tools.hosts.probe import HostOpResult
from rigaudit.tools.schema.events.audit import ReferencedRead, SnapshotReads, SnapshotReferenced, ToolCall
from rigaudit.transcripts.errors import TranscriptError
from rigaudit.transcripts.tool_calls import ask, encode_answer, operation, tool_call_from_probe

if TYPE_CHECKING:
    from rigaudit.tools.hosts.snapshot import SnapshotHost
    from rigaudit.tools.schema.events.union import Event

REFERENCE_KEY = "digest"
_MANIFEST_BYTES = 1024 * 1024
"""As :data:`rigaudit.tools.hosts.snapshot.MANIFEST_BYTES` (that module is imported for a snapshot only)."""


def manifest_digest(root: Path) -> str:
    """The SHA-256 of the snapshot's ``snapshot.json`` (its identity); :class:`InputError` when it cannot be read."""
    return hashlib.sha256(read_regular(root / "snapshot.json", limit=_MANIFEST_BYTES, follow=False)).hexdigest()


def snapshot_reference(host: Host) -> SnapshotReferenced | None:
    """The event naming ``host``'s snapshot when its reads can be recorded by reference: a snapshot opened read-only
    (an ``apply`` writes into its copy, so its second audit reads what its first one did not)."""
    snapshots = sys.modules.get("rigaudit.tools.hosts.snapshot")  # not imported: no host is a snapshot (a live audit)
    if snapshots is None or not isinstance(host, snapshots.SnapshotHost) or cast("SnapshotHost", host).writable:
        return None
    root = cast("SnapshotHost", host).root.resolve()
    try:
        return SnapshotReferenced(path=str(root), manifest=manifest_digest(root))
    except (InputError, OSError):
        return None


_BLAKE2B = hashlib.blake2b(digest_size=16)
_FILE = hashlib.blake2b(b"f", digest_size=16)
"""A digest begun, copied for each answer (a copy costs less than a new one: most answers are a few bytes)."""


def _file_digest(data: bytes) -> str:
    digest = _FILE.copy()
    digest.update(data)
    return digest.hexdigest()


def answer_digest(result: HostOpResult) -> str:
    """The digest of one answer: what a replay compares to know the snapshot still answers the same."""
    if isinstance(result, FileResult):
        if result.data is not None:
            return _file_digest(result.data)
        raw = f"e{result.error}".encode()
    elif isinstance(result, DirResult):
        raw = "\0".join(result.entries).encode() if result.entries is not None else f"\1{result.error}".encode()
    elif isinstance(result, CommandResult):
        raw = repr((result.exit_code, result.stdout, result.stderr, result.error, result.truncated)).encode()
    elif isinstance(result, NvmlResult):
        raw = repr((result.value, result.error)).encode()
    else:
        raw = repr(result[1]).encode()
    digest = _BLAKE2B.copy()
    digest.update(raw)
    return digest.hexdigest()


class ReferencedReads:
    """The reads of a sealed snapshot kept by area, cheaply (its ref and the answer, nothing made of them) until
    :meth:`take` makes an area's one :class:`SnapshotReads` event. :meth:`observe` is a probe's observer; ``area``
    tells whose read it is."""

    def __init__(self, area: Callable[[], str | None]) -> None:
        self._area = area
        self._kept: dict[str | None, list[tuple[str, HostOpResult]]] = {}

    def observe(self, ref: str, result: HostOpResult) -> None:
        """Keep one read."""
        area = self._area()
        kept = self._kept.get(area)
        if kept is None:
            self._kept[area] = [(ref, result)]
        else:
            kept.append((ref, result))

    def take(self, area: str | None) -> list[ToolCall | SnapshotReads]:
        """``area``'s reads kept so far, forgotten here: one event by reference (none when there are none), after the
        commands the policy denied (no answer of the snapshot's: each its event, the answer embedded)."""
        reads: list[ReferencedRead] = []
        answers: list[HostOpResult] = []
        denied: list[ToolCall | SnapshotReads] = []
        for ref, result in self._kept.pop(area, ()):
            if type(result) is FileResult and result.data is not None:  # most reads: as operation() names them
                reads.append(("read", result.path, (), _file_digest(result.data)))
            elif isinstance(result, CommandResult) and result.error == "denied":
                denied.append(tool_call_from_probe(area, ref, result))
                continue
            else:
                op, target, args = operation(result, ref)
                reads.append((op, target, tuple(args), answer_digest(result)))
            answers.append(result)
        if not reads:
            return denied
        event = SnapshotReads.model_construct(t=time.time(), area=area, reads=tuple(reads))  # its own reads: not checked
        event._answers = tuple(answers)
        return [*denied, event]

    def take_all(self) -> list[ToolCall | SnapshotReads]:
        """Every area's reads kept so far."""
        return [event for area in list(self._kept) for event in self.take(area)]


def is_reference(result: dict[str, Any]) -> bool:
    return len(result) == 1 and isinstance(result.get(REFERENCE_KEY), str)


def _open(named: SnapshotReferenced, given: Path | None, hint: str) -> SnapshotHost:
    """The snapshot a reference names (or ``given`` in its place), checked to be that one."""
    from rigaudit.tools.hosts.snapshot import SnapshotError, SnapshotHost

    root = given if given is not None else Path(named.path)
    try:
        found = manifest_digest(root)
        host = SnapshotHost(root)
    except (InputError, OSError, SnapshotError) as exc:
        reason = "not found" if not root.exists() else str(exc).removeprefix(f"{root}: ")
        where = f"the transcript's reads are in the snapshot {root}"
        raise TranscriptError(f"{where}, which cannot be read ({reason}){hint}") from None
    if found != named.manifest:
        raise TranscriptError(f"{root} is not the snapshot the transcript audited (its snapshot.json differs){hint}")
    return host


def _as_recorded(call: ToolCall) -> ToolCall:
    """``call`` as a transcript embeds it: its secrets redacted, its identifiers digested (a rebuilt snapshot holds
    what an embedded transcript would have, never more)."""
    from rigaudit.tools.redact import redact_json

    return ToolCall.model_validate(redact_json(call.model_dump(mode="json", by_alias=True), ids=True))


async def _answered(host: SnapshotHost | None, call: ToolCall, hint: str) -> ToolCall:
    """``call`` with the answer of ``host`` (the snapshot named before it) embedded, checked against its digest."""
    if host is None:
        raise TranscriptError("a read recorded by reference names no snapshot (the transcript is damaged)")
    answer = await ask(host, call)
    if answer is None:
        raise TranscriptError(
            f"a read recorded by reference, {call.op} {call.target[:200]!r}, is none rigaudit knows (the transcript is damaged)"
        )
    if answer_digest(answer) != call.result[REFERENCE_KEY]:
        raise TranscriptError(
            f"{host.root} answers {call.op} {call.target} differently than when the transcript recorded it "
            f"(the snapshot changed since){hint}"
        )
    return _as_recorded(call.model_copy(update={"result": encode_answer(answer, call.op)}))


ELSEWHERE = "pass the snapshot it audited with --snapshot DIR"
"""What to do when the snapshot a transcript names is not there as it was (``replay --rediagnose``)."""


async def resolve_references(events: Sequence[Event], snapshot: Path | None = None, *, elsewhere: str = ELSEWHERE) -> list[Event]:
    """``events`` with every read recorded by reference answered from its snapshot (``snapshot``: that snapshot,
    found elsewhere), as a transcript that embeds its reads records them (redacted); the events as they are when
    none is. :class:`TranscriptError` (one line) when the snapshot is missing, is another one, or answers a read
    differently."""
    out: list[Event] = []
    host: SnapshotHost | None = None
    opened: dict[tuple[str, str], SnapshotHost] = {}
    hint = "" if snapshot is not None else f"; {elsewhere}"
    for event in events:
        if isinstance(event, SnapshotReferenced):  # each snapshot opened once, however often a transcript names it
            key = (event.path, event.manifest)
            host = opened[key] if key in opened else opened.setdefault(key, _open(event, snapshot, hint))
        if isinstance(event, SnapshotReads):
            out.extend([await _answered(host, call, hint) for call in _calls(event)])
            continue
        out.append(await _answered(host, event, hint) if isinstance(event, ToolCall) and is_reference(event.result) else event)
    return out


def _calls(event: SnapshotReads) -> list[ToolCall]:
    """Each read of ``event`` as the :class:`ToolCall` by reference a transcript of format 3 recorded."""
    return [
        ToolCall(t=event.t, area=event.area, op=op, target=target, args=list(args), result={REFERENCE_KEY: digest})
        for op, target, args, digest in event.reads
    ]


def resolved(events: Sequence[Event], snapshot: Path | None = None) -> list[Event]:
    """:func:`resolve_references` outside an event loop."""
    if not has_references(events):
        return list(events)
    return anyio.run(resolve_references, events, snapshot)


def has_references(events: Sequence[Event]) -> bool:
    """Whether any read of ``events`` is recorded by reference."""
    return any(isinstance(e, SnapshotReads) or (isinstance(e, ToolCall) and is_reference(e.result)) for e in events)
