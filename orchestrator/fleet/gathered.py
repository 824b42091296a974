"""A fleet judged after the fact: the result files its nodes wrote (``rigaudit check --json`` from a
prolog, the Slurm health check or the DaemonSet; ``rigaudit audit --json`` too), one folder of them.

``rigaudit audit --results DIR`` reads every ``*.json`` directly in DIR (regular files only: links
are not followed, at most :data:`MAX_FILES` files of at most :data:`MAX_FILE_BYTES` each). A node is
the machine its result names by its machine id (the ``host_id`` fact: machine-id or product uuid digest);
when a node has several results, the newest is used and the others are named in a warning. A name alone
never merges two results: machines of one name are told apart by their ids (and named with them), and a
result without an id that shares its name with another is kept apart as a node of its own, with a warning
saying why. A file that is not such a result is listed as a failure with its
reason; a check that could not be completed is kept (its checks that ran are compared) with its
reason as a warning. A result dated in the future (the node's clock ran ahead) is named in a warning and never
preferred to one that is not: a clock set right again must not leave a stale result in charge. The outlier
analysis, matrix and plan are the fleet audit's own.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from pydantic import ValidationError

from rigaudit.orchestrator.fleet.analysis import fleet_finished, fleet_result
from rigaudit.orchestrator.fleet.result import FleetResult, HostAudit
from rigaudit.orchestrator.hosts.identity import FACT as IDENTITY_FACT
from rigaudit.orchestrator.hosts.identity import HostIdentity
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.record import Record, replace
from rigaudit.tools.files.bounded import InputError, JsonError, loads, read_regular
from rigaudit.tools.files.when import utc_stamp
from rigaudit.tools.schema.audit import AUDIT_SCHEMA, AuditResult
from rigaudit.tools.schema.check import CHECK_SCHEMA, CheckResult
from rigaudit.tools.schema.events.fleet import FleetStarted, HostAudited, HostFailed, HostFailure
from rigaudit.tools.schema.events.session import Progress
from rigaudit.tools.schema.events.sink import EventSink, discard

MAX_FILES = 10_000
MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_HOST_CHARS = 253
"""A host name, as DNS bounds one: a longer one is no node's (every matrix row and folder name repeats it)."""
MAX_NOTE_CHARS = 300
"""Of a result's reason line, in the fleet's warnings (``rigaudit check`` writes at most 160 characters)."""
FUTURE_SKEW_S = 300.0
"""A result dated more than this past the coordinator's clock is from a node whose clock runs ahead."""
READING = "reading result files"
WRITING = "writing each node's files"
STEPS = 100
"""Progress is told at most this many times a stage (and at its start and end), however many files it has."""

Advance = Callable[[str, int, int], None]
"""``(label, done, total)``: long work advancing."""


def _quiet(label: str, done: int, total: int) -> None:
    return None


