"""Apply a plan's runtime steps to a host: sort, ask, journal, change, verify, persist.

Only ``runtime`` steps meant for this machine run; the rest are reported (``deferred`` for
restart/reboot/firmware/hardware, ``elsewhere`` for the hypervisor, ``manual`` for steps that are
only commands, or measurements) and can be written out with ``--emit-script``. Steps run in the plan's
order, which honours its graph: a step whose prerequisite (``requires``, ``not_before``) was declined, failed,
deferred or not run is skipped (``blocked``) and says why; a step that conflicts with one applied is skipped too.
Otherwise one failing does not stop the others; ``quit`` does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Literal

import anyio
from pydantic import ValidationError

from rigaudit.agents.facts.os_image import detect_os_image
from rigaudit.agents.persist import service_persist
from rigaudit.orchestrator.change.approval import StepApprover
from rigaudit.tools.actions.execute import TargetResult, apply_targets, short
from rigaudit.tools.actions.journal import Approval, Journal
from rigaudit.tools.actions.ops import read_value
from rigaudit.tools.actions.persist import manual_persist, persist_lines, persist_targets
from rigaudit.tools.actions.preview import StepView, preview, target_text, targets_of
from rigaudit.tools.actions.provenance import session_fields
from rigaudit.tools.actions.script import ScriptStep
from rigaudit.tools.actions.targets import AnyTarget, expand, refusal
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.files.bounded import InputError, read_regular
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.schema.audit import AuditResult, HostSummary
from rigaudit.tools.schema.events.apply import ChangeApplied
from rigaudit.tools.schema.events.sink import EventSink, discard
from rigaudit.tools.schema.finding import WHERE_TEXT, Action, CommandAction, PciRegisterAction, ServiceStartAction
from rigaudit.tools.schema.plan import BLOCKING, Plan, PlanStep

StepStatus = Literal[
    "applied", "partial", "failed", "unchanged", "declined", "deferred", "elsewhere", "manual", "blocked", "not_attempted"
]
DONE: tuple[StepStatus, ...] = ("applied", "unchanged")
"""A step in one of these states has run (or was already in place): the steps that wait for it may run."""
SCOPES = ("runtime",)
MAX_PLAN_BYTES = 64 * 1024 * 1024


class ApplyOptions(Record):
    scope: str = "runtime"
    only: Sequence[str] | None = None
    persist: bool = False
    in_container: bool = False
    """The host is itself a container: steps whose ``where`` is ``container`` run here."""


class StepReport(Record, frozen=False):
    step: PlanStep
    status: StepStatus
    reason: str = ""
    results: list[TargetResult] = field(default_factory=list)
    approval: Approval | None = None


class ApplyReport(Record, frozen=False):
    host: str
    source: str
    plan_hash: str
    journal: Path | None
    steps: list[StepReport] = field(default_factory=list)
    persist: list[TargetResult] = field(default_factory=list)
    persist_notes: list[str] = field(default_factory=list)
    quit: bool = False
    interrupted: bool = False
    """Ctrl-C at a prompt ended the run: the steps after it were not attempted."""

    def by_status(self, *statuses: StepStatus) -> list[StepReport]:
        return [s for s in self.steps if s.status in statuses]

    @property
    def changed(self) -> list[TargetResult]:
        return [r for s in self.steps for r in s.results if r.changed] + [r for r in self.persist if r.changed]

    @property
    def problems(self) -> list[TargetResult]:
        return [r for s in self.steps for r in s.results if r.outcome in ("failed", "reverted")] + [
            r for r in self.persist if r.outcome in ("failed", "reverted")
        ]

    def script_steps(self) -> list[ScriptStep]:
        """Everything not done here, for ``--emit-script``, in the plan's order: runtime work for elsewhere runs
        live once every step it waits for is done here or runs live before it; the rest is commented out."""
        items: list[ScriptStep] = []
        ready = {r.step.id for r in self.steps if r.status in DONE}
        for report in self.steps:
            if report.status in DONE:
                continue
            pending = [e.step for e in report.step.waits_for() if e.step not in ready]
            foreign = _foreign_addresses(report.step)
            elsewhere = report.step.kind == "runtime" and report.status in ("elsewhere", "manual")
            live = elsewhere and not pending and not foreign
            reason = report.reason or report.status
            if elsewhere and pending:
                reason += f"; commented out until {', '.join(pending)} has run"
            if elsewhere and foreign:
                reason += f"; commented out: {foreign}"
            if live:
                ready.add(report.step.id)
            items.append(ScriptStep(report.step, reason, live))
        return items


def _foreign_addresses(step: PlanStep) -> str:
    """Why ``step``'s commands cannot run as written on its layer ("" when they can): a PCI address read here
    means another device on a VM's hypervisor, or inside a guest this host serves."""
    if step.where not in ("hypervisor", "guest") or not any(isinstance(a, PciRegisterAction) for a in step.actions):
        return ""
    there = "the hypervisor" if step.where == "hypervisor" else "the guest"
    return f"its PCI addresses are this machine's view, not {there}'s: find each device's address there (lspci -D) first"


