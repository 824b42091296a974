"""Record this machine's evidence as a snapshot directory.

Runs every investigator's evidence collection (reads only; commands pass the policy first)
through a recording host, then writes exactly what was read to DIR in the snapshot format
(see docs/snapshot-format.md): atomically, with secrets redacted. The snapshot replays anywhere:
`rigaudit audit --snapshot DIR`.
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

import anyio

from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.commands._options import add_session_arguments, screen
from rigaudit.orchestrator.commands._outputs import output
from rigaudit.orchestrator.fleet.node import snapshot_to_stdout
from rigaudit.orchestrator.hosts.snapshots import record_snapshot, share_snapshot
from rigaudit.orchestrator.session.core import Session, open_session
from rigaudit.orchestrator.ui.terminal import terminal_for
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.files.outputs import Kind
from rigaudit.tools.hosts.snapshot_writer import check_target
from rigaudit.tools.schema.events.session import SnapshotWritten, Warning_


def _add(parser: argparse.ArgumentParser) -> None:
    target = parser.add_mutually_exclusive_group(required=True)
    written = target.add_argument("-o", "--output", metavar="DIR", help="snapshot directory to write (with --share: FILE.tar.gz)")
    output(written, lambda args: Kind.FILE if args.share else Kind.NEW_FOLDER, force="force")
    target.add_argument("--stdout", action="store_true", help="write the snapshot to stdout as a tar stream (fleet audits)")
    parser.add_argument("--force", action="store_true", help="replace DIR if it exists and is not empty")
    parser.add_argument("--notes", default="", metavar="TEXT", help="free text stored in snapshot.json")
    parser.add_argument("--concurrency", type=int, default=8, metavar="N", help="host operations in flight (default 8)")
    parser.add_argument("--share", action="store_true", help="write a bundle for a public bug report to -o FILE.tar.gz")
    parser.add_argument("--from", dest="share_from", type=Path, metavar="DIR", help="with --share: bundle this snapshot")
    add_session_arguments(parser)


def _session(args: argparse.Namespace, output: Path) -> contextlib.AbstractContextManager[Session]:
    """The session whose events the terminal draws and the transcript records (not --stdout: that is the tar)."""
    return open_session(
        "snapshot",
        consumers=[terminal_for(screen(args))],
        transcript=args.transcript,
        record=not args.no_transcript,
        options={"output": str(output), "share": bool(args.share)} | ({"from": str(args.share_from)} if args.share_from else {}),
    )


def _run(args: argparse.Namespace) -> int:
    if args.concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1 (got {args.concurrency})")
    if args.share or args.share_from:
        return _share(args)
    if args.stdout:
        return snapshot_to_stdout(notes=args.notes, concurrency=args.concurrency)
    output = Path(args.output)
    check_target(output, force=args.force)
    with _session(args, output) as session:
        recorded = anyio.run(lambda: record_snapshot(output, force=args.force, notes=args.notes, concurrency=args.concurrency))
        for warning in recorded.warnings():
            session.emit(Warning_(text=warning))
        session.emit(SnapshotWritten(kind="snapshot", path=str(output), summary=recorded.summary.line()))
    return 0


def _share(args: argparse.Namespace) -> int:
    """--share: record this machine (or take --from DIR), audit it, and write a bundle safe for a public
    bug report (identifying values replaced by placeholders; see tools/share). Shows its summary."""
    if not args.share or not args.output:
        raise UsageError("--from needs --share" if not args.share else "--share writes a file: give -o FILE.tar.gz")
    output = Path(args.output)
    with _session(args, output) as session:
        shared, warnings = share_snapshot(
            output, source=args.share_from, force=args.force, notes=args.notes, concurrency=args.concurrency
        )
        for warning in warnings:
            session.emit(Warning_(text=warning))
        details = shared.block.splitlines()
        session.emit(SnapshotWritten(kind="share bundle", path=str(shared.path), summary=shared.line(), details=details))
    return 0


COMMAND = Command("snapshot", "record this machine's evidence as a snapshot directory", _add, _run, __doc__ or "")
