"""TranscriptWriter: appends a session's events to a JSONL file, one flushed line per event.

The first line is the header (``{"transcript": "rigaudit.transcript/4", "created_at": ...}``);
every later line is one event as ``Event`` serializes it, secrets redacted and identifiers (machine and boot ids,
UUIDs, serial numbers, hardware addresses) written as digests (but in the events that hold only
rigaudit's own text, ``verbatim``: the check catalog, a schema, the policy's rules). The reads of a sealed snapshot
(:class:`SnapshotReads`, an area's at once) are written by hand, each path or command as redaction leaves it; the
audit's result refers to the findings and the plan written before it instead of writing them again
(:mod:`.reuse`, :mod:`.recorded`). Each line is flushed as it is written (and fsync'd with ``fsync=True`` or
``RIGAUDIT_TRANSCRIPT_FSYNC=1``), so a crash leaves a readable prefix; only the lines an audit writes by the dozen
(:data:`HELD`: its reads, an investigator's start and end, each finding) wait in the buffer, for the next other event
(the plan follows the findings) or :data:`READS_FLUSH_S` at most. Display-only events are left out.
"""

from __future__ import annotations

import json
import json.encoder
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from rigaudit.tools.core.version import rigaudit_version
from rigaudit.tools.redact import _known, redact_json
from rigaudit.tools.schema.events.audit import (
    FindingReported,
    InvestigatorFinished,
    InvestigatorStarted,
    ReferencedRead,
    SnapshotReads,
    ToolCall,
)
from rigaudit.tools.schema.events.union import Event
from rigaudit.transcripts.format import DUMPS, make_header
from rigaudit.transcripts.references import REFERENCE_KEY
from rigaudit.transcripts.reuse import RedactedParts
from rigaudit.transcripts.tool_calls import OPS, encode_answer

FSYNC_ENV = "RIGAUDIT_TRANSCRIPT_FSYNC"
READS_FLUSH_S = 0.5
"""The longest a line of :data:`HELD` waits in the buffer (a crash loses at most this much of them)."""
HELD = (ToolCall, SnapshotReads, InvestigatorStarted, InvestigatorFinished, FindingReported)


_string: Callable[[str], str] = json.encoder.encode_basestring_ascii  # type: ignore[attr-defined]
"""A JSON string as ``json.dumps`` writes it (ASCII, escaped)."""
_KEPT_MOST = 100_000
_UNSET = object()


def _text(read: ReferencedRead) -> str:
    """One read's JSON in a ``snapshot_reads`` line: ``["read","/proc/x",[],"1f2e..."]``."""
    op, target, args, digest = read
    return f"[{_string(op)},{_string(target)},{DUMPS(args)},{_string(digest)}]"


def _unchanged(op: str, target: str, args: tuple[Any, ...]) -> bool:
    """Whether redaction leaves a read's path or command as it is (else a replay could not name it in the snapshot),
    its operation rigaudit's own."""
    return op in OPS and redact_json(target, ids=True) == target and (not args or redact_json(list(args), ids=True) == list(args))


class _Kept:
    """The reads of a sealed snapshot as a ``snapshot_reads`` line writes them (``None``: a read whose path or command
    redaction changes), while the identifiers redaction knows stay the same (what it learns may change them): a
    read's path, redacted once, is not walked again for every transcript."""

    def __init__(self) -> None:
        self.state = (-1, -1)
        self.texts: dict[ReferencedRead, str | None] = {}

    def current(self) -> dict[ReferencedRead, str | None]:
        """The reads' texts known in the state of now (forgotten when it changed)."""
        state = (_known.epoch(), _known.generation())
        if state != self.state or len(self.texts) > _KEPT_MOST:
            self.state, self.texts = state, {}
        return self.texts

    def text(self, read: ReferencedRead) -> str | None:
        """A read not in :meth:`current`: its text, kept where redaction learned nothing meanwhile."""
        self.current()
        state = self.state
        op, target, args, _ = read
        text = _text(read) if _unchanged(op, target, args) else None
        if (_known.epoch(), _known.generation()) == state:
            self.texts[read] = text
        return text


_KEPT = _Kept()


