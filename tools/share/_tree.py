"""A snapshot directory held in memory, as the share bundle reads and rewrites it."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from rigaudit.tools.hosts.snapshot import load_manifest

KNOWN = ("snapshot.json", "links.json", "dirs.json", "unreadable.json", "commands.jsonl", "nvml.jsonl")
SHARE_NOTE = "SHARE.md"


@dataclass
class Tree:
    manifest: dict[str, object]
    files: dict[str, bytes] = field(default_factory=dict)
    """Host path -> bytes of its mirror under files/."""
    links: dict[str, str] = field(default_factory=dict)
    dirs: list[str] = field(default_factory=list)
    unreadable: dict[str, str] = field(default_factory=dict)
    commands: list[dict[str, object] | str] = field(default_factory=list)
    """Records; a line that is not a JSON object is kept as its text."""
    nvml: list[dict[str, object] | str] = field(default_factory=list)
    extras: dict[str, bytes] = field(default_factory=dict)
    """Other files of the snapshot folder (notes, a README), by relative name."""
    present: set[str] = field(default_factory=set)
    """Which of the optional JSON files the snapshot has."""

    def command_records(self) -> list[dict[str, object]]:
        return [r for r in self.commands if isinstance(r, dict)]

    def nvml_records(self) -> list[dict[str, object]]:
        return [r for r in self.nvml if isinstance(r, dict)]


def _jsonl(path: Path) -> list[dict[str, object] | str]:
    out: list[dict[str, object] | str] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            record = line
        out.append(record if isinstance(record, dict) else line)
    return out


def _json(path: Path, expected: type) -> object:
    if not path.is_file():
        return expected()
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return expected()
    return value if isinstance(value, expected) else expected()


def load_tree(root: Path) -> Tree:
    """Read a whole snapshot; :class:`~tools.hosts.snapshot.SnapshotError` when it is not one."""
    load_manifest(root)
    manifest = _json(root / "snapshot.json", dict)
    assert isinstance(manifest, dict)
    tree = Tree(manifest=manifest)
    mirror = root / "files"
    for folder, _subdirs, names in os.walk(mirror, followlinks=True):
        relative = Path(folder).relative_to(mirror).as_posix()
        base = "" if relative == "." else "/" + relative
        for name in names:
            tree.files[f"{base}/{name}"] = (Path(folder) / name).read_bytes()
    for name in KNOWN[1:]:
        if (root / name).is_file():
            tree.present.add(name)
    links, dirs = _json(root / "links.json", dict), _json(root / "dirs.json", list)
    unreadable = _json(root / "unreadable.json", dict)
    assert isinstance(links, dict) and isinstance(dirs, list) and isinstance(unreadable, dict)
    tree.links = {str(k): str(v) for k, v in links.items()}
    tree.dirs = [str(d) for d in dirs]
    tree.unreadable = {str(k): str(v) for k, v in unreadable.items()}
    if (root / "commands.jsonl").is_file():
        tree.commands = _jsonl(root / "commands.jsonl")
    if (root / "nvml.jsonl").is_file():
        tree.nvml = _jsonl(root / "nvml.jsonl")
    for folder, _subdirs, names in os.walk(root, followlinks=True):
        where = Path(folder)
        if where == mirror or mirror in where.parents:
            continue
        for name in names:
            relative = (where / name).relative_to(root).as_posix()
            if relative not in KNOWN and relative != SHARE_NOTE:
                tree.extras[relative] = (where / name).read_bytes()
    return tree
