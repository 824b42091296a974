"""Record this machine's evidence as a snapshot directory.

Runs every investigator's evidence collection (reads only; commands pass the policy first)
through a recording host, then writes exactly what was read to DIR in the snapshot format
(see snapshot-format.md): atomically, with secrets redacted. The snapshot replays anywhere:
`rigaudit audit --snapshot DIR`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from agents.facts.gpus import collect_gpus
from agents.facts.platform import detect_platform
from agents.registry import all_investigators
from orchestrator.command import Command
from orchestrator.errors import OperationError, UsageError
from tools.hosts.base import Host
from tools.hosts.local import LocalHost
from tools.hosts.recording import RecordingHost
from tools.hosts.snapshot_writer import SnapshotSummary, SnapshotWriteError, check_target
from tools.probe import Probe


def make_host() -> Host:
    """The host to record (tests replace it)."""
    return LocalHost()


def _add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", required=True, metavar="DIR", help="snapshot directory to write")
    parser.add_argument("--force", action="store_true", help="replace DIR if it exists and is not empty")
    parser.add_argument("--notes", default="", metavar="TEXT", help="free text stored in snapshot.json")
    parser.add_argument("--concurrency", type=int, default=8, metavar="N", help="host operations in flight (default 8)")


async def collect_all(probe: Probe) -> list[str]:
    """Run every collector concurrently; a failing one is reported, the others' evidence kept."""
    collectors: list[tuple[str, Callable[[Probe], Awaitable[object]]]] = [
        ("gpus", collect_gpus),
        ("platform", detect_platform),
        *[(inv.area, inv.collect) for inv in all_investigators()],
    ]
    failures: list[str] = []

    async def one(name: str, collect: Callable[[Probe], Awaitable[object]]) -> None:
        try:
            await collect(probe.scoped())
        except Exception as exc:
            failures.append(f"{name}: {exc.__class__.__name__}: {exc}".splitlines()[0])

    async with anyio.create_task_group() as group:
        for name, collect in collectors:
            group.start_soon(one, name, collect)
    return sorted(failures)


async def record(output: Path, *, force: bool, notes: str, concurrency: int) -> tuple[SnapshotSummary, list[str]]:
    host = RecordingHost(make_host())
    try:
        failures = await collect_all(Probe(host, concurrency=concurrency))
        summary = await host.write_snapshot(output, hostname=host.name, notes=notes, force=force)
    finally:
        with anyio.CancelScope(shield=True):
            await host.aclose()
    return summary, failures


def _run(args: argparse.Namespace) -> int:
    if args.concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1 (got {args.concurrency})")
    output = Path(args.output)
    try:
        check_target(output, force=args.force)
    except SnapshotWriteError as exc:
        raise UsageError(str(exc)) from None
    try:
        summary, failures = anyio.run(lambda: record(output, force=args.force, notes=args.notes, concurrency=args.concurrency))
    except SnapshotWriteError as exc:
        raise OperationError(str(exc)) from None
    for failure in failures:
        print(f"rigaudit: warning: collection failed for {failure} (its evidence so far is kept)", file=sys.stderr)
    for warning in summary.warnings:
        print(f"rigaudit: warning: {warning}", file=sys.stderr)
    print(f"snapshot: {summary.line()}")
    return 0


COMMAND = Command("snapshot", "record this machine's evidence as a snapshot directory", _add, _run, __doc__ or "")
