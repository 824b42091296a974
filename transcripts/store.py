"""Where transcripts live (``$XDG_STATE_HOME/rigaudit/transcripts``) and how to list them cheaply.

Listing reads a file's first lines (header, session start) and its last line (session end) and
counts its lines; it never parses the whole file.
"""

from __future__ import annotations

import os
import secrets
import stat
from datetime import datetime
from pathlib import Path
from typing import Any

from rigaudit.tools.core.record import Record
from rigaudit.tools.files.bounded import InputError, JsonError, kind_of, loads, open_regular
from rigaudit.tools.files.when import local_stamp
from rigaudit.transcripts.errors import TranscriptError
from rigaudit.transcripts.format import HEADER_KEY, parse_version

SUFFIX = ".jsonl"
_HEAD_LINES = 8
_TAIL_BYTES = 256 * 1024
_CHUNK = 1 << 20
_HEAD_LINE_BYTES = 16 * 1024 * 1024


def state_dir() -> Path:
    """``$XDG_STATE_HOME`` (when absolute), else ``~/.local/state``."""
    xdg = os.environ.get("XDG_STATE_HOME", "")
    return Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "state"


def transcripts_dir() -> Path:
    return state_dir() / "rigaudit" / "transcripts"


def default_transcript_path(command: str, *, now: datetime | None = None) -> Path:
    """A new file name: ``YYYYmmdd-HHMMSS-<command>-<short id>.jsonl`` (local time) in :func:`transcripts_dir`."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in command) or "session"
    return transcripts_dir() / f"{stamp}-{safe}-{secrets.token_hex(3)}{SUFFIX}"


class TranscriptInfo(Record):
    """What ``transcripts list`` shows about one file."""

    path: Path
    version: int | None
    command: str
    host: str
    started_at: float | None
    events: int
    duration_s: float | None
    exit_code: int | None
    """``None`` when the session never recorded its end (still running, or it crashed)."""
    error: str | None = None

    @property
    def started(self) -> str:
        return (local_stamp(self.started_at) if self.started_at is not None else None) or "?"


def _loads(line: bytes) -> dict[str, Any] | None:
    try:
        value = loads(line)
    except JsonError:
        return None
    return value if isinstance(value, dict) else None


def _count_lines(path: Path) -> tuple[int, bool]:
    """Newlines in the file, and whether it ends without one."""
    count, last = 0, b"\n"
    with open(open_regular(path), "rb") as handle:
        while chunk := handle.read(_CHUNK):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count, last != b"\n"


def _last_object(path: Path, size: int) -> dict[str, Any] | None:
    with open(open_regular(path), "rb") as handle:
        handle.seek(max(0, size - _TAIL_BYTES))
        tail = handle.read()
    for line in reversed(tail.splitlines()):
        value = _loads(line)
        if value is not None:
            return value
    return None


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _kind(event: dict[str, Any]) -> object:
    return event.get("type", event.get("kind"))


def _time(event: dict[str, Any]) -> float | None:
    return _number(event.get("t", event.get("ts")))


def inspect_transcript(path: Path) -> TranscriptInfo:
    """Summarize one file from its head and tail; a file that is not a transcript gets ``error`` set."""
    try:
        size = path.stat().st_size
        with open(open_regular(path), "rb") as handle:
            head = [handle.readline(_HEAD_LINE_BYTES) for _ in range(_HEAD_LINES)]
        lines, tail_missing = _count_lines(path)
    except InputError as exc:
        return TranscriptInfo(path, None, "?", "?", None, 0, None, None, error=str(exc))
    except OSError as exc:
        return TranscriptInfo(path, None, "?", "?", None, 0, None, None, error=exc.strerror or str(exc))
    header = _loads(head[0]) if head else None
    version = parse_version(header.get(HEADER_KEY)) if header else None
    if version is None:
        return TranscriptInfo(path, None, "?", "?", None, 0, None, None, error="not a rigaudit transcript")
    events = [e for e in (_loads(line) for line in head[1:] if line.strip()) if e is not None]
    start = next((e for e in events if _kind(e) == "session_started"), None)
    first_t = _time(events[0]) if events else None
    last = _last_object(path, size)
    last_t = _time(last) if last is not None and HEADER_KEY not in last else None
    exit_code = last.get("exit_code") if last is not None and _kind(last) == "session_ended" else None
    return TranscriptInfo(
        path=path,
        version=version,
        command=str(start.get("command", "?")) if start else "?",
        host=str(start.get("host", "") or "?") if start else "?",
        started_at=_time(start) if start else first_t,
        events=max(0, lines + (1 if tail_missing else 0) - 1),
        duration_s=(last_t - first_t) if first_t is not None and last_t is not None else None,
        exit_code=exit_code if isinstance(exit_code, int) else None,
    )


SKIPPED = "skipped, never opened"
"""How an entry named like a transcript that is not a regular file is listed (``a FIFO: skipped, never opened``)."""


def _skipped(path: Path) -> TranscriptInfo | None:
    """The entry for a name that is not a regular file (a FIFO, a device, a socket, a folder, a symbolic link: the
    store holds only files rigaudit wrote), judged without following or opening it; ``None`` for a regular file."""
    try:
        mode = path.lstat().st_mode
    except OSError as exc:
        return TranscriptInfo(path, None, "?", "?", None, 0, None, None, error=f"cannot be read: {exc.strerror or exc}")
    if stat.S_ISREG(mode):
        return None
    return TranscriptInfo(path, None, "?", "?", None, 0, None, None, error=f"{kind_of(mode)}: {SKIPPED}")


def _mtime(path: Path) -> float:
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


def list_transcripts(directory: Path | None = None) -> list[TranscriptInfo]:
    """Every ``*.jsonl`` entry in ``directory`` (default: :func:`transcripts_dir`), newest first; one that is not a
    regular file, or cannot be read, is listed with ``error`` saying why (and never opened)."""
    directory = directory or transcripts_dir()
    try:
        paths = [p for p in directory.iterdir() if p.suffix == SUFFIX]
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise TranscriptError(f"{directory}: cannot list: {exc.strerror or exc}") from None
    infos = [_skipped(p) or inspect_transcript(p) for p in paths]
    infos.sort(key=lambda i: (i.started_at if i.started_at is not None else _mtime(i.path), i.path.name), reverse=True)
    return infos


AUDIT_COMMANDS = ("audit", "apply", "chat")
"""The commands whose sessions can hold an audit (what ``replay --rediagnose`` needs)."""
AUDIT_MARK = b'"audit_finished"'


def _holds(path: Path, mark: bytes) -> bool:
    """Whether the file's bytes contain ``mark`` (read in bounded chunks, never parsed)."""
    try:
        with open(open_regular(path), "rb") as handle:
            tail = b""
            while chunk := handle.read(_CHUNK):
                if mark in tail + chunk:
                    return True
                tail = chunk[-len(mark) :]
    except (InputError, OSError):
        return False
    return False


