"""A snapshot directory read as the values an audit can read from it (no replay, no resolution).

The snapshot is untrusted: its mirror is walked without following links (a link or a special file
there is a warning, never read), files are read on demand through the same bounded mirror, and the
JSON indexes are bounded as :class:`~tools.hosts.snapshot.SnapshotHost` bounds them.
"""

from __future__ import annotations

from pathlib import Path

from rigaudit.tools.core.record import Record, field
from rigaudit.tools.hosts.mirror import Mirror, MirrorError
from rigaudit.tools.hosts.probe import command_ref, nvml_ref
from rigaudit.tools.hosts.snapshot import SnapshotError, host_paths, load_json, load_jsonl, load_manifest

NOT_READ = "NOT_RECORDED"
"""``unreadable.json`` value of a path seen (listed) but never read."""


class SnapshotValues(Record, frozen=False):
    root: Path
    files: set[str] = field(default_factory=set)
    """Host paths of the regular files of the mirror (read on demand with :meth:`read`)."""
    dirs: set[str] = field(default_factory=set)
    links: dict[str, str] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)
    commands: dict[str, dict[str, object]] = field(default_factory=dict)
    """``cmd:ARGV`` (``... (any args)``) -> record."""
    nvml: dict[str, tuple[str, dict[str, object]]] = field(default_factory=dict)
    """``nvml:fn(args)`` -> (fn, record)."""
    warnings: list[str] = field(default_factory=list)

    def read(self, path: str) -> bytes | None:
        """The bytes of a mirrored file (``None``: it cannot be read any more, or is too large)."""
        try:
            return Mirror(self.root).read(path)
        except MirrorError as exc:
            self.warnings.append(f"{self.root}: {path}: not compared ({exc.code})")
            return None


def load_values(root: Path | str) -> SnapshotValues:
    """Index a snapshot; raises :class:`~tools.hosts.snapshot.SnapshotError` when it is not one."""
    root = Path(root)
    load_manifest(root)
    values = SnapshotValues(root)
    warnings = values.warnings
    try:
        tree = Mirror(root).walk()
    except MirrorError as exc:
        raise SnapshotError(f"{root}/files: {exc}; refused") from None
    values.dirs.update(tree.dirs)
    values.files.update(tree.files)
    if tree.skipped:
        warnings.append(f"{root}: {len(tree.skipped)} link(s) or special file(s) in files/ ignored ({tree.skipped[0]})")
    dirs, links = load_json(root / "dirs.json", list, warnings), load_json(root / "links.json", dict, warnings)
    unreadable = load_json(root / "unreadable.json", dict, warnings)
    assert isinstance(dirs, list) and isinstance(links, dict) and isinstance(unreadable, dict)
    values.dirs.update(d.rstrip("/") or "/" for d in host_paths(dirs, "dirs.json", warnings))
    values.links = {k: str(links[k]) for k in host_paths(links, "links.json", warnings)}
    values.unreadable = {k: str(unreadable[k])[:64] for k in host_paths(unreadable, "unreadable.json", warnings)}
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
