"""Write a recording as a snapshot directory (``docs/snapshot-format.md``), atomically and redacted.

The snapshot is built in a temporary folder beside the target and renamed into place, so a
failure leaves no partial target. An existing non-empty target is refused unless ``force``.
Secrets are redacted on the way out (:mod:`rigaudit.tools.redact`); PCI config space and other binary
files are written byte for byte.
"""

from __future__ import annotations

import json
import os
import posixpath
import shutil
import tempfile
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path

import anyio

from rigaudit.tools.core import record
from rigaudit.tools.core.errors import OperationError, UsageError
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.core.version import rigaudit_version
from rigaudit.tools.hosts.base import CommandResult, NvmlResult
from rigaudit.tools.hosts.snapshot import SNAPSHOT_FORMAT
from rigaudit.tools.redact import redact_argv, redact_file, redact_output

NOT_RECORDED_FILE = "NOT_RECORDED"
"""``unreadable.json`` value of a path known to exist (listed, ``exists``) whose content was never read."""


class SnapshotWriteError(OperationError):
    """The snapshot could not be written; the message is one line."""


class SnapshotTargetError(UsageError):
    """The folder to write the snapshot to is taken (a file, or not empty without ``force``)."""


class Recording(Record, frozen=False):
    """What was read, keyed by resolved path (files, dirs) or exactly (commands, NVML calls)."""

    files: dict[str, bytes] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    links: dict[str, str] = field(default_factory=dict)
    listings: dict[str, tuple[str, ...]] = field(default_factory=dict)
    existing: set[str] = field(default_factory=set)
    commands: dict[tuple[str, ...], CommandResult] = field(default_factory=dict)
    nvml: dict[tuple[str, tuple[int, ...]], NvmlResult] = field(default_factory=dict)

    def known_paths(self) -> set[str]:
        """Every path the snapshot will show as existing, with all their ancestors."""
        known: set[str] = set()
        for recorded in [*self.files, *self.unreadable, *self.dirs, *self.links]:
            path = recorded
            while path not in known and path != "/":
                known.add(path)
                path = posixpath.dirname(path)
        return known


class SnapshotSummary(Record):
    path: Path
    files: int
    links: int
    dirs: int
    unreadable: int
    commands: int
    nvml: int
    not_recorded: int = 0
    warnings: tuple[str, ...] = ()

    def line(self) -> str:
        return (
            f"{self.files} files, {self.links} links, {self.dirs} dirs, {self.unreadable} unreadable, "
            f"{self.not_recorded} listed but not read, {self.commands} commands, {self.nvml} NVML calls -> {self.path}"
        )


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_target(target: Path, *, force: bool) -> None:
    """Refuse a target that is not a directory, or a non-empty one without ``force``."""
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise SnapshotTargetError(f"{target}: exists and is not a directory")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise SnapshotTargetError(f"{target}: directory is not empty (use --force to replace it)")


def command_record(result: CommandResult) -> dict[str, object]:
    record: dict[str, object] = {"argv": redact_argv(result.argv)}
    if result.error is not None:
        record["error"] = result.error
    if result.error is None or result.exit_code is not None:
        record["exit_code"] = result.exit_code
    if result.error is None or result.stdout or result.stderr:
        record["stdout"] = redact_output(result.argv, result.stdout)
        record["stderr"] = redact_output(result.argv, result.stderr)
    if result.error is None:
        record["duration_s"] = result.duration_s
    if result.truncated:
        record["truncated"] = result.truncated
    return record


def nvml_record(result: NvmlResult) -> dict[str, object]:
    record: dict[str, object] = {"fn": result.fn, "args": list(result.args)}
    if result.error is not None:
        record["error"] = result.error
    elif result.value is not None:
        record["result"] = result.value
    return record


def _nvml_order(key: tuple[str, tuple[int, ...]]) -> tuple[int, tuple[int, ...], str]:
    fn, args = key
    return (0 if fn.startswith("nvmlInit") else 1 if not args else 2, args, fn)


