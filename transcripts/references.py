"""Reads recorded by reference: an audit of a sealed snapshot (read-only) records each read as a digest of what the
snapshot answered, not its text; the snapshot already holds the evidence, so the transcript neither copies nor
redacts it. A replay that needs the answers (``replay --rediagnose``, ``diff``) reads them in that snapshot again.

Before the reads, :class:`SnapshotReferenced` names the snapshot (its folder, the SHA-256 of its ``snapshot.json``);
each :class:`ToolCall` then holds ``{"digest": ...}``, the BLAKE2b digest of the answer. :func:`resolve_references`
gives the events back with the answers embedded, as a transcript of a live host holds them; a snapshot that is
missing, another one, or one whose answer changed is one line (:class:`TranscriptError`), never a guess.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio

from rigaudit.tools.files.bounded import InputError, read_regular
from rigaudit.tools.hosts.base import CommandResult, DirResult, FileResult, Host, NvmlResult
from rigaudit.tools.hosts.probe import HostOpResult
from rigaudit.tools.schema.events.audit import SnapshotReferenced, ToolCall
from rigaudit.transcripts.errors import TranscriptError
from rigaudit.transcripts.tool_calls import ask, encode_answer, encode_result, operation

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


def answer_digest(result: HostOpResult) -> str:
    """The digest of one answer: what a replay compares to know the snapshot still answers the same."""
    h = hashlib.blake2b(digest_size=16)
    if isinstance(result, FileResult):
        h.update(b"f" + result.data if result.data is not None else f"e{result.error}".encode())
    elif isinstance(result, DirResult):
        h.update("\0".join(result.entries).encode() if result.entries is not None else f"\1{result.error}".encode())
    elif isinstance(result, CommandResult):
        h.update(repr((result.exit_code, result.stdout, result.stderr, result.error, result.truncated)).encode())
    elif isinstance(result, NvmlResult):
        h.update(repr((result.value, result.error)).encode())
    else:
        h.update(repr(result[1]).encode())
    return h.hexdigest()


def reference_call(area: str | None, ref: str, result: HostOpResult) -> ToolCall:
    """The event for one read of a sealed snapshot: its digest, the answer kept aside (never serialized). A command
    the policy denied is no answer of the snapshot's: it is embedded."""
    if isinstance(result, CommandResult) and result.error == "denied":
        op, target, args, encoded = encode_result(result, ref)
        return ToolCall(area=area, op=op, target=target, args=args, result=encoded)
    op, target, args = operation(result, ref)
    call = ToolCall(area=area, op=op, target=target, args=args, result={REFERENCE_KEY: answer_digest(result)})
    call._answer = result
    return call


def is_reference(result: dict[str, Any]) -> bool:
    return len(result) == 1 and isinstance(result.get(REFERENCE_KEY), str)


def embedded(call: ToolCall) -> ToolCall:
    """``call`` with its answer embedded, where it was kept aside (what is written when it cannot be referenced)."""
    answer = call._answer
    if answer is None or not is_reference(call.result):
        return call
    return call.model_copy(update={"result": encode_answer(answer, call.op)})  # type: ignore[arg-type]


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
    if answer is None or answer_digest(answer) != call.result[REFERENCE_KEY]:
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
        out.append(await _answered(host, event, hint) if isinstance(event, ToolCall) and is_reference(event.result) else event)
    return out


def resolved(events: Sequence[Event], snapshot: Path | None = None) -> list[Event]:
    """:func:`resolve_references` outside an event loop."""
    if not has_references(events):
        return list(events)
    return anyio.run(resolve_references, events, snapshot)


def has_references(events: Sequence[Event]) -> bool:
    """Whether any read of ``events`` is recorded by reference."""
    return any(isinstance(e, ToolCall) and is_reference(e.result) for e in events)