def _told(emit: EventSink) -> Advance:
    """An :data:`Advance` that emits a :class:`Progress` event at each hundredth of a stage, and at its start and end."""

    def advance(label: str, done: int, total: int) -> None:
        if done in (0, total) or done % max(1, -(-total // STEPS)) == 0:
            emit(Progress(label=label, done=done, total=total))

    return advance


class _Read(Record):
    file: str
    audit: AuditResult
    facts: dict[str, str]
    when: float
    note: str | None = None


def _error(exc: ValidationError) -> str:
    first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": str(exc)}
    where = ".".join(str(p) for p in first.get("loc", ()))
    return f"{where}: {first.get('msg', '')}" if where else str(first.get("msg", ""))


def _newer_schema(schema: object) -> str | None:
    """The schema a newer rigaudit writes in place of one this one reads (``rigaudit.check/2``), if it is one."""
    if not isinstance(schema, str):
        return None
    for known in (CHECK_SCHEMA, AUDIT_SCHEMA):
        family, _, version = known.rpartition("/")
        name, _, theirs = schema.rpartition("/")
        if name == family and theirs.isdecimal() and version.isdecimal() and int(theirs) > int(version):
            return known
    return None


def _parse(path: Path, data: bytes) -> _Read | str:
    """The result in ``data``, or why it is none."""
    try:
        value = loads(data, allow_nan=False)
    except JsonError as exc:
        return f"not JSON ({exc})"
    schema = value.get("schema") if isinstance(value, dict) else None
    try:
        if schema == CHECK_SCHEMA:
            check = CheckResult.model_validate(value)
            why = check.reason if len(check.reason) <= MAX_NOTE_CHARS else check.reason[: MAX_NOTE_CHARS - 1] + "…"
            unchecked = check.verdict == "could_not_check"
            note = f"{check.host[:MAX_HOST_CHARS]} could not be fully checked: {why}" if unchecked else None
            read = _Read(path.name, check.audit, dict(check.facts), check.finished_at, note)
        elif schema == AUDIT_SCHEMA:
            audit = AuditResult.model_validate(value)
            read = _Read(path.name, audit, {}, _when(audit.started_at, path))
        else:
            known = _newer_schema(schema)
            if known is not None:
                return f"written by a newer rigaudit ({schema}; this one reads {known}): upgrade rigaudit here"
            return f"not a {CHECK_SCHEMA} or {AUDIT_SCHEMA} result"
    except ValidationError as exc:
        return f"not a valid {schema} result ({_error(exc)})"
    name = read.audit.host.name
    if not name.strip():
        return "names no host"
    if len(name) > MAX_HOST_CHARS:
        return f"names a host of {len(name)} characters (a host name has at most {MAX_HOST_CHARS})"
    if not name.isprintable():
        return "names a host with control characters in its name"
    return read


def _when(started_at: str, path: Path) -> float:
    try:
        return datetime.strptime(started_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return path.stat().st_mtime


def _files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise UsageError(f"--results {folder}: not a directory")
    entries: list[Path] = []
    try:  # counted as listed: a folder of millions of entries is refused before it is all in memory
        with os.scandir(folder) as listing:
            for entry in listing:
                if entry.name.endswith(".json") and not entry.name.startswith("."):
                    entries.append(folder / entry.name)
                    if len(entries) > MAX_FILES:
                        raise UsageError(f"--results {folder}: more than {MAX_FILES} result files")
    except OSError as exc:
        raise UsageError(f"--results {folder}: {exc.strerror or exc}") from None
    return sorted(entries, key=lambda p: p.name)


def _read(path: Path) -> bytes | str:
    """The file's bytes, or why not: a regular file, not followed if it is a link, opened so a FIFO cannot hang."""
    try:
        return read_regular(path, limit=MAX_FILE_BYTES, follow=False, what=path.name)
    except InputError as exc:
        reason = str(exc).removeprefix(f"{path}: ").removeprefix(f"{path.name}: ").removesuffix("; refused")
        return "not a regular file (links are not followed)" if reason.startswith("is a symbolic link") else reason


class _Older(Record):
    """A result a newer one of its node replaced: only its name and date are kept (thousands may be, each up to
    :data:`MAX_FILE_BYTES`)."""

    file: str
    when: float


def _future(read: _Read | _Older, now: float) -> bool:
    return read.when > now + FUTURE_SKEW_S


def _dated(when: float) -> str:
    return utc_stamp(when) or f"{when:g} s"


def _identity(read: _Read) -> HostIdentity:
    host = read.audit.host
    return HostIdentity.parse(host.name, host.facts.get(IDENTITY_FACT, "") or read.facts.get(IDENTITY_FACT, ""))


def _key(read: _Read) -> str:
    """Which node ``read`` is of: its machine's strongest id, else its own file (a name merges nothing)."""
    return _identity(read).key() or f"file:{read.file}"


def _labels(newest: dict[str, _Read]) -> tuple[dict[str, str], list[str]]:
    """Each node's target (its host name; with its id, or its file, when machines share the name) and a warning
    for each result kept apart for want of an id."""
    names: dict[str, int] = {}
    for read in newest.values():
        names[read.audit.host.name] = names.get(read.audit.host.name, 0) + 1
    labels: dict[str, str] = {}
    warnings: list[str] = []
    for key, read in newest.items():
        name, identity = read.audit.host.name, _identity(read)
        if names[name] == 1:
            labels[key] = name
        elif identity.known:
            labels[key] = identity.text()
        else:
            labels[key] = f"{name} ({read.file})"
            warnings.append(
                f"{labels[key]}: records no machine identity (machine-id or product uuid), so it is kept apart from the "
                f"other results named {name} (run rigaudit check --json on that machine again)"
            )
    return labels, sorted(warnings)


def read_results(folder: Path, advance: Advance = _quiet) -> FleetResult:
    """The fleet of the result files in ``folder`` (see the module docstring); ``advance`` is told each file read."""
    started = time.perf_counter()
    started_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    newest: dict[str, _Read] = {}
    older: dict[str, list[_Older]] = {}
    failures: list[HostFailure] = []
    now = time.time()
    paths = _files(folder)
    for done, path in enumerate(paths):
        advance(READING, done, len(paths))
        data = _read(path)
        parsed = _parse(path, data) if isinstance(data, bytes) else data
        if isinstance(parsed, str):
            failures.append(HostFailure(target=path.name, stage="collect", error=parsed))
            continue
        host = _key(parsed)
        kept = newest.get(host)
        if kept is None:
            newest[host] = parsed
            continue
        later = (not _future(parsed, now), parsed.when) > (not _future(kept, now), kept.when)
        winner, loser = (parsed, kept) if later else (kept, parsed)
        newest[host] = winner
        older.setdefault(host, []).append(_Older(loser.file, loser.when))
    advance(READING, len(paths), len(paths))
    label, apart = _labels(newest)
    warnings = [
        f"{label[host]}: {len(files) + 1} results, the newest ({newest[host].file}) is used" for host, files in older.items()
    ]
    for host, files in sorted(older.items(), key=lambda item: label[item[0]]):
        warnings += [
            f"{label[host]}: {r.file} is dated {_dated(r.when)}, in the future (the node's clock?): not preferred"
            for r in (_Older(newest[host].file, newest[host].when), *files)
            if _future(r, now)
        ]
    warnings += [
        f"{label[host]}: {r.file} is dated {_dated(r.when)}, in the future (the node's clock?)"
        for host, r in sorted(newest.items(), key=lambda item: label[item[0]])
        if host not in older and _future(r, now)
    ]
    warnings += apart
    warnings += [r.note for r in newest.values() if r.note]
    audits = [
        HostAudit(label[key], "gathered", r.audit, r.facts, 0.0, r.audit.duration_s, None)
        for key, r in sorted(newest.items(), key=lambda item: label[item[0]])
    ]
    return fleet_result(
        [*[a.target for a in audits], *[f.target for f in failures]],
        audits,
        failures,
        kind="gathered",
        started_at=started_at,
        duration_s=time.perf_counter() - started,
        warnings=warnings,
    )


def write_host_files(result: FleetResult, out: Path, advance: Advance = _quiet) -> FleetResult:
    """Each node's ``audit.json`` and ``system-improve.md`` under ``out/hosts/NAME/``, as a fleet audit writes them;
    ``advance`` is told each node written."""
    from rigaudit.orchestrator.fleet.files import write_host_folder
    from rigaudit.orchestrator.fleet.runner import host_names

    names = host_names([a.target for a in result.audits])
    audits = []
    advance(WRITING, 0, len(result.audits))
    for done, audit in enumerate(result.audits, 1):
        folder = out / "hosts" / names[audit.target]
        try:
            write_host_folder(folder, audit.result, audit.result.model_dump_json(by_alias=True, indent=2))
        except OSError as exc:
            raise UsageError(f"--out {out}: cannot write {folder}: {exc.strerror or exc}") from None
        audits.append(replace(audit, folder=folder))
        advance(WRITING, done, len(result.audits))
    return replace(result, audits=tuple(audits))


def read_gathered(folder: Path, out: Path | None = None, emit: EventSink = discard) -> FleetResult:
    """:func:`read_results`, each node's files under ``out`` when given, and the fleet's events as a fleet audit
    emits them (what the terminal shows and the transcript records), after the progress of reading and writing
    (thousands of files take a while: a bar on a terminal)."""
    advance = _told(emit)
    result = read_results(folder, advance)
    if out is not None:
        result = write_host_files(result, out, advance)
    emit(FleetStarted(kind="gathered"))
    for failure in result.failures:
        emit(HostFailed(target=failure.target, stage=failure.stage, error=failure.error))
    for audit in result.audits:
        emit(HostAudited(target=audit.target, problems=audit.problems, seconds=audit.audit_s))
    emit(fleet_finished(result))
    return result


__all__ = ["MAX_FILES", "MAX_FILE_BYTES", "read_gathered", "read_results", "write_host_files"]
