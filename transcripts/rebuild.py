"""Rebuild a snapshot directory (``docs/snapshot-format.md``) from a transcript's tool calls.

Every path that was read, listed, checked or readlink'd reads back as it did: links recorded by
``readlink`` go to ``links.json`` and everything else is stored under its path *resolved through
those links*, exactly as :class:`SnapshotHost` resolves it on the way back. An entry that was only
listed (or only found to exist) and never read is recorded as unreadable ``NOT_RECORDED``, so a
newer rule that reads it gets an honest "not recorded" instead of a guess.
:func:`verify_rebuild` replays every tool call against the rebuilt snapshot and names any difference.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rigaudit.tools.core.record import Record, field
from rigaudit.tools.files.when import utc_stamp
from rigaudit.tools.hosts.base import CommandResult, DirResult, FileResult, NvmlResult
from rigaudit.tools.hosts.links import resolve_links
from rigaudit.tools.hosts.mirror import Mirror, MirrorError
from rigaudit.tools.hosts.probe import HostOpResult
from rigaudit.tools.hosts.snapshot import SNAPSHOT_FORMAT, SnapshotHost
from rigaudit.tools.schema.events.audit import AuditFinished, ToolCall
from rigaudit.tools.schema.events.session import SessionStarted
from rigaudit.tools.schema.events.union import Event
from rigaudit.transcripts.tool_calls import ask, decode_data, host_result

NOT_RECORDED = "NOT_RECORDED"
"""The read error of a path the session saw (listed, or found to exist) but never read."""
_MAX_MISMATCHES = 20


def resolve(links: dict[str, str], path: str) -> str:
    """Resolve ``path`` through ``links`` component by component (the same walk as SnapshotHost)."""
    return resolve_links(links, path)


def _link_key(links: dict[str, str], path: str) -> str:
    parent, name = posixpath.split(posixpath.normpath(path))
    return posixpath.join(resolve(links, parent), name)


def _links_from(calls: list[ToolCall], warnings: list[str]) -> dict[str, str]:
    """Links keyed as SnapshotHost looks them up (their folder resolved), iterated to a fixed point."""
    raw: dict[str, str] = {}
    for call in calls:
        target = call.result.get("target")
        if call.op == "readlink" and isinstance(target, str) and target:
            raw.setdefault(posixpath.normpath(call.target), target)
    links = dict(raw)
    for _ in range(8):
        keyed: dict[str, str] = {}
        for path, target in raw.items():
            key = _link_key(links, path)
            if keyed.setdefault(key, target) != target:
                warnings.append(f"{key}: read as a link to both {keyed[key]!r} and {target!r}; kept the first")
        if keyed == links:
            break
        links = keyed
    return links


def _ancestors(path: str) -> Iterable[str]:
    while path not in ("/", ""):
        path = posixpath.dirname(path)
        yield path


class RebuildReport(Record, frozen=False):
    root: Path
    files: int = 0
    links: int = 0
    dirs: int = 0
    unreadable: int = 0
    commands: int = 0
    nvml: int = 0
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{self.files} files, {self.links} links, {self.dirs} dirs, {self.unreadable} unreadable, "
            f"{self.commands} commands, {self.nvml} NVML calls"
        )


class _Tree(Record, frozen=False):
    links: dict[str, str]
    files: dict[str, bytes] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    unreadable: dict[str, str] = field(default_factory=dict)
    listed: dict[str, list[str]] = field(default_factory=dict)
    present: set[str] = field(default_factory=set)

    def add(self, call: ToolCall, warnings: list[str]) -> None:
        path = resolve(self.links, call.target)
        result = call.result
        if call.op == "read":
            data = decode_data(result)
            error = str(result.get("error") or "ENOENT")
            if data is not None:
                if self.files.setdefault(path, data) != data:
                    warnings.append(f"{path}: read twice with different contents; kept the first")
            elif error == "EISDIR":
                self.dirs.add(path)
            elif error != "ENOENT":
                self.unreadable.setdefault(path, error)
        elif call.op == "list_dir":
            entries = result.get("entries")
            if isinstance(entries, list):
                self.dirs.add(path)
                self.listed.setdefault(path, [str(e) for e in entries])
            elif result.get("error") not in (None, "ENOENT"):
                self.present.add(path)
        elif call.op == "exists" and result.get("exists") is True:
            self.present.add(path)

    def finish(self, warnings: list[str]) -> None:
        """Drop impossible combinations and give every seen-but-unread path a placeholder."""
        mirror_dirs = {a for p in self.files for a in _ancestors(p)}
        for path in sorted(set(self.files) & (self.dirs | mirror_dirs)):
            warnings.append(f"{path}: recorded both as a file and as a directory; kept the directory")
            del self.files[path]
        for path in set(self.unreadable) & set(self.files):
            del self.unreadable[path]
        named = set(self.files) | self.dirs | set(self.unreadable) | set(self.links)
        known = named | {a for p in named for a in _ancestors(p)}
        seen = set(self.present)
        for folder, entries in self.listed.items():
            seen.update(posixpath.join(folder, e) for e in entries)
        for path in seen - known:
            self.unreadable[path] = NOT_RECORDED


def _command_record(call: ToolCall) -> dict[str, Any] | None:
    result = call.result
    if result.get("error") == "not_recorded":
        return None
    argv = [str(a) for a in call.args] if call.args else call.target.split()
    if not argv:
        return None
    record: dict[str, Any] = {"argv": argv}
    for key in ("exit_code", "stdout", "stderr", "duration_s", "error"):
        if result.get(key) is not None:
            record[key] = result[key]
    if result.get("truncated"):
        record["truncated"] = result["truncated"]
    return record


def _nvml_record(call: ToolCall) -> dict[str, Any] | None:
    error = call.result.get("error")
    if error == "NOT_RECORDED" or not all(isinstance(a, int) and not isinstance(a, bool) for a in call.args):
        return None
    if error:
        return {"fn": call.target, "args": list(call.args), "error": str(error)}
    return {"fn": call.target, "args": list(call.args), "result": call.result.get("result")}


def _manifest(events: list[Event], source: str) -> dict[str, Any]:
    start = next((e for e in events if isinstance(e, SessionStarted)), None)
    audit = next((e for e in events if isinstance(e, AuditFinished)), None)
    hostname = (start.host if start else "") or (audit.result.host.name if audit else "") or "rebuilt"
    first_t = events[0].t if events else 0.0
    return {
        "format": SNAPSHOT_FORMAT,
        "hostname": hostname,
        "taken_at": utc_stamp(first_t) or utc_stamp(0.0),
        "taken_by": "rigaudit transcript rebuild",
        "notes": f"rebuilt from the tool calls of {source}" if source else "rebuilt from a transcript's tool calls",
    }


def _write_jsonl(path: Path, records: Iterable[dict[str, Any]]) -> int:
    lines = [json.dumps(r, separators=(",", ":")) for r in records]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)


def rebuild_snapshot(events: Iterable[Event], root: Path, *, source: str = "") -> RebuildReport:
    """Write a snapshot of what the session's tool calls saw into ``root`` (created; must not hold one)."""
    events = list(events)
    calls = [e for e in events if isinstance(e, ToolCall)]
    report = RebuildReport(root=root)
    warnings = report.warnings
    tree = _Tree(links=_links_from(calls, warnings))
    commands: dict[tuple[str, ...], dict[str, Any]] = {}
    nvml: dict[tuple[str, tuple[int, ...]], dict[str, Any]] = {}
    for call in calls:
        if call.op == "run":
            record = _command_record(call)
            if record is not None:
                commands.setdefault(tuple(record["argv"]), record)
        elif call.op == "nvml":
            record = _nvml_record(call)
            if record is not None:
                nvml.setdefault((call.target, tuple(record["args"])), record)
        elif call.op in ("read", "list_dir", "exists"):
            tree.add(call, warnings)
        elif call.op != "readlink":
            warnings.append(f"tool call of unknown op {call.op!r} ignored")
    tree.finish(warnings)

    root.mkdir(parents=True, exist_ok=True)
    (root / "files").mkdir(exist_ok=True)
    mirror = Mirror(root, "files")
    for path, data in tree.files.items():
        try:
            mirror.write(path, data, create=True)  # never outside files/, whatever the path says
        except MirrorError as exc:
            warnings.append(f"{path!r}: not stored: {exc}")
            continue
        report.files += 1
    (root / "links.json").write_text(json.dumps(tree.links, indent=1, sort_keys=True), encoding="utf-8")
    (root / "dirs.json").write_text(json.dumps(sorted(tree.dirs), indent=1), encoding="utf-8")
    (root / "unreadable.json").write_text(json.dumps(tree.unreadable, indent=1, sort_keys=True), encoding="utf-8")
    report.commands = _write_jsonl(root / "commands.jsonl", commands.values())
    report.nvml = _write_jsonl(root / "nvml.jsonl", nvml.values())
    (root / "snapshot.json").write_text(json.dumps(_manifest(events, source), indent=1), encoding="utf-8")
    report.links, report.dirs, report.unreadable = len(tree.links), len(tree.dirs), len(tree.unreadable)
    return report


