"""Rollback as work: restore every value a journal recorded, newest first, verifying each.

The ``rollback`` command and the chat call :func:`prepare_rollback` (read the journal, open the host
it changed) and then :func:`run_rollback` (ask, restore, report as events, append the report's
section). Nothing here prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio

from rigaudit.orchestrator.change.approval import Console, require_approval
from rigaudit.orchestrator.change.sections import rollback_section
from rigaudit.orchestrator.hosts.identity import identify
from rigaudit.orchestrator.report.document import append_section
from rigaudit.tools.actions.execute import short
from rigaudit.tools.actions.journal import Journal, JournalEntry, read_journal_lines, utc_now
from rigaudit.tools.actions.preview import describe_targets, target_text
from rigaudit.tools.actions.provenance import check_custody, check_seal, host_identity, restore_lines, verify_journal
from rigaudit.tools.actions.rollback import Restore, pending_changes, rollback, session_of
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.events.apply import ChangeApplied, RestoredGroup, RollbackFinished
from rigaudit.tools.schema.events.session import ReportWritten, Warning_
from rigaudit.tools.schema.events.sink import EventSink, discard

__all__ = ["PreparedRollback", "emit_restores", "groups", "open_target_host", "prepare_rollback", "run_rollback"]


def emit_restores(emit: EventSink, restores: Sequence[Restore], message: str) -> None:
    """One ``ChangeApplied`` (reverted) for each value a rollback restored or failed to (skipped ones are not news)."""
    for r in restores:
        if r.outcome != "skipped":
            emit(
                ChangeApplied(
                    step_id=r.step_id,
                    target=r.target.describe(),
                    before="",
                    after=r.message,
                    verified=r.outcome == "restored",
                    reverted=True,
                    message=message,
                )
            )


def open_target_host(entries: list[JournalEntry], snapshot: Path | None) -> Host:
    """The host the journal changed: refuse a mismatch rather than write a snapshot's values to this machine."""
    session = session_of(entries)
    recorded = session.source if session is not None else ""
    if snapshot is not None:
        host: Host = SnapshotHost(snapshot, writable=True)
    elif recorded.startswith("snapshot:"):
        where = recorded.split(":", 1)[1]
        raise UsageError(f"this journal changed the snapshot copy {where}; roll it back with --snapshot {where}")
    else:
        from rigaudit.tools.hosts.local import LocalHost

        host = LocalHost()
    if session is not None and session.host and session.host != host.name:
        raise UsageError(f"this journal was written on {session.host}, not {host.name}: refusing to restore its values here")
    return host


class PreparedRollback(Record):
    """A journal read, the host it changed opened, and what is left to restore."""

    journal: Path
    entries: list[JournalEntry]
    warnings: list[str]
    """One per damaged journal line."""
    host: Host
    pending: int
    """Changes not yet reverted."""


async def prepare_rollback(journal: Path, snapshot: Path | None = None) -> PreparedRollback:
    """Read the journal and open the host it changed, once the journal is checked: in this user's custody, against
    the plan it records, the kinds of change an apply makes, this machine, and its seals (:class:`JournalRefused`
    otherwise)."""
    check_custody(journal)
    read = read_journal_lines(journal)
    host = open_target_host(read.entries, snapshot)
    verify_journal(read, host_name=host.name, host_id=await host_identity(host), live=snapshot is None)
    check_seal(read)
    pending = sum(1 for _, outcome in pending_changes(read.entries) if outcome is None or outcome.state != "reverted")
    return PreparedRollback(journal, read.entries, read.warnings, host, pending)


def groups(results: list[Restore]) -> list[RestoredGroup]:
    """One group per step, outcome and value (128 CPUs restored is one group); every failure on its own."""
    by_key: dict[tuple[str, str, str], list[Restore]] = {}
    for item in results:
        value = "removed" if item.before is None else f"restored {short(item.before)}"
        by_key.setdefault((item.step_id, item.outcome, value), []).append(item)
    out: list[RestoredGroup] = []
    for (step_id, outcome, value), items in by_key.items():
        if outcome == "failed":
            out += [RestoredGroup(step_id=step_id, outcome="failed", what=i.target.describe(), text=i.message) for i in items]
            continue
        text = value if outcome == "restored" else items[0].message
        out.append(
            RestoredGroup(
                step_id=step_id,
                outcome="restored" if outcome == "restored" else "skipped",
                what=describe_targets([i.target for i in items]),
                text=text,
            )
        )
    return out


async def run_rollback(
    prepared: PreparedRollback,
    *,
    assume_yes: bool,
    emit: EventSink = discard,
    interactive: bool | None = None,
    console: Console | None = None,
    report: Path | None = None,
) -> RollbackFinished:
    """Ask, restore every pending change newest first (each appended to the journal), and report it."""
    host, journal_path = prepared.host, prepared.journal
    for warning in prepared.warnings:
        emit(Warning_(text=warning))
    if not prepared.pending:
        finished = RollbackFinished(journal=str(journal_path), host=host.name, source=host.source, nothing_to_do=True)
        emit(finished)
        return finished
    here = await identify(host)
    todo = [p for p, o in pending_changes(prepared.entries) if o is None or o.state != "reverted"]
    steps = sorted({p.step_id for p in todo})
    touched = restore_lines([(p.target, p.before) for p in reversed(todo) if p.target is not None])
    approval = require_approval(
        f"roll back {prepared.pending} change(s) on {target_text(host.name, host.source)}",
        [f"journal {journal_path}", f"steps: {', '.join(steps)}", *touched],
        assume_yes=assume_yes,
        emit=emit,
        interactive=interactive,
        console=console,
        plan_hash=next((e.plan_hash for e in prepared.entries if e.kind == "session"), ""),
        where=target_text(host.name, host.source),
    )
    with Journal.reopen(journal_path) as journal:
        journal.append(kind="approval", step_id="rollback", approval=approval)
        try:
            results = await rollback(host, prepared.entries, journal)
        finally:
            with anyio.CancelScope(shield=True):
                await host.aclose()
    emit_restores(emit, results, "rollback")
    finished = RollbackFinished(
        journal=str(journal_path),
        host=host.name,
        source=host.source,
        groups=groups(results),
        restored=sum(1 for r in results if r.outcome == "restored"),
        failed=sum(1 for r in results if r.outcome == "failed"),
    )
    emit(finished)
    if report is not None:
        section = rollback_section(journal_path, host.name, host.source, results, utc_now())
        append_section(report, "Applied changes", section, host=here)
        emit(ReportWritten(path=str(report), section="Applied changes"))
    return finished
