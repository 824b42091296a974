"""SnapshotHost: replays a recorded snapshot exactly as ``snapshot-format.md`` says."""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from rigaudit.tools.hosts.base import (
    NOT_RECORDED,
    CommandResult,
    DirResult,
    FileResult,
    HostWriteError,
    NvmlResult,
)
from rigaudit.tools.hosts.links import resolve_links

SNAPSHOT_FORMAT = "rigaudit.snapshot/1"


class SnapshotError(Exception):
    """The snapshot cannot be read at all (missing manifest, other format...)."""


@dataclass
class SnapshotManifest:
    hostname: str
    taken_at: str = ""
    taken_by: str = ""
    notes: str = ""
    extra: dict[str, object] = field(default_factory=dict)


def load_manifest(root: Path) -> SnapshotManifest:
    """Read and validate ``snapshot.json``; raise :class:`SnapshotError` with one clear line."""
    manifest_path = root / "snapshot.json"
    if not root.is_dir():
        raise SnapshotError(f"{root}: no such snapshot directory")
    try:
        raw = json.loads(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SnapshotError(f"{root}: not a snapshot (snapshot.json is missing)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SnapshotError(f"{manifest_path}: unreadable manifest ({exc.__class__.__name__})") from None
    if not isinstance(raw, dict):
        raise SnapshotError(f"{manifest_path}: manifest is not a JSON object")
    fmt = raw.get("format")
    if fmt != SNAPSHOT_FORMAT:
        raise SnapshotError(f"{manifest_path}: format {fmt!r} is not supported (expected {SNAPSHOT_FORMAT!r})")
    known = {"format", "hostname", "taken_at", "taken_by", "notes"}
    return SnapshotManifest(
        hostname=str(raw.get("hostname") or root.name),
        taken_at=str(raw.get("taken_at") or ""),
        taken_by=str(raw.get("taken_by") or ""),
        notes=str(raw.get("notes") or ""),
        extra={k: v for k, v in raw.items() if k not in known},
    )


def load_json(path: Path, expected: type, warnings: list[str]) -> object:
    if not path.exists():
        return expected()
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        warnings.append(f"{path.name}: unreadable ({exc.__class__.__name__}); ignored")
        return expected()
    if not isinstance(value, expected):
        warnings.append(f"{path.name}: expected a JSON {expected.__name__}; ignored")
        return expected()
    return value


def load_jsonl(path: Path, warnings: list[str]) -> list[dict[str, object]]:
    records: list[dict[str, object]] = []
    if not path.exists():
        return records
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                warnings.append(f"{path.name}:{number}: damaged line ignored")
                continue
            if not isinstance(record, dict):
                warnings.append(f"{path.name}:{number}: not a JSON object; ignored")
                continue
            records.append(record)
    return records


def _int_args(raw: object) -> tuple[int, ...] | None:
    if not isinstance(raw, list):
        return None
    if not all(isinstance(a, int) and not isinstance(a, bool) for a in raw):
        return None
    return tuple(int(a) for a in raw)


class SnapshotHost:
    """A host replayed from a snapshot directory.

    With ``writable=True`` writes go into the snapshot's own ``files/`` mirror (use it on a
    copy: ``apply --snapshot SRC --into DST``); files under /etc may be created there and
    removed again (``apply --persist`` and its rollback). ``latency_s`` is added to every operation.
    """

    def __init__(self, root: Path | str, *, writable: bool = False, latency_s: float = 0.0) -> None:
        self.root = Path(root)
        self.manifest = load_manifest(self.root)
        self.writable = writable
        self.latency_s = latency_s
        self.warnings: list[str] = []
        self._files = self.root / "files"
        links = load_json(self.root / "links.json", dict, self.warnings)
        dirs = load_json(self.root / "dirs.json", list, self.warnings)
        unreadable = load_json(self.root / "unreadable.json", dict, self.warnings)
        assert isinstance(links, dict) and isinstance(dirs, list) and isinstance(unreadable, dict)
        self._links: dict[str, str] = {str(k): str(v) for k, v in links.items()}
        self._dirs: set[str] = {str(d).rstrip("/") or "/" for d in dirs}
        self._unreadable: dict[str, str] = {str(k): str(v) for k, v in unreadable.items()}
        self._commands_exact: dict[tuple[str, ...], dict[str, object]] = {}
        self._commands_any: dict[str, dict[str, object]] = {}
        for record in load_jsonl(self.root / "commands.jsonl", self.warnings):
            argv = record.get("argv")
            if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
                self.warnings.append("commands.jsonl: a record without a valid argv ignored")
                continue
            if record.get("any_args") is True:
                self._commands_any.setdefault(str(argv[0]), record)
            else:
                self._commands_exact.setdefault(tuple(str(a) for a in argv), record)
        self._nvml: dict[tuple[str, tuple[int, ...]], dict[str, object]] = {}
        for record in load_jsonl(self.root / "nvml.jsonl", self.warnings):
            fn = record.get("fn")
            args = _int_args(record.get("args", []))
            if not isinstance(fn, str) or args is None:
                self.warnings.append("nvml.jsonl: a record without a valid fn/args ignored")
                continue
            self._nvml.setdefault((fn, args), record)
        # Children recorded only as links, dirs or unreadable entries, by parent folder.
        self._extra_children: dict[str, set[str]] = {}
        for path in [*self._links, *self._dirs, *self._unreadable]:
            # Every ancestor of a recorded path exists too, and lists the next component.
            current = path.rstrip("/")
            while current not in ("", "/"):
                parent, name = posixpath.split(current)
                self._extra_children.setdefault(parent or "/", set()).add(name)
                current = parent

    # -- identity -------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.manifest.hostname

    @property
    def source(self) -> str:
        return f"snapshot:{self.root}"

    # -- path resolution ------------------------------------------------------------------

    def resolve(self, path: str) -> str:
        """Resolve recorded links component by component, as the kernel does."""
        return resolve_links(self._links, path)

    def _mirror(self, resolved: str) -> Path:
        return self._files / resolved.lstrip("/")

    async def _pause(self) -> None:
        if self.latency_s > 0:
            await anyio.sleep(self.latency_s)

    # -- reads ----------------------------------------------------------------------------

    async def read(self, path: str) -> FileResult:
        await self._pause()
        resolved = self.resolve(path)
        if resolved in self._unreadable:
            return FileResult(path, None, self._unreadable[resolved])
        mirror = self._mirror(resolved)
        try:
            return FileResult(path, mirror.read_bytes())
        except IsADirectoryError:
            return FileResult(path, None, "EISDIR")
        except FileNotFoundError:
            if resolved in self._dirs:
                return FileResult(path, None, "EISDIR")
            return FileResult(path, None, "ENOENT")
        except OSError as exc:
            return FileResult(path, None, f"E{exc.__class__.__name__}")

    async def list_dir(self, path: str) -> DirResult:
        await self._pause()
        resolved = self.resolve(path)
        mirror = self._mirror(resolved)
        names: set[str] = set()
        found = resolved in self._dirs or resolved in self._extra_children
        if mirror.is_dir():
            found = True
            names.update(os.listdir(mirror))
        elif mirror.exists():
            return DirResult(path, None, "ENOTDIR")
        names.update(self._extra_children.get(resolved, ()))
        if not found:
            return DirResult(path, None, "ENOENT")
        return DirResult(path, tuple(sorted(names)))

    async def readlink(self, path: str) -> str | None:
        await self._pause()
        parent, name = posixpath.split(posixpath.normpath(path))
        resolved = posixpath.join(self.resolve(parent), name)
        return self._links.get(resolved)

    async def exists(self, path: str) -> bool:
        await self._pause()
        resolved = self.resolve(path)
        return (
            resolved in self._dirs
            or resolved in self._unreadable
            or resolved in self._extra_children
            or self._mirror(resolved).exists()
        )

    async def run(self, argv: Sequence[str], *, timeout_s: float = 10.0) -> CommandResult:
        await self._pause()
        key = tuple(argv)
        record = self._commands_exact.get(key)
        if record is None and key:
            record = self._commands_any.get(key[0])
        if record is None:
            return CommandResult(key, error="not_recorded", stderr=NOT_RECORDED)
        exit_code = record.get("exit_code")
        error = record.get("error")
        duration = record.get("duration_s", 0.0)
        return CommandResult(
            argv=key,
            exit_code=exit_code if isinstance(exit_code, int) else None,
            stdout=str(record.get("stdout") or ""),
            stderr=str(record.get("stderr") or ""),
            duration_s=float(duration) if isinstance(duration, (int, float)) else 0.0,
            error=str(error) if error else None,
        )

    async def nvml(self, fn: str, *args: int) -> NvmlResult:
        await self._pause()
        record = self._nvml.get((fn, tuple(args)))
        if record is None:
            return NvmlResult(fn, tuple(args), error="NOT_RECORDED")
        error = record.get("error")
        if error:
            return NvmlResult(fn, tuple(args), error=str(error))
        return NvmlResult(fn, tuple(args), value=record.get("result"))

    # -- writes ---------------------------------------------------------------------------

    async def write(self, path: str, data: bytes, *, offset: int | None = None) -> None:
        await self._pause()
        if not self.writable:
            raise HostWriteError(f"{path}: snapshot {self.root} is read-only (apply into a copy with --into)")
        resolved = self.resolve(path)
        mirror = self._mirror(resolved)
        if not mirror.is_file():
            if not (_creatable(resolved) and offset is None and not mirror.exists()):
                raise HostWriteError(f"{path}: no such file in the snapshot")
            mirror.parent.mkdir(parents=True, exist_ok=True)
        try:
            if offset is None:
                mirror.write_bytes(data)
            else:
                with mirror.open("r+b") as handle:
                    handle.seek(offset)
                    handle.write(data)
        except OSError as exc:
            raise HostWriteError(f"{path}: {exc.strerror or exc}") from None

    async def remove(self, path: str) -> None:
        """Delete a configuration file under /etc (rollback of ``apply --persist``), and the
        mirror folders that removal leaves empty. Writable snapshots only."""
        await self._pause()
        if not self.writable:
            raise HostWriteError(f"{path}: snapshot {self.root} is read-only (apply into a copy with --into)")
        resolved = self.resolve(path)
        if not _creatable(resolved):
            raise HostWriteError(f"{path}: only files under /etc can be removed from a snapshot")
        mirror = self._mirror(resolved)
        if mirror.is_dir():
            raise HostWriteError(f"{path}: is a directory")
        mirror.unlink(missing_ok=True)
        folder, stop = mirror.parent, self._mirror("/etc")
        while folder != stop and folder.is_relative_to(stop) and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent

    async def aclose(self) -> None:
        return None


def _creatable(resolved: str) -> bool:
    """Configuration files (``/etc/...``) may be created in a writable snapshot, as ``--persist`` does."""
    return resolved.startswith("/etc/") and ".." not in resolved.split("/")