def load_plan(path: Path) -> Plan:
    """The plan of an ``audit --json`` file (or a bare plan); one clear line when it is not one."""
    return load_plan_file(path)[0]


def load_plan_file(path: Path) -> tuple[Plan, HostSummary | None]:
    """The plan of an ``audit --json`` file and the host it was made on (``None``: a bare plan names none).

    A plan file is untrusted input: a regular file only, bounded in size; every action in it is
    validated (names, paths, values) before anything can run.
    """
    try:
        text = read_regular(path, limit=MAX_PLAN_BYTES, what=str(path)).decode("utf-8")
    except InputError as exc:
        raise UsageError(f"cannot read the plan: {exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not an `audit --json` result (not UTF-8 text)") from None
    try:
        if '"steps"' in text[:200] and '"schema"' not in text[:200]:
            plan, host = Plan.model_validate_json(text), None
        else:
            result = AuditResult.model_validate_json(text)
            plan, host = result.plan, result.host
    except ValidationError as exc:
        raise UsageError(f"{path}: not an `audit --json` result ({exc.error_count()} validation error(s))") from None
    breaches = plan.order_breaches()
    if breaches:
        more = f" (and {len(breaches) - 1} more)" if len(breaches) > 1 else ""
        raise UsageError(f"{path}: refusing a plan whose order breaks its own edges: {breaches[0]}{more}")
    return plan, host


def classify(step: PlanStep, options: ApplyOptions) -> tuple[StepStatus | None, str]:
    """Why a step will not run here (status and reason), or ``(None, "")`` when it will."""
    if step.blocked:
        return "blocked", step.blocked
    if step.kind == "measure":
        commands = "; ".join(" ".join(a.argv) for a in step.actions if isinstance(a, CommandAction) and a.argv)
        return "manual", f"a measurement to take first (apply runs no commands): {commands or step.title}"
    if step.source == "llm":
        return "manual", "the model's suggestion (LLM): no typed action, rigaudit never runs it"
    if step.kind != "runtime":
        need = {"restart": "a restart", "reboot": "a reboot", "firmware": "a firmware change", "hardware": "hardware work"}
        return "deferred", f"needs {need.get(step.kind, step.kind)}; --scope {options.scope} never runs it"
    if step.where in ("hypervisor", "container_host", "container_config", "guest"):
        return "elsewhere", f"runs on {WHERE_TEXT[step.where]}"
    if step.where == "container" and not options.in_container:
        return "elsewhere", "runs in the container"
    if not targets_of(step):
        return "manual", "only a command to run by hand (apply never runs commands)"
    refused = next((why for t in targets_of(step) if (why := refusal(t)) is not None), None)
    if refused is not None:
        return "not_attempted", f"refused: {refused}"
    return None, ""


