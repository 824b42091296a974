"""A snapshot directory read as the values an audit can read from it (no replay, no resolution)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from rigaudit.tools.hosts.snapshot import load_json, load_jsonl, load_manifest
from rigaudit.tools.probe import command_ref, nvml_ref

NOT_READ = "NOT_RECORDED"
"""``unreadable.json`` value of a path seen (listed) but never read."""


@dataclass
class SnapshotValues:
    root: Path
    files: dict[str, Path] = field(default_factory=dict)
    """Host path -> its mirror file (read on demand)."""
    dirs: set[str] = field(default_factory=set)
    links: dict[str, str] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)
    commands: dict[str, dict[str, object]] = field(default_factory=dict)
    """``cmd:ARGV`` (``... (any args)``) -> record."""
    nvml: dict[str, tuple[str, dict[str, object]]] = field(default_factory=dict)
    """``nvml:fn(args)`` -> (fn, record)."""
    warnings: list[str] = field(default_factory=list)


def load_values(root: Path | str) -> SnapshotValues:
    """Index a snapshot; raises :class:`~tools.hosts.snapshot.SnapshotError` when it is not one."""
    root = Path(root)
    load_manifest(root)
    values = SnapshotValues(root)
    mirror = root / "files"
    for folder, subdirs, names in os.walk(mirror, followlinks=True):
        host_folder = "/" + Path(folder).relative_to(mirror).as_posix().lstrip(".").lstrip("/")
        host_folder = host_folder.rstrip("/") or "/"
        for name in subdirs:
            values.dirs.add(f"{host_folder.rstrip('/')}/{name}")
        for name in names:
            values.files[f"{host_folder.rstrip('/')}/{name}"] = Path(folder) / name
    warnings = values.warnings
    dirs, links = load_json(root / "dirs.json", list, warnings), load_json(root / "links.json", dict, warnings)
    unreadable = load_json(root / "unreadable.json", dict, warnings)
    assert isinstance(dirs, list) and isinstance(links, dict) and isinstance(unreadable, dict)
    values.dirs.update(str(d).rstrip("/") or "/" for d in dirs)
    values.links = {str(k): str(v) for k, v in links.items()}
    values.unreadable = {str(k): str(v) for k, v in unreadable.items()}
    for record in load_jsonl(root / "commands.jsonl", warnings):
        argv = record.get("argv")
        if isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv):
            ref = command_ref([str(a) for a in argv]) + (" (any args)" if record.get("any_args") is True else "")
            values.commands.setdefault(ref, record)
    for record in load_jsonl(root / "nvml.jsonl", warnings):
        fn, args = record.get("fn"), record.get("args", [])
        if isinstance(fn, str) and isinstance(args, list) and all(isinstance(a, int) for a in args):
            values.nvml.setdefault(nvml_ref(fn, [int(a) for a in args]), (fn, record))
    return values
