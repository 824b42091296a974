"""The values two snapshots read, compared: files, links, directories, commands and NVML calls.

Each difference is one :class:`ValueChange`, named by the evidence reference the audit cites
(``file:/proc/cmdline``, ``cmd:uname -r``, ``nvml:nvmlDeviceGetCount()``). A text file or a
command's output is described as ``old -> new`` (one-line sysfs and procfs values) or as the
first changed lines of a unified diff; PCI configuration space as the decoded fields that moved
(``link Gen5 x16 -> Gen4 x16``), else ``N bytes differ``. A directory present on one side only is
one change, not one per file below it. Values that move on their own (power, temperature, free
memory, /proc counters) are marked ``volatile``.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Literal

from rigaudit.tools.core.record import Record
from rigaudit.tools.diffing._config import config_detail
from rigaudit.tools.diffing._load import NOT_READ, SnapshotValues, load_values
from rigaudit.tools.diffing._text import as_text, bytes_detail, is_text, json_detail, json_short, text_detail
from rigaudit.tools.diffing._volatile import process_path, volatile_file, volatile_nvml

ValueKind = Literal["file", "dir", "link", "command", "nvml"]
Presence = Literal["changed", "only_a", "only_b"]
_KIND_ORDER = {"file": 0, "dir": 1, "link": 2, "command": 3, "nvml": 4}


class ValueChange(Record):
    kind: ValueKind
    ref: str
    change: Presence
    detail: str
    volatile: bool = False
    diff: str = ""
    """For text: the changed lines as a unified diff (no context), capped."""

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": self.kind, "ref": self.ref, "change": self.change, "detail": self.detail}
        if self.volatile:
            out["volatile"] = True
        if self.diff:
            out["diff"] = self.diff
        return out


class ValuesDiff(Record):
    changes: tuple[ValueChange, ...] = ()
    compared: int = 0
    """How many values were present on both sides and compared."""
    warnings: tuple[str, ...] = ()

    @property
    def stable(self) -> tuple[ValueChange, ...]:
        return tuple(c for c in self.changes if not c.volatile)

    @property
    def volatile(self) -> tuple[ValueChange, ...]:
        return tuple(c for c in self.changes if c.volatile)

    @property
    def different(self) -> bool:
        """True when a value that does not move on its own differs (volatile ones alone do not count)."""
        return bool(self.stable)

    def counts(self) -> dict[str, int]:
        out = {"changed": 0, "only_a": 0, "only_b": 0}
        for change in self.stable:
            out[change.change] += 1
        return {**out, "volatile": len(self.volatile)}

    def to_json(self) -> dict[str, object]:
        return {
            "compared_count": self.compared,
            "counts": self.counts(),
            "changes": [c.to_json() for c in self.changes],
            "warnings": list(self.warnings),
        }


def _is_config(path: str) -> bool:
    return path.startswith("/sys/") and posixpath.basename(path) == "config"


def _file_change(path: str, a: bytes, b: bytes) -> ValueChange:
    ref = f"file:{path}"
    if _is_config(path):
        return ValueChange("file", ref, "changed", config_detail(a, b))
    if is_text(a) and is_text(b):
        ta, tb = as_text(a), as_text(b)
        detail, diff = text_detail(ta, tb)
        return ValueChange("file", ref, "changed", detail, volatile_file(path, ta, tb), diff)
    return ValueChange("file", ref, "changed", bytes_detail(a, b), volatile_file(path))


def _state(values: SnapshotValues, path: str) -> str | None:
    """``file``, ``dir``, ``link``, an errno (unreadable), ``NOT_RECORDED`` (seen, not read) or None (absent)."""
    if path in values.files:
        return "file"
    if path in values.links:
        return "link"
    if path in values.dirs:
        return "dir"
    return values.unreadable.get(path)


def _describe(state: str) -> str:
    if state == NOT_READ:
        return "present (not read)"
    return {"file": "a file", "dir": "a directory", "link": "a link"}.get(state, f"unreadable ({state})")


def _paths(a: SnapshotValues, b: SnapshotValues, counted: list[int]) -> list[ValueChange]:
    changes: list[ValueChange] = []
    only: dict[Presence, list[str]] = {"only_a": [], "only_b": []}
    every = set(a.files) | set(b.files) | set(a.unreadable) | set(b.unreadable) | a.dirs | b.dirs
    for path in sorted(every):
        sa, sb = _state(a, path), _state(b, path)
        if sa == sb == "file":
            counted[0] += 1
            da, db = a.read(path), b.read(path)
            if da is not None and db is not None and da != db:
                changes.append(_file_change(path, da, db))
        elif sa is None or sb is None:
            if not (sa in ("link", None) and sb in ("link", None)):
                only["only_a" if sb is None else "only_b"].append(path)
        elif sa != sb and NOT_READ not in (sa, sb):
            counted[0] += 1
            kind: ValueKind = "dir" if "dir" in (sa, sb) else "file"
            detail = f"{_describe(sa)} -> {_describe(sb)}"
            changes.append(ValueChange(kind, f"{kind}:{path}", "changed", detail, process_path(path)))
        elif sa == sb:
            counted[0] += 1
    for presence, paths in only.items():
        side = a if presence == "only_a" else b
        folded: set[str] = set()
        for path in paths:  # sorted: a folder comes before what lies in it
            if any(parent in folded for parent in _parents(path)):
                continue
            if _state(side, path) == "dir":
                folded.add(path)
                inside = sum(1 for p in paths if p.startswith(path + "/"))
                note = f" ({inside} {'entry' if inside == 1 else 'entries'} below it)" if inside else ""
                detail = f"directory only in {presence[-1].upper()}{note}"
                changes.append(ValueChange("dir", f"dir:{path}", presence, detail, process_path(path)))
            else:
                what = _describe(_state(side, path) or "file")
                detail = f"{what}, only in {presence[-1].upper()}"
                changes.append(ValueChange("file", f"file:{path}", presence, detail, volatile_file(path)))
    return changes


def _parents(path: str) -> list[str]:
    out: list[str] = []
    while path not in ("/", ""):
        path = posixpath.dirname(path)
        out.append(path)
    return out


def _links(a: SnapshotValues, b: SnapshotValues, counted: list[int]) -> list[ValueChange]:
    changes: list[ValueChange] = []
    for path in sorted(set(a.links) | set(b.links)):
        ta, tb = a.links.get(path), b.links.get(path)
        ref = f"link:{path}"
        if ta is not None and tb is not None:
            counted[0] += 1
            if ta != tb:
                changes.append(ValueChange("link", ref, "changed", f"{ta} -> {tb}", process_path(path)))
        elif ta is not None and _state(b, path) is None:
            changes.append(ValueChange("link", ref, "only_a", f"-> {ta}, only in A", process_path(path)))
        elif tb is not None and _state(a, path) is None:
            changes.append(ValueChange("link", ref, "only_b", f"-> {tb}, only in B", process_path(path)))
    return changes


def _outcome(record: dict[str, object]) -> tuple[object, ...]:
    return (record.get("error"), record.get("exit_code"), record.get("stdout") or "", record.get("stderr") or "")


def _command_change(ref: str, ra: dict[str, object], rb: dict[str, object]) -> ValueChange:
    parts: list[str] = []
    diff = ""
    if ra.get("error") != rb.get("error"):
        parts.append(f"error {ra.get('error') or '(ran)'} -> {rb.get('error') or '(ran)'}")
    if ra.get("exit_code") != rb.get("exit_code"):
        parts.append(f"exit {ra.get('exit_code')} -> {rb.get('exit_code')}")
    for stream in ("stdout", "stderr"):
        sa, sb = str(ra.get(stream) or ""), str(rb.get(stream) or "")
        if sa != sb:
            detail, unified = text_detail(sa, sb)
            parts.append(f"{stream}: {detail}")
            diff = diff or unified
    return ValueChange("command", ref, "changed", "; ".join(parts), diff=diff)


def _commands(a: SnapshotValues, b: SnapshotValues, counted: list[int]) -> list[ValueChange]:
    changes: list[ValueChange] = []
    for ref in sorted(set(a.commands) | set(b.commands)):
        ra, rb = a.commands.get(ref), b.commands.get(ref)
        if ra is not None and rb is not None:
            counted[0] += 1
            if _outcome(ra) != _outcome(rb):
                changes.append(_command_change(ref, ra, rb))
        elif ra is not None:
            changes.append(ValueChange("command", ref, "only_a", "recorded only in A"))
        elif rb is not None:
            changes.append(ValueChange("command", ref, "only_b", "recorded only in B"))
    return changes


def _nvml_value(record: dict[str, object]) -> tuple[object, object]:
    return record.get("error"), record.get("result")


def _nvml(a: SnapshotValues, b: SnapshotValues, counted: list[int]) -> list[ValueChange]:
    changes: list[ValueChange] = []
    for ref in sorted(set(a.nvml) | set(b.nvml)):
        ea, eb = a.nvml.get(ref), b.nvml.get(ref)
        fn = (ea or eb or ("", {}))[0]
        volatile = volatile_nvml(fn)
        if ea is not None and eb is not None:
            counted[0] += 1
            (err_a, val_a), (err_b, val_b) = _nvml_value(ea[1]), _nvml_value(eb[1])
            if (err_a, val_a) == (err_b, val_b):
                continue
            if err_a or err_b:
                detail = f"{err_a or json_short(val_a)} -> {err_b or json_short(val_b)}"
            else:
                detail = json_detail(val_a, val_b)
            changes.append(ValueChange("nvml", ref, "changed", detail, volatile))
        else:
            presence: Presence = "only_a" if ea is not None else "only_b"
            changes.append(ValueChange("nvml", ref, presence, f"recorded only in {presence[-1].upper()}", volatile))
    return changes


def diff_values(a: SnapshotValues, b: SnapshotValues) -> ValuesDiff:
    counted = [0]
    changes = [*_paths(a, b, counted), *_links(a, b, counted), *_commands(a, b, counted), *_nvml(a, b, counted)]
    changes.sort(key=lambda c: (c.volatile, _KIND_ORDER[c.kind], c.ref))
    return ValuesDiff(tuple(changes), counted[0], tuple(a.warnings + b.warnings))


def diff_snapshots(a_dir: Path | str, b_dir: Path | str) -> ValuesDiff:
    """Every value read that differs between two snapshot directories.

    Raises :class:`~tools.hosts.snapshot.SnapshotError` (one line) when either is not a snapshot.
    """
    return diff_values(load_values(a_dir), load_values(b_dir))
