"""Reading transcripts: header and version check, migrations, tolerant event parsing.

A damaged or truncated line, an event of an unknown type or an invalid event becomes a
warning and is skipped: the valid rest still replays. An audit's result that refers to the findings and the plan
recorded before it gets them back (:mod:`.recorded`), or is skipped with why. A file that is not a transcript at all
raises :class:`TranscriptError` with one line. A transcript is untrusted input: only a regular file
is read, bounded in size, line length and JSON depth.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

from pydantic import TypeAdapter, ValidationError

from rigaudit.tools.core.record import Record, field
from rigaudit.tools.files.bounded import MAX_INPUT_BYTES, MAX_LINE_BYTES, InputError, JsonError, loads, read_regular
from rigaudit.tools.schema.events.audit import AuditFinished, FindingReported
from rigaudit.tools.schema.events.session import SessionEnded, SessionStarted
from rigaudit.tools.schema.events.union import Event
from rigaudit.transcripts.errors import TranscriptError
from rigaudit.transcripts.format import CURRENT_FORMAT, CURRENT_VERSION, HEADER_KEY, parse_version
from rigaudit.transcripts.migrations import OLDEST_SUPPORTED, UNCHANGED_SINCE, migrate_event
from rigaudit.transcripts.recorded import RECORDED_KEY, Recorded

REFERRING_SINCE = 4
"""The first format whose audit results may refer to the findings and the plan recorded before them."""

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
KNOWN_TYPES: frozenset[str] = frozenset(model.model_fields["type"].default for model in get_args(get_args(Event)[0]))
_MAX_DETAILED_WARNINGS = 5


class Transcript(Record, frozen=False):
    """A transcript read into memory: its header, its events (current version) and what was skipped."""

    path: Path
    header: dict[str, Any]
    version: int
    events: list[Event] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    truncated: bool = False
    skipped: int = 0

    @property
    def session(self) -> SessionStarted | None:
        return next((e for e in self.events if isinstance(e, SessionStarted)), None)

    @property
    def ended(self) -> SessionEnded | None:
        return next((e for e in reversed(self.events) if isinstance(e, SessionEnded)), None)

    @property
    def audit(self) -> AuditFinished | None:
        """The last audit result recorded, if the session ran an audit."""
        return next((e for e in reversed(self.events) if isinstance(e, AuditFinished)), None)

    @property
    def findings(self) -> list[FindingReported]:
        """The rules' findings reported (a transcript of an older release reported a model's too: suggestions)."""
        return [e for e in self.events if isinstance(e, FindingReported) and e.finding.source == "rules"]

    @property
    def duration_s(self) -> float:
        return self.events[-1].t - self.events[0].t if self.events else 0.0


def _split_lines(raw: bytes) -> tuple[list[bytes], bool]:
    """The file's lines and whether the last one lacks its newline (the writer always ends one)."""
    lines = raw.split(b"\n")
    tail_missing = lines[-1] != b""
    if not tail_missing:
        lines.pop()
    return lines, tail_missing


def parse_header(line: bytes, path: Path) -> tuple[dict[str, Any], int]:
    """The header object and its version; :class:`TranscriptError` when it is not one we can read."""
    try:
        header = loads(line) if len(line) <= MAX_LINE_BYTES else None
    except JsonError:
        header = None
    version = parse_version(header.get(HEADER_KEY)) if isinstance(header, dict) else None
    if not isinstance(header, dict) or version is None:
        raise TranscriptError(f"{path}: not a rigaudit transcript (no {CURRENT_FORMAT!r} header line)")
    if version > CURRENT_VERSION:
        raise TranscriptError(
            f"{path}: format {header[HEADER_KEY]!r} is newer than this rigaudit reads ({CURRENT_FORMAT!r}); upgrade rigaudit"
        )
    if version < OLDEST_SUPPORTED:
        raise TranscriptError(f"{path}: format {header[HEADER_KEY]!r} is too old to read")
    return header, version


def _read_bytes(path: Path) -> bytes:
    if path.is_dir():
        raise TranscriptError(f"{path}: is a directory, not a transcript")
    if not (path.exists() or path.is_symlink()):
        raise TranscriptError(f"{path}: no such transcript")
    try:
        return read_regular(path, limit=MAX_INPUT_BYTES)
    except InputError as exc:
        raise TranscriptError(str(exc)) from None


