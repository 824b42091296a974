"""An in-memory snapshot (snapshot format v1) that builders fill and :meth:`Tree.write` puts on disk.

Paths are host paths (absolute). A file set twice keeps the last content; links, directories and
unreadable entries follow docs/snapshot-format.md exactly, so what is written replays through SnapshotHost.
"""

from __future__ import annotations

import json
import os
import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "rigaudit.snapshot/1"


@dataclass
class Tree:
    hostname: str
    notes: str = ""
    taken_at: str = "2026-11-30T10:00:00Z"
    files: dict[str, bytes] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    unreadable: dict[str, str] = field(default_factory=dict)
    commands: dict[tuple[str, ...], dict[str, Any]] = field(default_factory=dict)
    nvml: dict[tuple[str, tuple[int, ...]], dict[str, Any]] = field(default_factory=dict)

    # -- files ---------------------------------------------------------------------------
    def file(self, path: str, content: str | bytes) -> None:
        """Create or replace a file (text is written as UTF-8)."""
        assert path.startswith("/"), path
        self.files[path] = content.encode() if isinstance(content, str) else content

    def attrs(self, folder: str, values: dict[str, str | bytes | int]) -> None:
        """sysfs-style attribute files: each value on one line (bytes are kept as they are)."""
        for name, value in values.items():
            self.file(f"{folder}/{name}", value if isinstance(value, bytes) else f"{value}\n")

    def text(self, path: str) -> str | None:
        data = self.files.get(path)
        return None if data is None else data.decode()

    def remove(self, path: str) -> None:
        """Forget a path and everything below it (files, links, dirs, unreadable entries)."""
        prefix = path.rstrip("/") + "/"

        def gone(p: str) -> bool:
            return p == path or p.startswith(prefix)

        for table in (self.files, self.links, self.unreadable):
            for key in [k for k in table if gone(k)]:
                del table[key]
        self.dirs = {d for d in self.dirs if not gone(d)}

    def link(self, path: str, target: str) -> None:
        self.links[path] = target

    def directory(self, path: str) -> None:
        """A directory that exists even when nothing is recorded in it."""
        self.dirs.add(path.rstrip("/") or "/")

    def deny(self, path: str, errno: str = "EACCES") -> None:
        self.unreadable[path] = errno

    # -- commands and NVML ---------------------------------------------------------------
    def command(
        self,
        argv: tuple[str, ...] | list[str],
        stdout: str = "",
        *,
        exit_code: int = 0,
        stderr: str = "",
        error: str | None = None,
        duration_s: float = 0.02,
    ) -> None:
        key = tuple(argv)
        if error is not None:
            self.commands[key] = {"argv": list(key), "error": error}
        else:
            self.commands[key] = {
                "argv": list(key),
                "exit_code": exit_code,
                "stdout": stdout,
                "stderr": stderr,
                "duration_s": duration_s,
            }

    def missing_program(self, *programs: str) -> None:
        """Programs that are not installed: every invocation answers ``not_found``."""
        for program in programs:
            self.commands = {k: v for k, v in self.commands.items() if k[0] != program}
            self.commands[(program, "*")] = {"argv": [program], "any_args": True, "error": "not_found"}

    def call(self, fn: str, args: tuple[int, ...] | list[int] = (), result: Any = None, *, error: str | None = None) -> None:
        key = (fn, tuple(args))
        record: dict[str, Any] = {"fn": fn, "args": list(args)}
        if error is not None:
            record["error"] = error
        else:
            record["result"] = result
        self.nvml[key] = record

    def nvml_result(self, fn: str, *args: int) -> Any:
        record = self.nvml.get((fn, tuple(args)))
        return None if record is None else record.get("result")

    # -- output --------------------------------------------------------------------------
    def write(self, root: Path, *, like: tuple[Tree, Path] | None = None) -> Path:
        """Write the snapshot into ``root`` (created; must not exist or be empty).

        ``like``: (a tree, the snapshot it was written to): files with the same bytes there are hard-linked
        instead of written (a fault variant of a cached archetype costs a third of a full write). Such files are
        shared: change them only by replacing them, as rigaudit's own writes do.
        """
        root.mkdir(parents=True, exist_ok=True)
        files = root / "files"
        made: set[str] = set()
        same = like[0].files if like is not None else {}
        base = str(like[1] / "files") if like is not None else ""
        for path, data in sorted(self.files.items()):
            target = str(files) + path
            parent = target.rsplit("/", 1)[0]
            if parent not in made:
                os.makedirs(parent, exist_ok=True)
                made.add(parent)
            if same.get(path) == data:
                os.link(base + path, target)
                continue
            with open(target, "wb") as handle:
                handle.write(data)
        files.mkdir(exist_ok=True)
        manifest = {
            "format": FORMAT,
            "hostname": self.hostname,
            "taken_at": self.taken_at,
            "taken_by": "tests/hostgen",
            "notes": self.notes,
        }
        (root / "snapshot.json").write_text(json.dumps(manifest, indent=1) + "\n")
        (root / "links.json").write_text(json.dumps(dict(sorted(self.links.items())), indent=1) + "\n")
        (root / "dirs.json").write_text(json.dumps(sorted(self._empty_dirs()), indent=1) + "\n")
        (root / "unreadable.json").write_text(json.dumps(dict(sorted(self.unreadable.items())), indent=1) + "\n")
        (root / "commands.jsonl").write_text("".join(json.dumps(r) + "\n" for r in self._command_records()))
        (root / "nvml.jsonl").write_text("".join(json.dumps(r) + "\n" for _, r in sorted(self.nvml.items())))
        return root

    def _command_records(self) -> list[dict[str, Any]]:
        return [record for _, record in sorted(self.commands.items())]

    def _empty_dirs(self) -> set[str]:
        """Directories with nothing recorded below them (the others exist through their content)."""
        parents: set[str] = set()
        for path in [*self.files, *self.links, *self.unreadable]:
            parent = posixpath.dirname(path)
            while parent not in parents and parent not in ("", "/"):
                parents.add(parent)
                parent = posixpath.dirname(parent)
        return {d for d in self.dirs if d not in parents}
