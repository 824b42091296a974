"""Snapshots as work: record this machine, copy a snapshot for writing, bundle one for sharing.

The ``snapshot`` command, ``apply --into``, the chat and the fleet all call these; none of them
prints (the callers render what comes back).
"""

from __future__ import annotations

import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from rigaudit.agents.facts.baseline import collect_baseline
from rigaudit.agents.facts.gpus import collect_gpus
from rigaudit.agents.facts.platform import detect_platform
from rigaudit.agents.registry import all_investigators
from rigaudit.tools.core.errors import OperationError, UsageError
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.recording import RecordingHost
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.hosts.snapshot_copy import copy_snapshot as copy_tree
from rigaudit.tools.hosts.snapshot_writer import SnapshotSummary
from rigaudit.tools.share import ShareSummary, share_bundle

__all__ = ["Recorded", "collect_all", "copy_snapshot", "make_host", "record_snapshot", "share_snapshot"]


def make_host() -> Host:
    """The host ``rigaudit snapshot`` records: this machine (tests replace it)."""
    from rigaudit.tools.hosts.local import LocalHost

    return LocalHost()


async def collect_all(probe: Probe) -> list[str]:
    """Run every collector concurrently; a failing one is reported (``area: error``), the others' evidence kept."""
    collectors: list[tuple[str, Callable[[Probe], Awaitable[object]]]] = [
        ("gpus", collect_gpus),
        ("platform", detect_platform),
        ("baseline", collect_baseline),
        *[(inv.area, inv.collect) for inv in all_investigators()],
    ]
    failures: list[str] = []

    async def one(name: str, collect: Callable[[Probe], Awaitable[object]]) -> None:
        try:
            await collect(probe.scoped())
        except Exception as exc:  # one collector's failure keeps the others' evidence
            failures.append(f"{name}: {exc.__class__.__name__}: {exc}".splitlines()[0])

    async with anyio.create_task_group() as group:
        for name, collect in collectors:
            group.start_soon(one, name, collect)
    return sorted(failures)


class Recorded(Record):
    """A written snapshot, and what went wrong on the way (the snapshot is still usable)."""

    summary: SnapshotSummary
    failures: tuple[str, ...]
    """Collectors that failed: ``area: error``."""

    def warnings(self) -> list[str]:
        return [
            *(f"collection failed for {f} (its evidence so far is kept)" for f in self.failures),
            *self.summary.warnings,
        ]


async def record_snapshot(output: Path, *, force: bool = False, notes: str = "", concurrency: int = 8) -> Recorded:
    """Record :func:`make_host` through every collector and write what was read to ``output``."""
    host = RecordingHost(make_host())
    try:
        failures = await collect_all(Probe(host, concurrency=concurrency))
        summary = await host.write_snapshot(output, hostname=host.name, notes=notes, force=force)
    finally:
        with anyio.CancelScope(shield=True):
            await host.aclose()
    return Recorded(summary, tuple(failures))


def copy_snapshot(src: Path, dst: Path) -> None:
    """A writable copy of a snapshot in a new folder: only its folders and regular files (never through a
    link), built beside ``dst`` and renamed into place, so writes never reach the original."""
    if dst.is_symlink() or (dst.exists() and (not dst.is_dir() or any(dst.iterdir()))):
        raise UsageError(f"{dst}: already exists and is not empty (--into needs a new folder)")
    if dst.resolve().is_relative_to(src.resolve()):
        raise UsageError(f"{dst}: must not lie inside the snapshot {src}")
    try:
        copy_tree(src, dst)
    except OSError as exc:
        raise OperationError(f"cannot copy {src} to {dst}: {exc.strerror or exc}") from None


def share_snapshot(
    output: Path, *, source: Path | None = None, force: bool = False, notes: str = "", concurrency: int = 8
) -> tuple[ShareSummary, list[str]]:
    """Record this machine (or take ``source``), audit it, and write a bundle safe for a public bug report.

    Returns the bundle's summary and the recording's warnings.
    """
    from rigaudit.orchestrator.audit.run import run_audit

    if output.is_dir() or (output.exists() and not force):
        raise UsageError(f"{output}: {'is a directory' if output.is_dir() else 'exists (use --force to replace it)'}")
    warnings: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rigaudit-share-") as tmp:
        snapshot = source or Path(tmp) / "snapshot"
        if source is None:
            recorded = anyio.run(lambda: record_snapshot(snapshot, notes=notes, concurrency=concurrency))
            warnings = [f"collection failed for {f} (its evidence so far is kept)" for f in recorded.failures]
        host = SnapshotHost(snapshot)
        result = anyio.run(lambda: run_audit(host))
        return share_bundle(snapshot, output, audit=result, force=force), warnings
