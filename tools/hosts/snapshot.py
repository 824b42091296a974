"""SnapshotHost: replays a recorded snapshot exactly as ``docs/snapshot-format.md`` says.

A snapshot is untrusted input: its files are read through :class:`~tools.hosts.mirror.Mirror`
(never following a link out of it, only regular files, each bounded), its JSON indexes are bounded
in size, depth and entries, and recorded command output is capped as a live run caps it.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Sequence
from pathlib import Path

import anyio

from rigaudit.tools.core.record import Record, field
from rigaudit.tools.files.bounded import (
    MAX_ENTRIES,
    MAX_LINE_BYTES,
    InputError,
    JsonError,
    cap_text,
    iter_lines,
    loads,
)
from rigaudit.tools.files.bounded import load_json as load_bounded
from rigaudit.tools.hosts.base import (
    NOT_RECORDED,
    CommandResult,
    DirResult,
    FileResult,
    HostWriteError,
    NvmlResult,
)
from rigaudit.tools.hosts.links import resolve_links
from rigaudit.tools.hosts.mirror import MAX_DEPTH, Mirror, MirrorError

SNAPSHOT_FORMAT = "rigaudit.snapshot/1"
MANIFEST_BYTES = 1024 * 1024
MAX_NAME = 255
MAX_NOTES = 64 * 1024
MAX_PATH = 4096
MAX_RECORDS = 1_000_000
"""Commands and NVML calls kept from one snapshot."""


class SnapshotError(InputError):
    """The snapshot cannot be read at all (missing manifest, other format...)."""


class SnapshotManifest(Record, frozen=False):
    hostname: str
    taken_at: str = ""
    taken_by: str = ""
    notes: str = ""
    extra: dict[str, object] = field(default_factory=dict)


def _not_a_folder(root: Path) -> str:
    """Why ``root`` is no snapshot folder, and what to do: a share bundle is a file to unpack first."""
    if not root.exists():
        return "no such snapshot directory"
    if not os.path.isfile(root):
        return "not a directory, so no snapshot"
    try:
        with open(root, "rb", buffering=0) as handle:  # a regular file (a FIFO is never opened: it could block)
            gzipped = handle.read(2) == b"\x1f\x8b"
    except OSError:
        gzipped = False
    if gzipped:
        return (
            f"a file (a share bundle, .tar.gz), not a snapshot directory: unpack it first (tar -xzf {root.name}) "
            "and give the folder it makes to --snapshot"
        )
    return "a file, not a snapshot directory (`rigaudit snapshot -o DIR` writes one)"


def load_manifest(root: Path) -> SnapshotManifest:
    """Read and validate ``snapshot.json``; raise :class:`SnapshotError` with one clear line.

    The snapshot folder is the one named; inside it nothing is a link: ``snapshot.json`` must be a
    regular file and ``files/``, when present, a real folder (``files -> /`` would make the host's
    own files the snapshot's).
    """
    manifest_path = root / "snapshot.json"
    if not root.is_dir():
        raise SnapshotError(f"{root}: {_not_a_folder(root)}")
    files = root / "files"
    if files.is_symlink() or (files.exists() and not files.is_dir()):
        raise SnapshotError(f"{files}: is not a real folder (a snapshot's files/ is never a link); refused")
    if not (manifest_path.exists() or manifest_path.is_symlink()):
        raise SnapshotError(f"{root}: not a snapshot (snapshot.json is missing)")
    try:
        raw = load_bounded(manifest_path, limit=MANIFEST_BYTES, follow=False)
    except InputError as exc:
        raise SnapshotError(f"unreadable manifest: {exc}") from None
    if not isinstance(raw, dict):
        raise SnapshotError(f"{manifest_path}: manifest is not a JSON object")
    fmt = raw.get("format")
    if fmt != SNAPSHOT_FORMAT:
        shown = repr(fmt)[:80]
        raise SnapshotError(f"{manifest_path}: format {shown} is not supported (expected {SNAPSHOT_FORMAT!r})")
    known = {"format", "hostname", "taken_at", "taken_by", "notes"}
    return SnapshotManifest(
        hostname=_one_line(raw.get("hostname")) or root.name,
        taken_at=_one_line(raw.get("taken_at")),
        taken_by=_one_line(raw.get("taken_by")),
        notes=str(raw.get("notes") or "")[:MAX_NOTES],
        extra={k: v for k, v in raw.items() if k not in known},
    )


def _one_line(value: object) -> str:
    """A manifest field as one short line (a host name never carries a newline into a report)."""
    text = value if isinstance(value, str) else "" if value is None else str(value)
    return " ".join(text.split())[:MAX_NAME]


def load_json(path: Path, expected: type, warnings: list[str]) -> object:
    """An optional JSON index of a snapshot (``links.json``...): bounded; damage is a warning."""
    if not (path.exists() or path.is_symlink()):
        return expected()
    try:
        value = load_bounded(path, follow=False, what=path.name)
    except InputError as exc:
        warnings.append(f"{exc}; ignored")
        return expected()
    if not isinstance(value, expected):
        warnings.append(f"{path.name}: expected a JSON {expected.__name__}; ignored")
        return expected()
    if isinstance(value, (dict, list)) and len(value) > MAX_ENTRIES:
        warnings.append(f"{path.name}: more than {MAX_ENTRIES} entries; ignored")
        return expected()
    return value


def load_jsonl(path: Path, warnings: list[str]) -> list[dict[str, object]]:
    """The JSON objects of an optional JSONL file of a snapshot; damaged lines are warnings."""
    records: list[dict[str, object]] = []
    if not (path.exists() or path.is_symlink()):
        return records
    damaged = 0
    try:
        for number, line in iter_lines(path, follow=False, what=path.name):
            if line is None:
                warnings.append(f"{path.name}:{number}: longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB; ignored")
                continue
            if not line.strip():
                continue
            try:
                record = loads(line)
            except JsonError:
                damaged += 1
                if damaged <= 5:
                    warnings.append(f"{path.name}:{number}: damaged line ignored")
                continue
            if not isinstance(record, dict):
                damaged += 1
                if damaged <= 5:
                    warnings.append(f"{path.name}:{number}: not a JSON object; ignored")
                continue
            records.append(record)
    except InputError as exc:
        warnings.append(f"{exc}; read {len(records)} record(s) before it")
    if damaged > 5:
        warnings.append(f"{path.name}: {damaged - 5} more damaged line(s) ignored")
    return records


def host_paths(values: object, what: str, warnings: list[str]) -> list[str]:
    """The entries of a snapshot index that are usable host paths (absolute, no NUL, bounded)."""
    items = list(values) if isinstance(values, (list, dict)) else []
    good = [p for p in items if _usable_path(p)]
    if len(good) < len(items):
        warnings.append(f"{what}: {len(items) - len(good)} entry(ies) that are not absolute paths ignored")
    return [str(p) for p in good]


def _usable_path(path: object) -> bool:
    return (
        isinstance(path, str)
        and path.startswith("/")
        and "\x00" not in path
        and len(path) <= MAX_PATH
        and path.count("/") <= MAX_DEPTH
    )


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
        self._mirror = Mirror(self.root, "files")
        warn = self.warnings
        links = load_json(self.root / "links.json", dict, warn)
        dirs = load_json(self.root / "dirs.json", list, warn)
        unreadable = load_json(self.root / "unreadable.json", dict, warn)
        assert isinstance(links, dict) and isinstance(dirs, list) and isinstance(unreadable, dict)
        self._links: dict[str, str] = {
            k: links[k] for k in host_paths(links, "links.json", warn) if isinstance(links[k], str) and "\x00" not in links[k]
        }
        self._dirs: set[str] = {d.rstrip("/") or "/" for d in host_paths(dirs, "dirs.json", warn)}
        self._unreadable: dict[str, str] = {
            k: _one_line(unreadable[k])[:64] for k in host_paths(unreadable, "unreadable.json", warn)
        }
        self._commands_exact: dict[tuple[str, ...], dict[str, object]] = {}
        self._commands_any: dict[str, dict[str, object]] = {}
        for record in load_jsonl(self.root / "commands.jsonl", warn)[:MAX_RECORDS]:
            argv = record.get("argv")
            if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
                warn.append("commands.jsonl: a record without a valid argv ignored")
                continue
            if record.get("any_args") is True:
                self._commands_any.setdefault(str(argv[0]), record)
            else:
                self._commands_exact.setdefault(tuple(str(a) for a in argv), record)
        self._nvml: dict[tuple[str, tuple[int, ...]], dict[str, object]] = {}
        for record in load_jsonl(self.root / "nvml.jsonl", warn)[:MAX_RECORDS]:
            fn = record.get("fn")
            args = _int_args(record.get("args", []))
            if not isinstance(fn, str) or args is None:
                warn.append("nvml.jsonl: a record without a valid fn/args ignored")
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

    @property
    def answers_at_once(self) -> bool:
        """Every operation completes without waiting, unless a latency is added (:func:`~tools.hosts.base.answers_at_once`)."""
        return self.latency_s <= 0

    # -- path resolution ------------------------------------------------------------------

    def resolve(self, path: str) -> str:
        """Resolve recorded links component by component, as the kernel does."""
        return resolve_links(self._links, path)

    async def _pause(self) -> None:
        if self.latency_s > 0:
            await anyio.sleep(self.latency_s)

    # -- reads ----------------------------------------------------------------------------

    async def read(self, path: str) -> FileResult:
        await self._pause()
        if "\x00" in path:
            return FileResult(path, None, "EINVAL")
        resolved = self.resolve(path)
        if resolved in self._unreadable:
            return FileResult(path, None, self._unreadable[resolved])
        try:
            return FileResult(path, self._mirror.read(resolved))
        except MirrorError as exc:
            if exc.code == "ENOENT" and resolved in self._dirs:
                return FileResult(path, None, "EISDIR")
            return FileResult(path, None, exc.code)

    async def list_dir(self, path: str) -> DirResult:
        await self._pause()
        if "\x00" in path:
            return DirResult(path, None, "EINVAL")
        resolved = self.resolve(path)
        names: set[str] = set()
        found = resolved in self._dirs or resolved in self._extra_children
        try:
            names.update(name for name, kind in self._mirror.list(resolved) if kind != "other")
            found = True
        except MirrorError as exc:
            if exc.code not in ("ENOENT", "ENOTREG") or (exc.code == "ENOTREG" and not found):
                return DirResult(path, None, exc.code)
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
        if "\x00" in path:
            return False
        resolved = self.resolve(path)
        return (
            resolved in self._dirs
            or resolved in self._unreadable
            or resolved in self._extra_children
            or self._mirror.kind(resolved) in ("file", "dir")
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
        stdout, cut_out = cap_text(_text(record.get("stdout")))
        stderr, cut_err = cap_text(_text(record.get("stderr")))
        truncated = record.get("truncated")
        return CommandResult(
            argv=key,
            exit_code=exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None,
            stdout=stdout,
            stderr=stderr,
            duration_s=float(duration) if isinstance(duration, (int, float)) and 0 <= duration < 1e9 else 0.0,
            error=_one_line(error)[:64] if error else None,
            truncated=cut_out + cut_err + (truncated if isinstance(truncated, int) and truncated > 0 else 0),
        )

    async def nvml(self, fn: str, *args: int) -> NvmlResult:
        await self._pause()
        record = self._nvml.get((fn, tuple(args)))
        if record is None:
            return NvmlResult(fn, tuple(args), error="NOT_RECORDED")
        error = record.get("error")
        if error:
            return NvmlResult(fn, tuple(args), error=_one_line(error)[:64])
        return NvmlResult(fn, tuple(args), value=record.get("result"))

    # -- writes ---------------------------------------------------------------------------

    def _writable_path(self, path: str) -> str:
        if not self.writable:
            raise HostWriteError(f"{path}: snapshot {self.root} is read-only (apply into a copy with --into)")
        if "\x00" in path:
            raise HostWriteError(f"{path!r}: a NUL byte in the path")
        return self.resolve(path)

    async def write(self, path: str, data: bytes, *, offset: int | None = None) -> None:
        await self._pause()
        resolved = self._writable_path(path)
        try:
            self._mirror.write(resolved, data, offset=offset, create=_creatable(resolved) and offset is None)
        except MirrorError as exc:
            raise HostWriteError(f"{path}: {_write_problem(exc)}") from None

    async def remove(self, path: str) -> None:
        """Delete a configuration file under /etc (rollback of ``apply --persist``), and the
        mirror folders that removal leaves empty. Writable snapshots only."""
        await self._pause()
        resolved = self._writable_path(path)
        if not _creatable(resolved):
            raise HostWriteError(f"{path}: only files under /etc can be removed from a snapshot")
        try:
            self._mirror.remove(resolved, prune_to="/etc")
        except MirrorError as exc:
            raise HostWriteError(f"{path}: {_write_problem(exc)}") from None

    async def aclose(self) -> None:
        return None


def _text(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)[:MAX_NAME]


def _write_problem(exc: MirrorError) -> str:
    if exc.code == "ENOENT":
        return "no such file in the snapshot"
    if exc.code == "ENOTREG":
        return "not a regular file in the snapshot (nothing is written through a link); refused"
    if exc.code == "EISDIR":
        return "is a directory"
    return str(exc) if str(exc) != exc.code else f"cannot write ({exc.code})"


def _creatable(resolved: str) -> bool:
    """Configuration files (``/etc/...``) may be created in a writable snapshot, as ``--persist`` does."""
    return resolved.startswith("/etc/") and ".." not in resolved.split("/")
