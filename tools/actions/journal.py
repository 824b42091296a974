"""The apply journal: an append-only JSONL file, one :class:`JournalEntry` a line, fsynced per entry.

A change is journaled ``planned`` (with the value before it and its revert) and fsynced *before*
the host is touched (the planned entries of one step are fsynced together, before any of its
targets is written); its outcome (``verified``, ``applied``, ``reverted``, ``failed``) follows as a
separate entry pointing back at it (``ref``). Rollback reads the file backwards: a ``planned``
entry without an outcome (the process was killed) is restored like any other.

Every entry is sealed (:mod:`~rigaudit.tools.actions.seal`: a keyed MAC chained over the entries, with
a key only this user can read), and the file is made with mode 0600 in a folder no one else may write
(:mod:`~rigaudit.tools.actions.custody`; the default folder is made with mode 0700): rollback honours a
journal only when both hold.
"""

from __future__ import annotations

import contextlib
import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rigaudit.tools.actions.custody import folder_problem
from rigaudit.tools.actions.seal import SealError, digest, load_key, seal
from rigaudit.tools.actions.targets import Target
from rigaudit.tools.core.errors import OperationError
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.files.bounded import InputError, JsonError, iter_lines, loads
from rigaudit.tools.schema.plan import Plan

JOURNAL_SCHEMA = "rigaudit.journal/1"
MAX_JOURNAL_BYTES = 64 * 1024 * 1024
"""A journal of thousands of changes is a few MiB; a larger file is not one an apply wrote."""
EntryKind = Literal["session", "approval", "change", "skip"]
"""``skip``: a step apply did not run, and why (its plan edges)."""
ChangeState = Literal["planned", "applied", "verified", "reverted", "failed"]
Decision = Literal["yes", "no", "all", "quit", "auto"]


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Approval(BaseModel):
    """One decision about one step (or ``persist``, or a benchmark), bound to the plan's hash."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    step_id: str
    decision: Decision
    who: str
    """``user@machine`` of the person (or ``--yes``) who decided."""
    when: str = Field(default_factory=utc_now)
    plan_hash: str = ""
    note: str = ""

    @property
    def approved(self) -> bool:
        return self.decision in ("yes", "all", "auto")


class JournalEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: str = Field(default=JOURNAL_SCHEMA, alias="schema")
    seq: int
    at: str = Field(default_factory=utc_now)
    kind: EntryKind
    state: ChangeState | None = None
    ref: int | None = None
    """For an outcome: the ``seq`` of the ``planned`` entry it concludes."""
    step_id: str = ""
    target: Target | None = None
    before: str | None = None
    """The value before the change (``None``: the file did not exist)."""
    after: str | None = None
    revert: str = ""
    """How a person would undo it by hand."""
    message: str = ""
    approval: Approval | None = None
    host: str = ""
    source: str = ""
    host_id: str = ""
    """The session's machine: ``machine-id:<digest>`` (:func:`rigaudit.tools.bench.machine.token`; older journals: the raw
    id, compared by its digest); rollback refuses another machine."""
    plan_hash: str = ""
    plan: Plan | None = None
    """The session's plan, whose hash is ``plan_hash``: rollback undoes only its targets."""
    seal: str = ""
    """The entry's keyed MAC, chained to the one before (:mod:`~rigaudit.tools.actions.seal`)."""


class JournalError(OperationError):
    """The journal cannot be written; the message says which file and why."""


class JournalReadError(InputError):
    """The file is not a journal, or cannot be read; the message says which file and why."""


