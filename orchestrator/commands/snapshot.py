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

from rigaudit.agents.facts.baseline import collect_baseline
from rigaudit.agents.facts.gpus import collect_gpus
from rigaudit.agents.facts.platform import detect_platform
from rigaudit.agents.registry import all_investigators
from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.errors import OperationError, UsageError
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.hosts.local import LocalHost
from rigaudit.tools.hosts.recording import RecordingHost
from rigaudit.tools.hosts.snapshot_writer import SnapshotSummary, SnapshotWriteError, check_target
from rigaudit.tools.probe import Probe


def make_host() -> Host:
    """The host to record (tests replace it)."""
    return LocalHost()


def _add(parser: argparse.ArgumentParser) -> None:
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("-o", "--output", metavar="DIR", help="snapshot directory to write")
    target.add_argument("--stdout", action="store_true", help="write the snapshot to stdout as a tar stream (fleet audits)")
    parser.add_argument("--force", action="store_true", help="replace DIR if it exists and is not empty")
    parser.add_argument("--notes", default="", metavar="TEXT", help="free text stored in snapshot.json")
    parser.add_argument("--concurrency", type=int, default=8, metavar="N", help="host operations in flight (default 8)")
    parser.add_argument("--share", action="store_true", help="write a bundle for a public bug report to -o FILE.tar.gz")
    parser.add_argument("--from", dest="share_from", type=Path, metavar="DIR", help="with --share: bundle this snapshot")


async def collect_all(probe: Probe) -> list[str]:
    """Run every collector concurrently; a failing one is reported, the others' evidence kept."""
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
    if args.share or args.share_from:
        return _share(args)
    if args.stdout:
        from rigaudit.orchestrator.fleet.node import snapshot_to_stdout

        return snapshot_to_stdout(notes=args.notes, concurrency=args.concurrency)
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


def _share(args: argparse.Namespace) -> int:
    """--share: record this machine (or take --from DIR), audit it, and write a bundle safe for a public
    bug report (identifying values replaced by placeholders; see tools/share). Prints its summary."""
    import tempfile

    from rigaudit.orchestrator.audit import run_audit
    from rigaudit.tools.hosts.snapshot import SnapshotError, SnapshotHost
    from rigaudit.tools.share import ShareError, share_bundle

    output = Path(args.output or "")
    if not args.share or not args.output:
        raise UsageError("--from needs --share" if not args.share else "--share writes a file: give -o FILE.tar.gz")
    if output.is_dir() or (output.exists() and not args.force):
        raise UsageError(f"{output}: {'is a directory' if output.is_dir() else 'exists (use --force to replace it)'}")
    with tempfile.TemporaryDirectory(prefix="rigaudit-share-") as tmp:
        source = args.share_from or Path(tmp) / "snapshot"
        if args.share_from is None:
            try:
                _, failures = anyio.run(lambda: record(source, force=False, notes=args.notes, concurrency=args.concurrency))
            except SnapshotWriteError as exc:
                raise OperationError(str(exc)) from None
            for failure in failures:
                print(f"rigaudit: warning: collection failed for {failure} (its evidence so far is kept)", file=sys.stderr)
        try:
            host = SnapshotHost(source)
        except SnapshotError as exc:
            raise UsageError(str(exc)) from None
        result = anyio.run(lambda: run_audit(host))
        try:
            shared = share_bundle(source, output, audit=result, force=args.force)
        except ShareError as exc:
            raise OperationError(str(exc)) from None
    print(shared.block)
    print(f"share bundle: {shared.line()}")
    return 0


COMMAND = Command("snapshot", "record this machine's evidence as a snapshot directory", _add, _run, __doc__ or "")
