"""Roll a journal back: restore every changed value, newest first, and record each restore."""

from __future__ import annotations

from typing import Literal

from rigaudit.tools.actions.execute import restore_target, short
from rigaudit.tools.actions.journal import Journal, JournalEntry
from rigaudit.tools.actions.targets import AnyTarget, refusal
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import Host

RestoreOutcome = Literal["restored", "skipped", "failed"]


class Restore(Record):
    """One ``planned`` change and what rollback did about it."""

    step_id: str
    target: AnyTarget
    before: str | None
    outcome: RestoreOutcome
    message: str = ""


def pending_changes(entries: list[JournalEntry]) -> list[tuple[JournalEntry, JournalEntry | None]]:
    """Every ``planned`` change with its latest outcome (``None``: the apply died before one), oldest first."""
    latest: dict[int, JournalEntry] = {}
    for entry in entries:
        if entry.kind == "change" and entry.ref is not None:
            latest[entry.ref] = entry
    return [(e, latest.get(e.seq)) for e in entries if e.kind == "change" and e.state == "planned" and e.target is not None]


def session_of(entries: list[JournalEntry]) -> JournalEntry | None:
    return next((e for e in entries if e.kind == "session"), None)


async def rollback(host: Host, entries: list[JournalEntry], journal: Journal | None) -> list[Restore]:
    """Restore, in reverse order, every change not already reverted; a planned change with no outcome
    is restored too (writing the value before is harmless if the change never happened)."""
    results: list[Restore] = []
    for planned, outcome in reversed(pending_changes(entries)):
        target = planned.target
        assert target is not None
        if outcome is not None and outcome.state == "reverted":
            results.append(Restore(planned.step_id, target, planned.before, "skipped", "already reverted"))
            continue
        refused = refusal(target)
        if refused is not None:  # never a change no apply makes, whatever the journal says
            results.append(Restore(planned.step_id, target, planned.before, "failed", f"refused: {refused}"))
            continue
        ok, message = await restore_target(host, target, planned.before)
        if journal is not None:
            journal.append(
                kind="change",
                state="reverted" if ok else "failed",
                ref=planned.seq,
                step_id=planned.step_id,
                target=target,
                after=planned.before,
                message=f"rollback: {message}" if message else "rollback: restored",
            )
        text = message or f"restored {short(planned.before)}"
        results.append(Restore(planned.step_id, target, planned.before, "restored" if ok else "failed", text))
    return results
