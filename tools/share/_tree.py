"""A snapshot directory held in memory, as the share bundle reads and rewrites it.

The snapshot is untrusted: nothing is read through a link or from a special file (they are left
out, with a warning), every file and the whole tree are bounded, JSON is bounded in depth.
"""

from __future__ import annotations

import stat
from pathlib import Path

from rigaudit.tools.core.record import Record, field
from rigaudit.tools.files.bounded import InputError, JsonError, iter_lines, loads, read_regular
from rigaudit.tools.hosts.mirror import MAX_TREE_BYTES, Mirror, MirrorError, TreeWalk
from rigaudit.tools.hosts.snapshot import SnapshotError, load_manifest

KNOWN = ("snapshot.json", "links.json", "dirs.json", "unreadable.json", "commands.jsonl", "nvml.jsonl")
SHARE_NOTE = "SHARE.md"


class Tree(Record, frozen=False):
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
    warnings: list[str] = field(default_factory=list)
    """What was left out (links, special files, damaged lines too long to keep)."""

    def command_records(self) -> list[dict[str, object]]:
        return [r for r in self.commands if isinstance(r, dict)]

    def nvml_records(self) -> list[dict[str, object]]:
        return [r for r in self.nvml if isinstance(r, dict)]


def _jsonl(path: Path, warnings: list[str]) -> list[dict[str, object] | str]:
    out: list[dict[str, object] | str] = []
    try:
        for number, raw in iter_lines(path, follow=False, what=path.name):
            if raw is None:
                warnings.append(f"{path.name}:{number}: too long; left out")
                continue
            line = raw.decode("utf-8", errors="replace")
            if not line.strip():
                continue
            try:
                record = loads(line)
            except JsonError:
                record = line
            out.append(record if isinstance(record, dict) else line)
    except InputError as exc:
        raise SnapshotError(str(exc)) from None
    return out


def _json(path: Path, expected: type) -> object:
    if not (path.exists() or path.is_symlink()):
        return expected()
    try:
        value = loads(read_regular(path, follow=False))
    except JsonError:
        return expected()
    except InputError as exc:
        raise SnapshotError(str(exc)) from None
    return value if isinstance(value, expected) else expected()


def _read_all(mirror: Mirror, walk: TreeWalk) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for path in sorted(walk.files):
        try:
            out[path] = mirror.read(path)
        except MirrorError as exc:
            raise SnapshotError(f"{mirror.path}{path}: cannot read ({exc.code})") from None
    return out


def _walk(mirror: Mirror, *, max_bytes: int = MAX_TREE_BYTES, skip: frozenset[str] = frozenset()) -> TreeWalk:
    try:
        return mirror.walk(max_bytes=max_bytes, skip=skip)
    except MirrorError as exc:
        raise SnapshotError(f"{mirror.path}: {exc}; refused") from None


def load_tree(root: Path) -> Tree:
    """Read a whole snapshot; :class:`~tools.hosts.snapshot.SnapshotError` when it is not one.

    Links and special files are left out (named in ``warnings``); the files are bounded in all.
    """
    load_manifest(root)
    manifest = _json(root / "snapshot.json", dict)
    assert isinstance(manifest, dict)
    tree = Tree(manifest=manifest)
    mirror = Mirror(root, "files")
    walk = _walk(mirror)
    tree.files = _read_all(mirror, walk)
    tree.warnings += [f"files{s}: left out" for s in walk.skipped]
    for name in KNOWN[1:]:
        kind = _kind(root / name)
        if kind == "file":
            tree.present.add(name)
        elif kind is not None:
            tree.warnings.append(f"{name}: {kind}; left out")
    links, dirs = _json(root / "links.json", dict), _json(root / "dirs.json", list)
    unreadable = _json(root / "unreadable.json", dict)
    assert isinstance(links, dict) and isinstance(dirs, list) and isinstance(unreadable, dict)
    tree.links = {str(k): str(v) for k, v in links.items()}
    tree.dirs = [str(d) for d in dirs]
    tree.unreadable = {str(k): str(v) for k, v in unreadable.items()}
    if "commands.jsonl" in tree.present:
        tree.commands = _jsonl(root / "commands.jsonl", tree.warnings)
    if "nvml.jsonl" in tree.present:
        tree.nvml = _jsonl(root / "nvml.jsonl", tree.warnings)
    top = Mirror(root, None)
    used = sum(len(d) for d in tree.files.values())
    others = _walk(top, max_bytes=max(0, MAX_TREE_BYTES - used), skip=frozenset({"files", *KNOWN, SHARE_NOTE}))
    tree.extras = {path.lstrip("/"): data for path, data in _read_all(top, others).items()}
    tree.warnings += [f"{s.lstrip('/')}: left out" for s in others.skipped]
    return tree


def _kind(path: Path) -> str | None:
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return None
    return "file" if stat.S_ISREG(mode) else "a link or special file"