def _comparable(result: HostOpResult) -> tuple[object, ...]:
    if isinstance(result, FileResult):
        return ("read", result.data, result.error)
    if isinstance(result, DirResult):
        return ("list_dir", result.entries, result.error)
    if isinstance(result, CommandResult):
        return ("run", result.exit_code, result.stdout, result.stderr, result.error)
    if isinstance(result, NvmlResult):
        return ("nvml", json.dumps(result.value, sort_keys=True), result.error)
    return ("value", *result)


def _short(value: tuple[object, ...]) -> str:
    text = repr(value[1:])
    return text if len(text) <= 80 else text[:77] + "..."


async def verify_rebuild(events: Iterable[Event], root: Path) -> list[str]:
    """Replay every tool call against the rebuilt snapshot; one line per call that reads back differently."""
    host = SnapshotHost(root)
    mismatches: list[str] = []
    count = 0
    for call in (e for e in events if isinstance(e, ToolCall)):
        expected = host_result(call)
        actual = await ask(host, call)
        if expected is None or actual is None:
            continue
        if call.op == "run" and isinstance(expected, CommandResult) and expected.error == "not_recorded":
            continue
        if call.op == "nvml" and isinstance(expected, NvmlResult) and expected.error == "NOT_RECORDED":
            continue
        want, got = _comparable(expected), _comparable(actual)
        if want != got:
            count += 1
            if count <= _MAX_MISMATCHES:
                mismatches.append(f"{call.op} {call.target}: recorded {_short(want)}, rebuilt {_short(got)}")
    if count > _MAX_MISMATCHES:
        mismatches.append(f"... and {count - _MAX_MISMATCHES} more")
    return mismatches
