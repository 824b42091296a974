"""Plain lines for the events that sum up an apply or a rollback (the terminal prints them as they are)."""

from __future__ import annotations

from rigaudit.tools.schema.events.apply import ApplyFinished, RollbackFinished

MARK = {
    "applied": "ok",
    "unchanged": "ok",
    "partial": "!!",
    "failed": "!!",
    "declined": "--",
    "deferred": "..",
    "elsewhere": "->",
    "manual": "->",
    "blocked": "--",
    "not_attempted": "--",
}


def apply_lines(event: ApplyFinished) -> list[str]:
    """``apply: host (source), plan H``, a line per step and per folded change, then the journal and undo."""
    lines = [f"apply: {event.host} ({event.source}), plan {event.plan_hash}"]
    for step in event.steps:
        head = f"  [{MARK.get(step.status, '??')}] {step.step_id}: {step.status.replace('_', ' ')}"
        if step.reason and step.reason != step.status:
            head += f" ({step.reason.removeprefix('not attempted: ')})"
        lines.append(head)
        lines += [f"       {text} [{outcome}]" for text, outcome in step.changes]
        lines += [f"       {problem}" for problem in step.problems]
    for text, verified in event.persist:
        lines.append(f"  [{'ok' if verified else '!!'}] persist {text}".rstrip())
    lines += [f"  persist: {note}" for note in event.persist_notes]
    if event.reaudit:
        lines.append(f"re-audit of {event.reaudited}: " + ", ".join(f"{c} {s}" for c, s in event.reaudit.items()))
    done = sum(1 for s in event.steps if s.status in ("applied", "partial", "failed"))
    if event.journal is not None and (done or event.persist):  # a persisted setting is a change too
        lines.append(f"journal: {event.journal}  (undo: {event.undo})")
    elif not done and not event.persist:
        lines.append(
            "nothing was changed, so there is nothing to undo" + (f" (journal: {event.journal})" if event.journal else "")
        )
    if event.stopped:
        lines.append(f"apply stopped: {event.stopped}; {done} step(s) changed before it, the rest not attempted")
    return lines


def rollback_lines(event: RollbackFinished) -> list[str]:
    """A line per restored group and per failure, between a header and the totals."""
    if event.nothing_to_do:
        return [f"rollback: nothing to restore in {event.journal} (every change is already reverted)"]
    lines = [f"rollback: {event.host} ({event.source}) from {event.journal}"]
    for group in event.groups:
        if group.outcome == "failed":
            lines.append(f"  [!!] {group.step_id} {group.what}: {group.text}")
        else:
            lines.append(f"  [{'ok' if group.outcome == 'restored' else '..'}] {group.step_id} {group.what}: {group.text}")
    lines.append(f"rollback: {event.restored} restored and verified, {event.failed} failed")
    return lines