class _Problems:
    """Collects skipped lines; the first few are told one by one, the rest counted."""

    def __init__(self) -> None:
        self.unknown: Counter[str] = Counter()
        self.detailed: list[str] = []
        self.others = 0

    def add(self, text: str) -> None:
        if len(self.detailed) < _MAX_DETAILED_WARNINGS:
            self.detailed.append(text)
        else:
            self.others += 1

    def warnings(self) -> list[str]:
        out = list(self.detailed)
        if self.others:
            out.append(f"{self.others} more damaged or invalid line(s) skipped")
        for kind, count in sorted(self.unknown.items()):
            out.append(f"skipped {count} event(s) of unknown type {kind!r} (written by a newer rigaudit?)")
        return out


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return "invalid"
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    return f"{where}: {first.get('msg', 'invalid')}" if where else str(first.get("msg", "invalid"))


def _parse_slow(line: bytes, number: int, version: int, problems: _Problems, recorded: Recorded) -> Event | None:
    """Parse a line the fast path refused (or any line of an older version), explaining why it is skipped (and
    telling ``recorded`` what kind of line was lost)."""
    if len(line) > MAX_LINE_BYTES:
        problems.add(f"line {number}: longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB; skipped")
        recorded.skipped(None)
        return None
    try:
        data = loads(line)
    except JsonError:
        problems.add(f"line {number}: damaged line skipped")
        recorded.skipped(None)
        return None
    if not isinstance(data, dict):
        problems.add(f"line {number}: not a JSON object; skipped")
        recorded.skipped(None)
        return None
    if version < UNCHANGED_SINCE:
        data = migrate_event(data, version)
    kind = data.get("type")
    if not isinstance(kind, str) or kind not in KNOWN_TYPES:
        problems.unknown[str(kind)] += 1
        recorded.skipped(kind)
        return None
    try:
        if kind == "audit_finished" and RECORDED_KEY in data and version >= REFERRING_SINCE:
            data = recorded.restore(data)
        return EVENT_ADAPTER.validate_python(data)
    except ValidationError as exc:
        problems.add(f"line {number}: invalid {kind!r} event skipped ({_first_error(exc)})")
    except ValueError as exc:
        problems.add(f"line {number}: invalid {kind!r} event skipped ({exc})")
    recorded.skipped(kind)
    return None


def iter_lines(raw: bytes, path: Path) -> tuple[dict[str, Any], int, Iterator[tuple[int, bytes]], bool]:
    """Header, version, the numbered event lines and whether the last line is cut short."""
    if not raw.strip():
        raise TranscriptError(f"{path}: empty file, not a rigaudit transcript")
    lines, tail_missing = _split_lines(raw)
    header, version = parse_header(lines[0], path)
    numbered = ((n, line) for n, line in enumerate(lines[1:], start=2) if line.strip())
    return header, version, numbered, tail_missing and len(lines) > 1


def parse_transcript(raw: bytes, path: Path) -> Transcript:
    """Parse a transcript's bytes (see :func:`read_transcript`)."""
    header, version, numbered, tail_missing = iter_lines(raw, path)
    transcript = Transcript(path=path, header=header, version=version)
    problems = _Problems()
    events = transcript.events
    validate_json = EVENT_ADAPTER.validator.validate_json  # the core validator: no per-call wrapper overhead
    recorded = Recorded()
    items = list(numbered)
    last_number = items[-1][0] if items else 0
    for number, line in items:
        event: Event | None = None
        if version >= UNCHANGED_SINCE:
            try:
                event = validate_json(line)
            except (ValidationError, ValueError):
                event = None
        if event is None:
            if number == last_number and tail_missing and not _is_json(line):
                transcript.truncated = True
                continue
            event = _parse_slow(line, number, version, problems, recorded)
            if event is None:
                transcript.skipped += 1
                continue
        recorded.saw(event)
        events.append(event)
    if transcript.truncated:
        transcript.warnings.append(
            f"{path}: the last line is cut short (the session was interrupted?); replaying the {len(events)} event(s) before it"
        )
    transcript.warnings.extend(f"{path}: {w}" for w in problems.warnings())
    return transcript


def _is_json(line: bytes) -> bool:
    try:
        loads(line)
    except JsonError:
        return False
    return True


def read_transcript(path: Path | str) -> Transcript:
    """Read a whole transcript; raises :class:`TranscriptError` for a file that is not one."""
    path = Path(path)
    return parse_transcript(_read_bytes(path), path)