def _write_jsonl(path: Path, records: Iterable[dict[str, object]]) -> int:
    lines = [json.dumps(r, ensure_ascii=False) + "\n" for r in records]
    if lines:
        path.write_text("".join(lines), encoding="utf-8")
    return len(lines)


def _write_json(path: Path, value: object) -> None:
    path.write_text(json.dumps(value, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")


def _fill(root: Path, rec: Recording, manifest: dict[str, str]) -> SnapshotSummary:
    warnings: list[str] = []
    files_dir = root / "files"
    files_dir.mkdir()
    written = 0
    made: set[Path] = {files_dir}
    for path, data in sorted(rec.files.items()):
        relative = path.lstrip("/")
        if not relative or ".." in relative.split("/"):
            warnings.append(f"{path}: not a mirrorable path; skipped")
            continue
        mirror = files_dir / relative
        try:
            if mirror.parent not in made:
                mirror.parent.mkdir(parents=True, exist_ok=True)
                made.update(mirror.parent.parents)
                made.add(mirror.parent)
            mirror.write_bytes(redact_file(path, data))
            written += 1
        except (FileExistsError, NotADirectoryError, IsADirectoryError):
            warnings.append(f"{path}: clashes with another recorded path; skipped")
    unreadable = {p: e for p, e in rec.unreadable.items() if p not in rec.files}
    if rec.links:
        _write_json(root / "links.json", rec.links)
    if rec.dirs:
        _write_json(root / "dirs.json", sorted(rec.dirs))
    if unreadable:
        _write_json(root / "unreadable.json", unreadable)
    commands = _write_jsonl(root / "commands.jsonl", (command_record(rec.commands[k]) for k in sorted(rec.commands)))
    nvml = _write_jsonl(root / "nvml.jsonl", (nvml_record(rec.nvml[k]) for k in sorted(rec.nvml, key=_nvml_order)))
    _write_json(root / "snapshot.json", manifest)
    not_recorded = sum(1 for e in unreadable.values() if e == NOT_RECORDED_FILE)
    return SnapshotSummary(
        root,
        files=written,
        links=len(rec.links),
        dirs=len(rec.dirs),
        unreadable=len(unreadable) - not_recorded,
        commands=commands,
        nvml=nvml,
        not_recorded=not_recorded,
        warnings=tuple(warnings),
    )


def _replace(staging: Path, target: Path, *, force: bool) -> None:
    if not (target.exists() or target.is_symlink()):
        os.rename(staging, target)
        return
    check_target(target, force=force)
    aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    os.rename(target, aside / "old")
    try:
        os.rename(staging, target)
    except OSError:
        os.rename(aside / "old", target)
        raise
    finally:
        shutil.rmtree(aside, ignore_errors=True)


def write_snapshot_sync(target: Path, rec: Recording, manifest: dict[str, str], *, force: bool) -> SnapshotSummary:
    target = target.absolute()
    check_target(target, force=force)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    except OSError as exc:
        raise SnapshotWriteError(f"{target}: cannot write the snapshot: {exc.strerror or exc}") from None
    try:
        os.chmod(staging, 0o755)
        summary = _fill(staging, rec, manifest)
        _replace(staging, target, force=force)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise SnapshotWriteError(f"{target}: cannot write the snapshot: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return record.replace(summary, path=target)


async def write_snapshot(
    target: Path, rec: Recording, *, hostname: str, notes: str = "", force: bool = False, taken_at: str | None = None
) -> SnapshotSummary:
    """Write ``rec`` as the snapshot ``target``; raise :class:`SnapshotWriteError` with one line."""
    manifest = {
        "format": SNAPSHOT_FORMAT,
        "hostname": hostname,
        "taken_at": taken_at or utc_now(),
        "taken_by": f"rigaudit {rigaudit_version()}",
        "notes": notes,
    }
    return await anyio.to_thread.run_sync(lambda: write_snapshot_sync(target, rec, manifest, force=force))