def _status(results: Sequence[TargetResult]) -> StepStatus:
    good = [r for r in results if r.verified]
    if len(good) == len(results):
        return "unchanged" if all(r.outcome == "unchanged" for r in results) else "applied"
    return "partial" if good else "failed"


AfterStep = Callable[[StepReport], Awaitable[None]]
"""What :func:`apply_plan` awaits after a step's changes were made, given the step's report: the seam a test
pauses an apply at, between two steps, to kill or interrupt it there."""


async def go_on(done: StepReport) -> None:
    """The real :data:`AfterStep`: nothing to wait for, the next step comes."""


def emit_results(emit: EventSink, results: Sequence[TargetResult]) -> None:
    """One ``ChangeApplied`` event per target result."""
    for r in results:
        emit(
            ChangeApplied(
                step_id=r.step_id,
                target=r.target.describe(),
                before=short(r.before),
                after=short(r.after),
                verified=r.verified,
                reverted=r.outcome == "reverted",
                message=r.message,
            )
        )


def selected_steps(plan: Plan, only: Sequence[str] | None) -> list[PlanStep]:
    """The plan's steps, or those named by ``--only`` (unknown names raise ``KeyError`` with the list)."""
    if not only:
        return list(plan.steps)
    known = {s.id for s in plan.steps}
    missing = [name for name in only if name not in known]
    if missing:
        raise KeyError(f"no such step: {', '.join(missing)} (the plan has: {', '.join(sorted(known)) or 'no steps'})")
    return [s for s in plan.steps if s.id in set(only)]


class _Apply(Record, frozen=False):
    """One apply in progress: what it works on, and where it stands (what a Ctrl-C while working reports)."""

    host: Host
    plan: Plan
    report: ApplyReport
    approver: StepApprover
    journal: Journal
    emit: EventSink
    after_step: AfterStep
    current: StepReport | None = None
    """The step the run has reached."""
    applying: bool = False
    """Its changes are being made."""


def _sorted_report(host: Host, plan: Plan, options: ApplyOptions) -> tuple[ApplyReport, list[PlanStep]]:
    """The report with every selected step, and the steps that may run here (the rest say why not)."""
    report = ApplyReport(host.name, host.source, plan.digest(), None)
    runnable: list[PlanStep] = []
    for step in selected_steps(plan, options.only):
        status, reason = classify(step, options)
        if status is None:
            runnable.append(step)
        report.steps.append(StepReport(step, status or "not_attempted", reason))
    return report, runnable


def _quit_reason(approver: StepApprover) -> str:
    """Why a step after a quit is not attempted."""
    if approver.ended:
        return "not attempted: input ended (Ctrl-D)"
    return "not attempted: no answer in time" if approver.timed_out else "not attempted: stopped by quit"


def _refusal_reason(approver: StepApprover, approval: Approval) -> str:
    """Why a step that was not approved did not run."""
    if approver.ended:
        return "end of input"
    if approver.timed_out:
        return "no answer in time"
    return "declined" if approval.decision == "no" else "not attempted: stopped by quit"


async def _run_step(run: _Apply, entry: StepReport) -> bool:
    """One runnable step: held back by the plan's edges, already in place, or asked and applied.
    ``False``: Ctrl-C at its prompt ends the run."""
    plan_hash, step = run.report.plan_hash, entry.step
    held = await held_back(run.host, step, run.report, run.plan)
    if held:
        entry.status, entry.reason = "blocked", held
        run.journal.append(kind="skip", step_id=step.id, message=held, plan_hash=plan_hash)
        return True
    view, in_place = await preview(run.host, step)
    if in_place:
        entry.status, entry.reason = "unchanged", "already in place"
        return True
    try:
        approval = run.approver.decide(view)
    except KeyboardInterrupt:
        _interrupted(run.report, entry)
        return False
    run.journal.append(kind="approval", step_id=step.id, approval=approval, plan_hash=plan_hash)
    entry.approval = approval
    if not approval.approved:
        entry.status = "declined" if approval.decision == "no" else "not_attempted"
        entry.reason = _refusal_reason(run.approver, approval)
        run.report.quit = run.approver.quit
        return True
    run.applying = True
    entry.results = await apply_targets(run.host, run.journal, step.id, targets_of(step))
    run.applying = False
    emit_results(run.emit, entry.results)
    entry.status = _status(entry.results)
    await run.after_step(entry)
    return True


