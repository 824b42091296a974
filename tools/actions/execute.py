"""Change targets safely: read, journal (fsync), write, read back; revert at once if it did not take."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from rigaudit.tools.actions.journal import Journal, JournalEntry
from rigaudit.tools.actions.ops import CHANGE_FAILED, identical, matches, read_value, revert_text, set_value, wanted
from rigaudit.tools.actions.targets import AnyTarget
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import Host

Outcome = Literal["verified", "applied", "unchanged", "reverted", "failed"]


class TargetResult(Record):
    """What happened to one target. ``reverted`` means the change did not verify and was undone."""

    step_id: str
    target: AnyTarget
    outcome: Outcome
    before: str | None
    after: str | None
    message: str = ""

    @property
    def verified(self) -> bool:
        return self.outcome in ("verified", "unchanged")

    @property
    def changed(self) -> bool:
        """The host now differs from before because of this target."""
        return self.outcome in ("verified", "applied")


def short(value: str | None) -> str:
    """A value for one line of output: ``absent``, or its text with whitespace collapsed."""
    if value is None:
        return "absent"
    text = " ".join(value.split())
    return text if len(text) <= 40 else f"{len(value)} bytes"


async def apply_targets(host: Host, journal: Journal, step_id: str, targets: Sequence[AnyTarget]) -> list[TargetResult]:
    """Apply one step's targets with the journal protocol; never raises for host trouble (see ``outcome``).

    Every value before is read, and every change journaled ``planned`` and fsynced, before the
    first write; each write is then read back, and a target that did not take is reverted at once.
    """
    results: dict[int, TargetResult] = {}
    pending: list[tuple[int, AnyTarget, str | None, JournalEntry]] = []
    for index, target in enumerate(targets):
        before = await read_value(host, target)
        if not before.ok:
            results[index] = TargetResult(step_id, target, "failed", None, None, f"not changed: {before.error}")
        elif matches(target, before.value, wanted(target)):
            results[index] = TargetResult(step_id, target, "unchanged", before.value, before.value, "already at the wanted value")
        else:
            planned = journal.append(
                sync=False,
                kind="change",
                state="planned",
                step_id=step_id,
                target=target,
                before=before.value,
                after=wanted(target),
                revert=revert_text(target, before.value),
            )
            pending.append((index, target, before.value, planned))
    if pending:
        journal.sync()
    for index, target, before_value, planned in pending:
        results[index] = await _change(host, journal, planned, target, before_value)
    journal.sync()
    return [results[i] for i in range(len(targets))]


async def apply_target(host: Host, journal: Journal, step_id: str, target: AnyTarget) -> TargetResult:
    """:func:`apply_targets` for a single target."""
    return (await apply_targets(host, journal, step_id, [target]))[0]


async def _change(host: Host, journal: Journal, planned: JournalEntry, target: AnyTarget, before: str | None) -> TargetResult:
    desired = wanted(target)
    step_id = planned.step_id

    def conclude(outcome: Outcome, after: str | None, message: str) -> TargetResult:
        journal.append(
            sync=False,
            kind="change",
            state=outcome,
            ref=planned.seq,
            step_id=step_id,
            target=target,
            after=after,
            message=message,
        )
        return TargetResult(step_id, target, outcome, before, after, message)

    try:
        await set_value(host, target, desired)
    except CHANGE_FAILED as exc:
        # The write was refused; restore anyway in case part of it landed (restoring is idempotent).
        await _restore_quietly(host, target, before)
        return conclude("failed", before, f"write refused: {exc}")
    after = await read_value(host, target)
    if after.ok and matches(target, after.value, desired):
        return conclude("verified", after.value, "")
    seen = short(after.value) if after.ok else f"unreadable ({after.error})"
    try:
        await set_value(host, target, before)
    except CHANGE_FAILED as exc:
        return conclude("failed", after.value, f"did not verify (read {seen}, wanted {short(desired)}) and revert failed: {exc}")
    check = await read_value(host, target)
    if check.ok and matches(target, check.value, before):
        return conclude("reverted", check.value, f"did not verify (read {seen}, wanted {short(desired)}); reverted at once")
    return conclude("failed", check.value, f"did not verify (read {seen}) and the revert did not verify either")


async def _restore_quietly(host: Host, target: AnyTarget, before: str | None) -> None:
    current = await read_value(host, target)
    if current.ok and identical(target, current.value, before):
        return
    try:
        await set_value(host, target, before)
    except CHANGE_FAILED:
        return


async def restore_target(host: Host, target: AnyTarget, before: str | None) -> tuple[bool, str]:
    """Put ``before`` back and read it back: (verified, message)."""
    current = await read_value(host, target)
    if current.ok and identical(target, current.value, before):
        return True, "already at the value before"
    try:
        await set_value(host, target, before)
    except CHANGE_FAILED as exc:
        return False, f"restore refused: {exc}"
    check = await read_value(host, target)
    if check.ok and matches(target, check.value, before):
        return True, ""
    seen = short(check.value) if check.ok else f"unreadable ({check.error})"
    return False, f"restore did not verify (read {seen}, wanted {short(before)})"
