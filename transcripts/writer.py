"""TranscriptWriter: appends a session's events to a JSONL file, one flushed line per event.

The first line is the header (``{"transcript": "rigaudit.transcript/1", "created_at": ...}``);
every later line is one event as ``Event`` serializes it, secrets redacted and identifiers (machine and boot ids,
UUIDs, serial numbers, hardware addresses) written as digests (but in the events that hold only
rigaudit's own text, ``verbatim``: the check catalog, a schema, the policy's rules); the findings and the plan,
written again inside the audit's result, reuse what their own lines redacted (:mod:`.reuse`). Each line is
flushed as it is written (and fsync'd with ``fsync=True`` or ``RIGAUDIT_TRANSCRIPT_FSYNC=1``), so a
crash leaves a readable prefix; only the lines of host reads (:class:`ToolCall`, the bulk of an audit) wait in the
buffer, for the next other event or :data:`READS_FLUSH_S` at most. Display-only events are left
out.
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
from rigaudit.tools.schema.events.audit import ToolCall
from rigaudit.tools.schema.events.union import Event
from rigaudit.transcripts.format import make_header
from rigaudit.transcripts.references import REFERENCE_KEY, embedded, is_reference
from rigaudit.transcripts.reuse import RedactedParts

FSYNC_ENV = "RIGAUDIT_TRANSCRIPT_FSYNC"
READS_FLUSH_S = 0.5
"""The longest a recorded host read waits in the buffer (a crash loses at most this much of the reads)."""


_DUMPS = json.JSONEncoder(separators=(",", ":")).encode
"""``json.dumps`` with these separators, its encoder made once (not for every line)."""
_string: Callable[[str], str] = json.encoder.encode_basestring_ascii  # type: ignore[attr-defined]
"""A JSON string as ``json.dumps`` writes it (ASCII, escaped)."""
_KEPT_MOST = 100_000


class _Kept:
    """The paths and commands redaction leaves as they are, while the identifiers it knows stay the same (what it
    learns may change them): a read's path, redacted once, is not walked again for every transcript."""

    def __init__(self) -> None:
        self.state = (-1, -1)
        self.texts: set[str | tuple[str, ...]] = set()

    def unchanged(self, text: str | tuple[str, ...], value: Any) -> bool:
        state = (_known.epoch(), _known.generation())
        if state != self.state or len(self.texts) > _KEPT_MOST:
            self.state, self.texts = state, set()
        if text in self.texts:
            return True
        same: bool = redact_json(value, ids=True) == value
        if same and (_known.epoch(), _known.generation()) == state:
            self.texts.add(text)
        return same


_KEPT = _Kept()


def _reference_line(call: ToolCall) -> str | None:
    """The line of a read recorded by reference: its digest as it is (rigaudit's, of no host text), its path or
    command as redaction leaves it; ``None`` where redaction changes them (a replay could not name the read in the
    snapshot), so that the answer kept aside is embedded instead."""
    if not _KEPT.unchanged(call.target, call.target):
        return None
    if call.args and not _KEPT.unchanged(tuple(str(a) for a in call.args), call.args):
        return None
    area = "null" if call.area is None else _string(call.area)
    args = _DUMPS(call.args) if call.args else "[]"
    result = _string(call.result[REFERENCE_KEY])
    return (
        f'{{"t":{float.__repr__(call.t)},"type":"tool_call","area":{area},"op":{_string(call.op)},'
        f'"target":{_string(call.target)},"args":{args},"result":{{"{REFERENCE_KEY}":{result}}}}}'
    )


def encode_event(event: Event, *, redact: bool = True, parts: RedactedParts | None = None) -> str:
    """One transcript line (without its newline) for ``event``; ``parts``: what this transcript's earlier lines
    redacted, reused where it is written again (the same line either way)."""
    if redact and isinstance(event, ToolCall) and is_reference(event.result):
        line = _reference_line(event)
        if line is not None:
            return line
        event = embedded(event)
    data: dict[str, Any] = event.model_dump(mode="json", by_alias=True)
    if redact and not event.verbatim:
        data = parts.redact(event, data) if parts is not None else redact_json(data, ids=True)
    return _DUMPS(data)


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
            self._write_line(line, hold=isinstance(event, ToolCall))
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