def _reads_lines(event: SnapshotReads, redact: bool) -> str:
    """The line of an area's reads of a sealed snapshot, written by hand (the same bytes as the model's JSON): its
    digests as they are (rigaudit's hex, of no host text), each path or command as redaction leaves it. A read whose
    path or command redaction changes is a line of its own before it, a :class:`ToolCall` with the answer embedded."""
    kept: list[str] = []
    embedded: list[str] = []
    answers = event._answers
    known = _KEPT.current()
    for number, read in enumerate(event.reads):
        if not redact:
            text: str | None = _text(read)
        else:
            try:
                text = known.get(read, _UNSET)  # type: ignore[arg-type]
            except TypeError:  # an argument no read of rigaudit's has (a list): embedded
                text = None
            if text is _UNSET:
                text = _KEPT.text(read)
                known = _KEPT.current()  # what redaction learned for it makes the texts before it stale
        if text is not None:
            kept.append(text)
            continue
        op, target, args, digest = read
        answer = answers[number] if number < len(answers) else None
        result = encode_answer(answer, op) if answer is not None else {REFERENCE_KEY: digest}  # type: ignore[arg-type]
        call = ToolCall(t=event.t, area=event.area, op=op, target=target, args=list(args), result=result)
        embedded.append(DUMPS(redact_json(call.model_dump(mode="json", by_alias=True), ids=True)))
    if kept:
        area = "null" if event.area is None else _string(event.area)
        embedded.append(f'{{"t":{DUMPS(event.t)},"type":"snapshot_reads","area":{area},"reads":[{",".join(kept)}]}}')
    return "\n".join(embedded)


def encode_event(event: Event, *, redact: bool = True, parts: RedactedParts | None = None) -> str:
    """The transcript line (without its newline) for ``event``: for an area's reads of a sealed snapshot, the lines
    (those embedding a read, then the reads by reference). ``parts``: what this transcript's earlier lines redacted
    and recorded, reused where the audit's result repeats it (:mod:`.reuse`)."""
    if isinstance(event, SnapshotReads):
        return _reads_lines(event, redact)
    if redact and not event.verbatim and parts is not None:
        return parts.line(event)
    data: dict[str, Any] = event.model_dump(mode="json", by_alias=True)
    if redact and not event.verbatim:
        data = redact_json(data, ids=True)
    return DUMPS(data)


class TranscriptWriter:
    """A callable event consumer that records every event; ``close()`` when the session ends.

    Opening raises :class:`OSError` when the file cannot be created. The file is created
    private (mode 0600) and truncated if it exists. Safe to call from several threads.
    """

    def __init__(
        self,
        path: Path | str,
        *,
        fsync: bool | None = None,
        redact: bool = True,
        header: dict[str, Any] | None = None,
    ) -> None:
        self.path = Path(path)
        self.fsync = os.environ.get(FSYNC_ENV, "") not in ("", "0") if fsync is None else fsync
        self.redact = redact
        self.events_written = 0
        self._parts = RedactedParts()
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.is_symlink():  # replaced, never followed (a link planted in a shared folder)
            self.path.unlink()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        self._file = os.fdopen(fd, "w", encoding="utf-8", newline="\n")
        self._closed = False
        self._flushed = time.monotonic()
        self._write_line(json.dumps(make_header(rigaudit=rigaudit_version(), **(header or {})), separators=(",", ":")))

    def _write_line(self, line: str, *, hold: bool = False) -> None:
        self._file.write(line + "\n")
        now = time.monotonic()
        if hold and not self.fsync and now - self._flushed < READS_FLUSH_S:
            return
        self._file.flush()
        self._flushed = now
        if self.fsync:
            os.fsync(self._file.fileno())

    def __call__(self, event: Event) -> None:
        self.write(event)

    def write(self, event: Event) -> None:
        """Append one event (ignored once the writer is closed, or when the event is ``display_only``)."""
        if event.display_only:
            return
        line = encode_event(event, redact=self.redact, parts=self._parts)
        with self._lock:
            if self._closed:
                return
            self._write_line(line, hold=isinstance(event, HELD))
            self.events_written += 1

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._file.close()

    def __enter__(self) -> TranscriptWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TranscriptWriter({str(self.path)!r})"
