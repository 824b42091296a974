"""A plan step as a person sees it before deciding: its targets' current and new values, read now.

The approver shows a :class:`StepView`; ``apply``, ``rollback`` and ``bench ab`` build them here, beside the
actions they preview, so nothing below the orchestrator needs it.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence

from rigaudit.tools.actions.execute import short
from rigaudit.tools.actions.ops import matches, read_value, wanted
from rigaudit.tools.actions.targets import AnyTarget, PciRegisterTarget, ValueFileTarget, expand
from rigaudit.tools.actions.text import compress_paths, shell_lines
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.pci import apply_masked
from rigaudit.tools.schema.finding import WHERE_TEXT, CommandAction
from rigaudit.tools.schema.plan import PlanStep


def target_text(name: str, source: str) -> str:
    """The machine or copy a change lands on, as a prompt names it: ``this machine (gpu01)``,
    ``the snapshot copy /tmp/copy``, ``gpu02 over ssh``."""
    kind, _, where = source.partition(":")
    if kind == "snapshot" and where:
        return f"the snapshot copy {where}" if name == "" else f"the snapshot copy {where} (of {name})"
    if kind == "ssh":
        return f"{where or name} over ssh"
    return f"this machine ({name or socket.gethostname()})"


class StepView(Record):
    """What a person sees before deciding on one step."""

    step_id: str
    title: str
    where: str
    kind: str = "runtime"
    risk: str = "low"
    changes: tuple[str, ...] = ()
    """``what: current -> new`` lines."""
    verify: str = ""
    revert: str = ""
    details: tuple[str, ...] = ()
    """Shown on ``details``: rationale, every target, the commands."""
    question: str = ""
    """What to ask (default: ``Apply STEP?``)."""

    def render(self) -> str:
        head = f"{self.step_id}: {self.title}" if self.title else self.step_id
        lines = [head, f"  where: {self.where} · kind {self.kind} · risk {self.risk}"]
        lines += [f"  change: {c}" for c in self.changes]
        if self.verify:
            lines.append(f"  verify: {self.verify}")
        if self.revert:
            lines.append(f"  revert: {self.revert}")
        return "\n".join(lines)


def targets_of(step: PlanStep) -> list[AnyTarget]:
    return [t for action in step.actions for t in expand(action)]


def new_value(target: AnyTarget, current: str | None) -> str:
    """The value the target will read after the change (registers: the whole register)."""
    if isinstance(target, PciRegisterTarget) and current is not None:
        digits = 2 + 2 * target.width
        return f"{apply_masked(int(current, 16), target.value, target.mask):#0{digits}x}"
    return short(wanted(target))


def describe_targets(members: Sequence[AnyTarget]) -> str:
    """Several targets in a few words: ``128 files /sys/.../cpu*/...``, ``CAP_EXP+0x8 on 8 devices (...)``."""
    first = members[0]
    if len(members) == 1:
        return first.describe()
    if all(isinstance(m, ValueFileTarget) for m in members):
        return f"{len(members)} files {compress_paths(tuple(m.describe() for m in members))}"
    if all(isinstance(m, PciRegisterTarget) for m in members):
        devices = [m.describe().split(" ", 1)[0] for m in members]
        listed = ", ".join(devices[:3]) + (", ..." if len(devices) > 3 else "")
        return f"{first.describe().split(' ', 1)[1]} on {len(devices)} devices ({listed})"
    return ", ".join(m.describe() for m in members)


def summarize(rows: Sequence[tuple[AnyTarget, str | None, str | None]]) -> list[str]:
    """``what: before -> after`` lines, folding many identical changes into one (128 CPUs, 8 GPUs)."""
    return [f"{what}: {before} -> {after}" for what, before, after in summary_rows(rows)]


def summary_rows(rows: Sequence[tuple[AnyTarget, str | None, str | None]]) -> list[tuple[str, str, str]]:
    """(what, before, after) with identical changes folded together."""
    groups: dict[tuple[str, str, str], list[AnyTarget]] = {}
    for target, before, after in rows:
        kind = target.label if isinstance(target, ValueFileTarget) and target.label else target.type
        groups.setdefault((kind, short(before), short(after) if after is not None else "?"), []).append(target)
    return [(describe_targets(members), before, after) for (_, before, after), members in groups.items()]


async def preview(host: Host, step: PlanStep) -> tuple[StepView, bool]:
    """The step as the person sees it (current values read now), and whether it is already in place."""
    rows: list[tuple[AnyTarget, str | None, str | None]] = []
    in_place = True
    for target in targets_of(step):
        reading = await read_value(host, target)
        if not reading.ok:
            rows.append((target, None, f"{new_value(target, None)} (current value unreadable: {reading.error})"))
            in_place = False
            continue
        rows.append((target, reading.value, new_value(target, reading.value)))
        in_place = in_place and matches(target, reading.value, wanted(target))
    manual = [a.description for a in step.actions if isinstance(a, CommandAction)]
    details = [
        f"why: {step.rationale}" if step.rationale else "",
        f"subjects: {', '.join(step.subjects)}" if step.subjects else "",
        *(f"target: {t.describe()}: {short(b)} -> {a}" for t, b, a in rows),
        *(f"command: {c}" for action in step.actions for c in shell_lines(action)),
        *(f"not run by apply: {m}" for m in manual),
        f"persist: {step.persist}" if step.persist else "",
        *(f"order: {e.text()}" for e in step.edges),
    ]
    view = StepView(
        step_id=step.id,
        title=step.title,
        where=target_text(host.name, host.source) + ("" if step.where == "host" else f", {WHERE_TEXT[step.where]}"),
        kind=step.kind,
        risk=step.risk,
        changes=tuple(summarize(rows)),
        verify=step.verify,
        revert=step.revert,
        details=tuple(d for d in details if d),
    )
    return view, in_place
