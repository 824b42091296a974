"""Undo an apply: restore every value its journal recorded, newest first, verifying each.

Examples:
  rigaudit rollback ~/.local/state/rigaudit/journals/20261127T091403.123456Z.jsonl
  rigaudit rollback JOURNAL --snapshot COPY --yes       the copy an `apply --into COPY` changed

A journal of an apply that was killed half-way rolls back too: a change journaled but never
concluded is restored to its value before (writing it again is harmless). Each restore is
appended to the journal, so running rollback twice restores nothing twice.

A journal only undoes what its apply wrote: it is checked first against the plan it records (and
that plan's hash), the kinds of change an apply makes, and the machine it was written on; a
journal that fails any check is refused with one line and nothing is touched. The approval lists
every path, value and command the rollback will touch.

Exit status: 0 done; 1 a value could not be restored; 2 usage error or a journal refused;
3 not approved.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import anyio

from rigaudit.orchestrator.apply import describe_targets
from rigaudit.orchestrator.approval import require_approval
from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.errors import OperationError, UsageError
from rigaudit.orchestrator.session import open_session
from rigaudit.tools.actions.execute import short
from rigaudit.tools.actions.provenance import JournalRefused, host_identity, restore_lines, verify_journal
from rigaudit.tools.actions.rollback import Restore, pending_changes, rollback, session_of
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.hosts.snapshot import SnapshotError, SnapshotHost
from rigaudit.tools.journal import Journal, JournalEntry, JournalError, read_journal_lines, utc_now
from rigaudit.transcripts.events import ChangeApplied, ReportWritten


def _add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("journal", type=Path, metavar="JOURNAL", help="the journal `rigaudit apply` wrote")
    parser.add_argument("--snapshot", type=Path, metavar="DIR", help="roll back this snapshot copy (apply --into DIR)")
    parser.add_argument("--yes", action="store_true", help="do not ask (scripts)")
    parser.add_argument(
        "--report", type=Path, metavar="FILE", help="append to this report (default: ./system-improve.md if it exists)"
    )
    parser.add_argument("--transcript", type=Path, metavar="FILE", help="where to record this session (default: state dir)")
    parser.add_argument("--no-transcript", action="store_true", help="do not record this session")


def open_target_host(entries: list[JournalEntry], snapshot: Path | None) -> Host:
    """The host the journal changed: refuse a mismatch rather than write a snapshot's values to this machine."""
    session = session_of(entries)
    recorded = session.source if session is not None else ""
    if snapshot is not None:
        try:
            host: Host = SnapshotHost(snapshot, writable=True)
        except SnapshotError as exc:
            raise UsageError(str(exc)) from None
    elif recorded.startswith("snapshot:"):
        where = recorded.split(":", 1)[1]
        raise UsageError(f"this journal changed the snapshot copy {where}; roll it back with --snapshot {where}")
    else:
        from rigaudit.tools.hosts.local import LocalHost

        host = LocalHost()
    if session is not None and session.host and session.host != host.name:
        raise UsageError(f"this journal was written on {session.host}, not {host.name}: refusing to restore its values here")
    return host


def summary_lines(results: list[Restore]) -> list[str]:
    """One line per step, outcome and value (128 CPUs restored is one line); every failure on its own."""
    groups: dict[tuple[str, str, str], list[Restore]] = {}
    for item in results:
        value = "removed" if item.before is None else f"restored {short(item.before)}"
        groups.setdefault((item.step_id, item.outcome, value), []).append(item)
    lines: list[str] = []
    for (step_id, outcome, value), items in groups.items():
        if outcome == "failed":
            lines += [f"  [!!] {step_id} {i.target.describe()}: {i.message}" for i in items]
            continue
        what = describe_targets([i.target for i in items])
        text = value if outcome == "restored" else items[0].message
        lines.append(f"  [{'ok' if outcome == 'restored' else '..'}] {step_id} {what}: {text}")
    return lines


def _section(path: Path, host: Host, results: list[Restore], when: str) -> str:
    restored = sum(1 for r in results if r.outcome == "restored")
    failed = [r for r in results if r.outcome == "failed"]
    lines = [f"### rollback {when} on {host.name} (`{host.source}`)", ""]
    lines.append(f"Journal `{path}`: {restored} value(s) restored and verified, {len(failed)} failed.")
    lines += [f"- `{r.step_id}` {r.target.describe()}: {r.message}" for r in failed]
    return "\n".join(lines)


def _verified(args: argparse.Namespace) -> tuple[list[JournalEntry], list[str], Host]:
    """The journal's entries, once checked against its plan, its kinds of change and this host."""
    try:
        read = read_journal_lines(args.journal)
    except JournalError as exc:
        raise UsageError(str(exc)) from None
    host = open_target_host(read.entries, args.snapshot)
    try:
        verify_journal(read, host_name=host.name, host_id=anyio.run(host_identity, host))
    except JournalRefused as exc:
        raise UsageError(str(exc)) from None
    return read.entries, read.warnings, host


def _run(args: argparse.Namespace) -> int:
    entries, warnings, host = _verified(args)
    todo = [(p, o) for p, o in pending_changes(entries) if o is None or o.state != "reverted"]
    for warning in warnings:
        print(f"rigaudit: warning: {warning}")
    if not todo:
        print(f"rollback: nothing to restore in {args.journal} (every change is already reverted)")
        return 0
    with open_session(
        "rollback",
        consumers=[],
        transcript=args.transcript,
        record=not args.no_transcript,
        host=host.name,
        source=host.source,
        options={"journal": str(args.journal)},
    ) as session:
        steps = sorted({p.step_id for p, _ in todo})
        touched = restore_lines([(p.target, p.before) for p, _ in reversed(todo) if p.target is not None])
        approval = require_approval(
            f"roll back {len(todo)} change(s) on {host.name}",
            [f"journal {args.journal}", f"steps: {', '.join(steps)}", *touched],
            assume_yes=args.yes,
            emit=session.emit,
            plan_hash=next((e.plan_hash for e in entries if e.kind == "session"), ""),
        )
        try:
            with Journal.reopen(args.journal) as journal:
                journal.append(kind="approval", step_id="rollback", approval=approval)

                async def main() -> list[Restore]:
                    try:
                        return await rollback(host, entries, journal)
                    finally:
                        await host.aclose()

                results = anyio.run(main)
        except JournalError as exc:
            raise OperationError(str(exc)) from None
        for item in results:
            if item.outcome != "skipped":
                session.emit(
                    ChangeApplied(
                        step_id=item.step_id,
                        target=item.target.describe(),
                        before="",
                        after=item.message,
                        verified=item.outcome == "restored",
                        reverted=True,
                        message="rollback",
                    )
                )
        print(f"rollback: {host.name} ({host.source}) from {args.journal}")
        for line in summary_lines(results):
            print(line)
        restored = sum(1 for r in results if r.outcome == "restored")
        failed = sum(1 for r in results if r.outcome == "failed")
        print(f"rollback: {restored} restored and verified, {failed} failed")
        default = Path("system-improve.md")
        report = args.report if args.report is not None else (default if default.exists() else None)
        if report is not None:
            from rigaudit.orchestrator.report import append_section

            append_section(report, "Applied changes", _section(args.journal, host, results, utc_now()))
            session.emit(ReportWritten(path=str(report), section="Applied changes"))
        session.exit_code = 1 if failed else 0
    return session.exit_code


COMMAND = Command("rollback", "undo an apply from its journal (newest change first, each verified)", _add, _run, __doc__ or "")