def _owner(path: Path) -> int | None:
    try:
        return path.lstat().st_uid
    except OSError:
        return None


def find_transcript(
    name: str, directory: Path | None = None, *, commands: tuple[str, ...] | None = None, holding: bytes | None = None
) -> Path:
    """A path as given, ``last`` (the newest), or a unique part of a stored transcript's name.

    ``last`` means the running user's newest session (by the files' owner: a folder others write in too
    holds their sessions) of the kind the caller needs: of one of ``commands``, whose file holds ``holding``
    (``replay last --rediagnose``: the newest session that audited).
    """
    given = Path(name).expanduser()
    if given.exists() or os.sep in name:
        return given
    directory = directory or transcripts_dir()
    infos = list_transcripts(directory)
    if name in ("last", "latest"):
        infos = [i for i in infos if i.error is None]
        if not infos:
            raise TranscriptError(f"no transcripts in {directory}")
        own = [i for i in infos if _owner(i.path) == os.geteuid()]
        if not own:
            raise TranscriptError(
                f"no transcript of yours in {directory} (the newest, {infos[0].path.name}, is uid {_owner(infos[0].path)}'s)"
                "; give its name to replay another person's session"
            )
        infos = own  # a folder several people write in (a shared XDG_STATE_HOME): each person's own newest
        fitting = [
            i for i in infos if (commands is None or i.command in commands) and (holding is None or _holds(i.path, holding))
        ]
        if not fitting:
            kinds = f"of {', '.join(commands)} " if commands else ""
            raise TranscriptError(
                f"no transcript {kinds}in {directory} holds what is needed"
                + (" (an audit)" if holding == AUDIT_MARK else "")
                + f"; the newest is a {infos[0].command} session ({infos[0].path.name})"
            )
        return fitting[0].path
    matches = [i.path for i in infos if name in i.path.name and not (i.error or "").endswith(SKIPPED)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise TranscriptError(f"{name}: no such file, and no transcript in {directory} matches it")
    raise TranscriptError(f"{name}: matches {len(matches)} transcripts in {directory}; give more of the name")