async def _run_steps(run: _Apply, runnable: Sequence[PlanStep]) -> None:
    """The runnable steps in the plan's order, until the last, a quit (the rest say why) or a Ctrl-C at a prompt."""
    for entry in run.report.steps:
        await anyio.lowlevel.checkpoint()  # where a Ctrl-C while working ends the run
        run.current = entry
        if entry.step not in runnable:
            continue
        if run.approver.quit:
            entry.reason = _quit_reason(run.approver)
            continue
        if not await _run_step(run, entry):
            break


async def apply_plan(
    host: Host,
    plan: Plan,
    *,
    approver: StepApprover,
    journal_path: Path,
    options: ApplyOptions | None = None,
    emit: EventSink | None = None,
    on_interrupt: Callable[[ApplyReport], None] | None = None,
    after_step: AfterStep = go_on,
) -> ApplyReport:
    """Apply what may run here, asking the approver about each step; the journal is created only if
    something may be changed (so a refused apply leaves no trace). Ctrl-C at a prompt ends the run
    there: the report says so (:attr:`ApplyReport.interrupted`) and is returned with what was done. Ctrl-C
    while working cancels the run: ``on_interrupt`` gets the report as it stands, then the cancellation goes on.
    ``after_step`` is awaited after each step whose changes were made (the real one goes straight on)."""
    options = options or ApplyOptions()
    emit = emit or discard
    report, runnable = _sorted_report(host, plan, options)
    if not runnable:
        return report
    approver.ensure_possible(f"nothing applied ({len(runnable)} runtime step(s) waiting)")
    session = await session_fields(host, plan)  # the plan and the machine: rollback checks the journal against them
    with Journal.create(journal_path) as journal:
        report.journal = journal.path
        journal.append(
            kind="session",
            message=f"apply scope={options.scope} steps={','.join(s.id for s in runnable)} persist={options.persist}",
            **session,
        )
        run = _Apply(host, plan, report, approver, journal, emit, after_step)
        try:
            await _run_steps(run, runnable)
        except anyio.get_cancelled_exc_class():  # Ctrl-C while working (not at a prompt): say what was done, then end
            if run.current is not None:
                _interrupted(report, run.current, applying=run.applying)
            if on_interrupt is not None:
                on_interrupt(report)
            raise
        if options.persist and not approver.quit and not report.interrupted:
            try:
                await _persist(host, report, approver, journal, emit, in_container=options.in_container)
            except KeyboardInterrupt:
                report.interrupted = True
                report.persist_notes.append("persist not attempted: interrupted (Ctrl-C)")
    return report


async def held_back(host: Host, step: PlanStep, report: ApplyReport, plan: Plan) -> str:
    """Why ``step`` may not run now, by the plan's edges ("" when it may): a step it waits for (``requires``,
    ``not_before``) has not run in this apply (declined, failed, deferred, not selected) and is not already in
    place; or a step it conflicts with was applied."""
    done = {r.step.id: r for r in report.steps if r.status in DONE}
    seen = {r.step.id: r for r in report.steps}
    for edge in step.edges:
        if edge.kind == "conflicts" and edge.step in done and done[edge.step].status == "applied":
            return f"not run: conflicts with {edge.step}, applied in this run" + (f" ({edge.why})" if edge.why else "")
        if edge.kind not in BLOCKING or edge.step in done:
            continue
        other = plan.step(edge.step)
        if other is None:
            continue  # load_plan_file refuses such a plan; a plan built in memory names only its own steps
        verb = "unsafe before" if edge.kind == "not_before" else "waits for"
        ran = seen.get(edge.step)
        if ran is None and other.kind == "runtime" and targets_of(other) and (await preview(host, other))[1]:
            continue  # not selected here, but its change is already in place
        state = _edge_state(ran, other)
        why = f" ({edge.why})" if edge.why else ""
        return f"not run: {verb} {edge.step}, which {state}{why}"
    return ""