def default_journal_path(now: datetime | None = None) -> Path:
    """``$XDG_STATE_HOME/rigaudit/journals/<UTC timestamp>.jsonl`` (fallback ``~/.local/state``)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%S.%fZ")
    return Path(base) / "rigaudit" / "journals" / f"{stamp}.jsonl"


class Journal:
    """Appends entries to a journal file, durably (flush + fsync after each one)."""

    def __init__(self, path: Path, handle: IO[str], next_seq: int, key: bytes, previous: str = "") -> None:
        self.path = path
        self._handle = handle
        self._seq = next_seq
        self._key = key
        self._previous = previous

    @classmethod
    def create(cls, path: Path) -> Journal:
        """A new journal (mode 0600, in a folder no one else may write); refuses to overwrite one that has content."""
        key = _key(path, create=True)
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            problem = folder_problem(path.parent)
            if problem is not None:
                raise JournalError(f"{path}: refusing to journal there: {problem} (rollback would not honour it)")
            if path.exists() and path.stat().st_size > 0:
                raise JournalError(f"{path}: a journal already exists there (choose another --journal)")
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            handle = os.fdopen(fd, "a", encoding="utf-8")
        except OSError as exc:
            raise JournalError(f"{path}: cannot write the journal: {exc.strerror or exc}") from None
        _fsync_dir(path.parent)
        return cls(path, handle, 1, key)

    @classmethod
    def reopen(cls, path: Path) -> Journal:
        """Append to an existing journal (rollback records what it restored), its seals chained on."""
        read = read_journal_lines(path)
        key = _key(path, create=False)
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW)
            if os.fstat(fd).st_size and os.pread(fd, 1, os.fstat(fd).st_size - 1) != b"\n":
                os.write(fd, b"\n")  # a line torn by a kill stays one damaged line, not the start of the next
            handle = os.fdopen(fd, "a", encoding="utf-8")
        except OSError as exc:
            raise JournalError(f"{path}: cannot append to the journal: {exc.strerror or exc}") from None
        previous = read.entries[-1].seal if read.entries else ""
        return cls(path, handle, max(read.last_seq, *(e.seq for e in read.entries)) + 1, key, previous)

    def append(self, *, sync: bool = True, **fields: object) -> JournalEntry:
        """Write one entry; with ``sync`` (the default) it is on disk (fsync) before this returns.

        ``sync=False`` lets a caller write several entries and :meth:`sync` them at once, before
        it touches the host.
        """
        entry = JournalEntry.model_validate({"seq": self._seq, **fields, "seal": ""})
        empty = {name for name, value in entry if value == "" and name != "schema_"}
        line = entry.model_dump_json(by_alias=True, exclude_none=True, exclude=empty)
        self._previous = seal(self._key, self._previous, json.loads(line))
        line = f'{line[:-1]},"seal":"{self._previous}"}}'
        entry = entry.model_copy(update={"seal": self._previous})
        try:
            self._handle.write(line + "\n")
        except OSError as exc:
            raise JournalError(f"{self.path}: cannot write the journal: {exc.strerror or exc}") from None
        self._seq += 1
        if sync:
            self.sync()
        return entry

    def sync(self) -> None:
        """Flush and fsync everything appended so far."""
        try:
            self._handle.flush()
            os.fsync(self._handle.fileno())
        except OSError as exc:
            raise JournalError(f"{self.path}: cannot write the journal: {exc.strerror or exc}") from None

    def close(self) -> None:
        with contextlib.suppress(JournalError):
            self.sync()
        self._handle.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _key(path: Path, *, create: bool) -> bytes:
    try:
        return load_key(create=create)
    except SealError as exc:
        raise JournalError(f"{path}: cannot seal the journal: {exc}") from None


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class JournalRead(Record, frozen=False):
    """A journal as read: its valid entries, a warning per line skipped, and which lines those were."""

    path: Path
    entries: list[JournalEntry] = field(default_factory=list)
    digests: list[bytes] = field(default_factory=list)
    """For each entry, what its seal covers (:func:`rigaudit.tools.actions.seal.digest`)."""
    warnings: list[str] = field(default_factory=list)
    damaged: list[int] = field(default_factory=list)
    last_line: int = 0
    last_seq: int = 0
    """The highest ``seq`` of any line, ignored ones included (an append continues after it)."""


def read_journal_lines(path: Path) -> JournalRead:
    """Read a journal (untrusted: bounded, regular file only); :class:`JournalReadError` when it has no entry."""
    read = JournalRead(path)
    if path.is_dir():
        raise JournalReadError(f"{path}: is a directory, not a journal")
    try:
        for number, line in iter_lines(path, limit=MAX_JOURNAL_BYTES, what=str(path)):
            read.last_line = number
            if line is None or not line.strip():
                if line is None:
                    read.damaged.append(number)
                    read.warnings.append(f"{path.name}:{number}: line too long; ignored")
                continue
            _parse_line(read, number, line)
    except InputError as exc:
        if not (path.exists() or path.is_symlink()):
            raise JournalReadError(f"{path}: no such journal") from None
        raise JournalReadError(str(exc)) from None
    if not read.entries and not read.warnings:
        raise JournalReadError(f"{path}: the journal is empty")
    if not read.entries:
        raise JournalReadError(f"{path}: not a rigaudit journal ({read.warnings[0]})")
    return read


def _parse_line(read: JournalRead, number: int, line: bytes) -> None:
    name = read.path.name
    try:
        raw = loads(line)
    except JsonError:
        read.damaged.append(number)
        read.warnings.append(f"{name}:{number}: damaged line ignored")
        return
    seq = raw.get("seq") if isinstance(raw, dict) else None
    if isinstance(seq, int) and not isinstance(seq, bool) and seq < 2**62:
        read.last_seq = max(read.last_seq, seq)
    if not isinstance(raw, dict) or raw.get("schema") != JOURNAL_SCHEMA:
        read.damaged.append(number)
        read.warnings.append(f"{name}:{number}: not a {JOURNAL_SCHEMA} entry; ignored")
        return
    if raw.get("kind") == "session" and any(e.kind == "session" for e in read.entries):
        read.damaged.append(number)  # one apply, one session: a second is not validated (its plan can be large)
        read.warnings.append(f"{name}:{number}: a second session entry; ignored")
        return
    try:
        read.entries.append(JournalEntry.model_validate(raw))
        read.digests.append(digest(raw))
    except ValidationError as exc:
        read.damaged.append(number)
        read.warnings.append(f"{name}:{number}: invalid entry ({exc.error_count()} error(s)); ignored")


def read_journal(path: Path) -> tuple[list[JournalEntry], list[str]]:
    """All entries of a journal, and one warning per damaged line (a torn last line after a kill)."""
    read = read_journal_lines(path)
    return read.entries, read.warnings


__all__ = [
    "JOURNAL_SCHEMA",
    "Approval",
    "ChangeState",
    "Decision",
    "Journal",
    "JournalEntry",
    "JournalError",
    "JournalRead",
    "JournalReadError",
    "default_journal_path",
    "read_journal",
    "read_journal_lines",
    "utc_now",
]