def _edge_state(ran: StepReport | None, other: PlanStep) -> str:
    if other.kind not in ("runtime", "measure"):
        return f"needs a {other.kind} that has not happened: do it, audit again, then apply"
    if ran is None:
        return "is not part of this apply (--only): run it first"
    if ran.status == "declined":
        return "was declined"
    if ran.status == "failed":
        return "failed"
    if ran.status == "partial":
        return "was only partly applied"
    if ran.status == "blocked":
        return "could not run either"
    return f"did not run ({ran.reason or ran.status})"


def _interrupted(report: ApplyReport, at: StepReport, *, applying: bool = False) -> None:
    """Ctrl-C while ``at`` was asked (or, ``applying``, while its changes were made): the later runnable steps
    are not attempted."""
    report.interrupted = report.quit = True
    if applying:
        at.status = "partial"
        at.reason = "interrupted (Ctrl-C) while its changes were made: the journal holds each one; rollback undoes them"
    reached = False
    for entry in report.steps:
        reached = reached or entry is at
        if reached and entry.status == "not_attempted" and not entry.reason:
            entry.reason = "not attempted: interrupted (Ctrl-C)"


def _persistable(report: ApplyReport) -> list[Action]:
    """Actions all of whose targets now hold their value (applied, or already in place)."""
    actions: list[Action] = []
    for entry in report.steps:
        if entry.status not in ("applied", "partial", "unchanged"):
            continue
        by_target = {r.target: r for r in entry.results}
        for action in entry.step.actions:
            targets = expand(action)
            if targets and all(t not in by_target or by_target[t].verified for t in targets):
                actions.append(action)
    return actions


async def _persist(
    host: Host, report: ApplyReport, approver: StepApprover, journal: Journal, emit: EventSink, *, in_container: bool = False
) -> None:
    actions = _persistable(report)
    image = await detect_os_image(Probe(host), in_container)
    if image.image_based and image.kind not in ("flatcar", "coreos"):  # no systemd-sysctl, tmpfiles or /etc to write
        report.persist_notes = [service_persist(a.unit, image) for a in actions if isinstance(a, ServiceStartAction)]
        if persist_lines(actions):
            report.persist_notes.append(
                f"persist files not written: {image.label} keeps no /etc/sysctl.d, modules-load.d, tmpfiles.d or udev "
                "rules; set each change in its own configuration (each step's persist advice names it)"
            )
        return
    report.persist_notes = manual_persist(actions)
    targets = await persist_targets(host, actions)
    if not targets:
        if actions and persist_lines(actions):
            report.persist_notes.append("persist files already hold every change")
        return
    rows: list[tuple[AnyTarget, str | None, str | None]] = []
    for target in targets:
        current = await read_value(host, target)
        rows.append((target, current.value if current.ok else None, f"{len(target.content.splitlines())} lines"))
    view = StepView(
        step_id="persist",
        title="keep these changes across reboots",
        where=target_text(host.name, host.source),
        changes=tuple(f"{t.describe()}: {short(b)} -> {a}" for t, b, a in rows),
        revert="rigaudit rollback JOURNAL restores or removes these files",
        question="Write these files so the changes survive a reboot?",
        details=tuple(line for t in targets for line in (f"--- {t.path}", *t.content.splitlines())),
    )
    approval = approver.decide(view, allow_all=False)
    journal.append(kind="approval", step_id="persist", approval=approval, plan_hash=report.plan_hash)
    if not approval.approved:
        report.persist_notes.append("persist declined")
        return
    report.persist = await apply_targets(host, journal, "persist", list(targets))
    emit_results(emit, report.persist)
