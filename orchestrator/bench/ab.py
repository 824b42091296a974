"""Interleaved A/B of runtime fixes: apply and roll back approved plan steps between repeats, through the journal.

``bench ab --plan audit.json --only STEP[,STEP...]`` measures the host as it is (arm A, the
baseline) and with the steps applied, in cycles: every cycle visits every arm once, in the order
of a row of a Williams Latin square (two arms: A B, B A, A B, ...), so a drift over the session
(warm-up, clocks, another tenant) hits every arm alike and the difference between arms is the
fix's doing. With several steps, each step alone is an arm too, and all of them together, so each
step's share is measured (``--together``: only all of them).

A step switched on this machine must be the one rigaudit's rules give here, on a plan proven (by its
machine id) to be of this machine (:mod:`rigaudit.orchestrator.change.trust`): a plan file is data.

Every switch is approved once, up front (one decision covers the steps and all the switches), and
made with the apply machinery: each change journaled and fsynced before it is made, read back
after, and rolled back through the journal before the next baseline visit. At the end, on a failed
switch, on a server that stops answering, and on Ctrl-C, everything is rolled back; the journal
stays, so ``rigaudit rollback JOURNAL`` can finish the job if even that was interrupted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import anyio

from rigaudit.orchestrator.change.apply import ApplyOptions, classify, emit_results, selected_steps
from rigaudit.orchestrator.change.approval import StepApprover
from rigaudit.orchestrator.change.rollback import emit_restores
from rigaudit.orchestrator.change.trust import check_machine, rederive
from rigaudit.tools.actions.execute import apply_targets
from rigaudit.tools.actions.journal import Journal, JournalError, read_journal
from rigaudit.tools.actions.preview import StepView, preview, targets_of
from rigaudit.tools.actions.provenance import session_fields
from rigaudit.tools.actions.rollback import Restore, rollback
from rigaudit.tools.bench.ab import ALL_STEPS, BASELINE, AbResult, ArmResult, Visit
from rigaudit.tools.bench.loadgen import REAL, Load, LoadSession, LoadSpec, Progress, now_utc, reach
from rigaudit.tools.bench.results import Run
from rigaudit.tools.bench.schedule import visit_order, williams_rows
from rigaudit.tools.core.errors import NotApprovedError, OperationError, UsageError
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.schema.audit import HostSummary
from rigaudit.tools.schema.events.session import Warning_
from rigaudit.tools.schema.events.sink import EventSink, discard
from rigaudit.tools.schema.plan import Plan, PlanStep

MAX_CYCLES = 100
MAX_SETTLE = 1000
_RISK = {"low": 0, "medium": 1, "high": 2}


class SwitchFailed(OperationError):
    """A switch between arms (an apply or a rollback) did not verify, or the server stopped answering."""


class Arm(Record):
    name: str
    steps: tuple[PlanStep, ...]


class AbOptions(Record):
    cycles: int = 6
    """Visits of every arm; each visit runs every level once (6 finds a 30% gain at 10% noise per visit 80% of the time)."""
    settle: int = 1
    """Untimed requests before every visit (after a switch, or not: every arm is treated alike)."""
    together: bool = False
    """With several steps, measure only all of them together (not each step's share)."""
    in_container: bool = False


class AbRun(Record, frozen=False):
    """What ``run_ab`` did: the result (complete or not), and how the final rollback went."""

    result: AbResult
    restores: list[Restore] = field(default_factory=list)
    restore_error: str | None = None
    interrupted: bool = False

    @property
    def restore_failed(self) -> list[Restore]:
        return [r for r in self.restores if r.outcome == "failed"]


def arms_for(steps: Sequence[PlanStep], *, together: bool) -> list[Arm]:
    """The baseline, then each step alone (with several steps, unless ``together``), then all steps."""
    base = Arm(BASELINE, ())
    if len(steps) == 1:
        return [base, Arm(steps[0].id, (steps[0],))]
    alone = [] if together else [Arm(s.id, (s,)) for s in steps]
    return [base, *alone, Arm(ALL_STEPS, tuple(steps))]


def ab_steps(plan: Plan, only: Sequence[str] | None, options: AbOptions) -> list[PlanStep]:
    """The steps to switch: named by ``--only``, each a runtime step that can run on this host, or one restart step."""
    if not only:
        raise UsageError("bench ab needs --only STEP[,STEP...]: the runtime steps of the plan to measure")
    if len(set(only)) != len(only):
        raise UsageError(f"--only names a step twice: {','.join(only)}")
    try:
        steps = selected_steps(plan, only)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    restarts = [s.id for s in steps if s.kind == "restart"]
    if restarts and len(steps) > 1:
        raise UsageError(f"{restarts[0]} needs a server restart: measure it alone (--only {restarts[0]})")
    if restarts:
        return steps  # its arms restart the server (rigaudit.orchestrator.bench.step_arms)
    apply_options = ApplyOptions(in_container=options.in_container)
    for step in steps:
        status, reason = classify(step, apply_options)
        if status is not None:
            raise UsageError(f"{step.id} cannot be switched on this host ({status}: {reason})")
    return steps


async def vouch(plan_host: HostSummary | None, host: Host, steps: Sequence[PlanStep], *, live: bool) -> None:
    """Refuse a plan file's steps that rigaudit would not make on ``host`` (:mod:`~rigaudit.orchestrator.change.trust`):
    switched on this machine (``live``), the plan must be proven to be of it and each step rigaudit's own rule's."""
    await check_machine(plan_host, host, live=live)
    if live:
        await rederive(steps, host)


async def _previews(host: Host, steps: Sequence[PlanStep]) -> list[StepView]:
    views = []
    for step in steps:
        view, in_place = await preview(host, step)
        if in_place:
            raise UsageError(f"{step.id} is already in place on {host.name}: A and B would be the same (roll it back first)")
        views.append(view)
    return views


def _switches(visits: Sequence[tuple[int, Arm]]) -> int:
    current, count = BASELINE, 0
    for _, arm in visits:
        if arm.name != current:
            count += 1 if current == BASELINE or not arm.steps else 2
            current = arm.name
    return count + (current != BASELINE)


def _approval_view(
    host: Host,
    views: Sequence[StepView],
    arms: Sequence[Arm],
    visits: Sequence[tuple[int, Arm]],
    spec: LoadSpec,
    options: AbOptions,
) -> StepView:
    per_visit = options.settle + sum(spec.requests_for(c) for c in spec.concurrency)
    requests = spec.warmup + len(visits) * per_visit
    ids = ", ".join(v.step_id for v in views)
    order = " ".join(arm.name for _, arm in visits[: 2 * len(arms)])
    return StepView(
        step_id="bench ab",
        title=f"interleaved A/B of {ids}",
        where=host.name,
        kind="runtime",
        risk=max((v.risk for v in views), key=lambda r: _RISK.get(r, 0)),
        changes=tuple(f"{v.step_id}: {change}" for v in views for change in v.changes),
        verify="every change is read back after each switch; a switch that does not verify stops the session",
        revert="rolled back through the journal before every baseline visit, at the end, and on any failure or Ctrl-C",
        details=(
            f"arms: {', '.join(a.name for a in arms)}; {options.cycles} cycles, order {order} ...",
            f"load: {requests} streaming requests to {spec.base_url} (model {spec.model}, concurrency "
            f"{','.join(map(str, spec.concurrency))}, {spec.prompt_tokens} prompt / {spec.max_tokens} output tokens)",
            *(d for v in views for d in v.details),
        ),
        question=f"Switch {ids} on and off {_switches(visits)} times and send {requests} requests to {spec.base_url}?",
    )


async def _to_baseline(host: Host, journal: Journal, emit: EventSink) -> list[Restore]:
    entries, _ = read_journal(journal.path)
    restores = await rollback(host, entries, journal)
    emit_restores(emit, restores, "bench ab: back to the baseline")
    return restores


async def _switch(host: Host, journal: Journal, current: Arm, target: Arm, emit: EventSink) -> None:
    if current.steps:
        failed = [r for r in await _to_baseline(host, journal, emit) if r.outcome == "failed"]
        if failed:
            first = failed[0]
            raise SwitchFailed(f"rolling back {current.name} failed: {first.target.describe()}: {first.message}")
    for step in target.steps:
        results = await apply_targets(host, journal, step.id, targets_of(step))
        emit_results(emit, results)
        bad = [r for r in results if not r.verified]
        if bad:
            raise SwitchFailed(f"applying {step.id} failed: {bad[0].target.describe()}: {bad[0].message or bad[0].outcome}")


class _Session(Record, frozen=False):
    runs: dict[str, list[Run]]
    visits: list[Visit] = field(default_factory=list)
    error: str | None = None


async def _measure(
    host: Host,
    journal: Journal,
    visits: Sequence[tuple[int, Arm]],
    spec: LoadSpec,
    options: AbOptions,
    state: _Session,
    emit: EventSink,
    progress: Progress | None,
    load: Load,
) -> None:
    try:
        await _visits(host, journal, visits, spec, options, state, emit, progress, load)
    finally:
        with anyio.CancelScope(shield=True):
            await host.aclose()


async def _visits(
    host: Host,
    journal: Journal,
    visits: Sequence[tuple[int, Arm]],
    spec: LoadSpec,
    options: AbOptions,
    state: _Session,
    emit: EventSink,
    progress: Progress | None,
    load: Load,
) -> None:
    rows = williams_rows(len(spec.concurrency))
    current = Arm(BASELINE, ())
    async with load.connect(spec) as client:
        session = LoadSession(client, spec, progress, load.clock)
        await session.warm_up(spec.warmup)
        for index, (cycle, arm) in enumerate(visits):
            switched = arm.name != current.name
            if switched:
                await _switch(host, journal, current, arm, emit)
                current = arm
            await session.warm_up(options.settle, "settle")
            runs = []
            for level in rows[index % len(rows)]:
                concurrency = spec.concurrency[level]
                label = f"cycle {cycle + 1}/{options.cycles} {arm.name} c={concurrency}"
                runs.append(await session.run(concurrency, cycle, label))
            if all(r.requests_ok == 0 for r in runs):
                errors = [s.error for r in runs for s in r.samples if s.error]
                reason = errors[0] if errors else "no answer"
                raise SwitchFailed(f"every request of cycle {cycle + 1} ({arm.name}) failed ({reason}): is the server up?")
            state.runs[arm.name] += runs
            state.visits.append(Visit(cycle=cycle, arm=arm.name, started_s=runs[0].started_s or 0.0, switched=switched))


async def _restore(host: Host, journal: Journal, emit: EventSink) -> list[Restore]:
    try:
        return await _to_baseline(host, journal, emit)
    finally:
        await host.aclose()


def run_ab(
    open_host: Callable[[], Host],
    plan: Plan,
    steps: Sequence[PlanStep],
    spec: LoadSpec,
    approver: StepApprover,
    journal_path: Path,
    options: AbOptions,
    *,
    emit: EventSink | None = None,
    progress: Progress | None = None,
    load: Load = REAL,
) -> AbRun:
    """Ask once, then measure the arms cycle by cycle, switching through the journal; always end on the baseline.

    ``open_host`` gives the host to change (called again for the final rollback, in a fresh event loop);
    ``load`` the client and the clock of the measurements (the real ones unless told).
    Raises :class:`NotApprovedError` (nothing changed, no journal) when the switches are not approved.
    """
    emit = emit or discard
    if not 2 <= options.cycles <= MAX_CYCLES or not 0 <= options.settle <= MAX_SETTLE:
        raise UsageError(f"--cycles wants 2 to {MAX_CYCLES} and --settle 0 to {MAX_SETTLE}")
    approver.ensure_possible("nothing switched")
    host = open_host()
    views = anyio.run(_previews, host, steps)
    arms = arms_for(steps, together=options.together)
    visits = visit_order(arms, options.cycles)
    if (note := anyio.run(reach, load, spec)) is not None:  # before anything is asked or switched
        emit(Warning_(text=note))
    approval = approver.decide(_approval_view(host, views, arms, visits, spec, options), allow_all=False)
    if not approval.approved:
        raise NotApprovedError(f"bench ab: not approved ({approval.decision}); nothing was changed")
    state = _Session({arm.name: [] for arm in arms})
    started = now_utc()
    outcome = AbRun(_assemble(host, plan, steps, spec, options, arms, state, journal_path, started, complete=False))
    with Journal.create(journal_path) as journal:
        journal.append(
            kind="session",
            **anyio.run(session_fields, host, plan),
            message=f"bench ab steps={','.join(s.id for s in steps)} cycles={options.cycles} "
            f"arms={','.join(a.name for a in arms)}",
        )
        journal.append(kind="approval", step_id=approval.step_id, approval=approval, plan_hash=plan.digest())
        try:
            anyio.run(_measure, host, journal, visits, spec, options, state, emit, progress, load)
        except (SwitchFailed, JournalError) as exc:
            state.error = str(exc)
        except KeyboardInterrupt:
            state.error, outcome.interrupted = "interrupted (Ctrl-C)", True
        finally:
            try:
                outcome.restores = anyio.run(_restore, open_host(), journal, emit)
            except KeyboardInterrupt:
                outcome.restore_error, outcome.interrupted = "interrupted during the final rollback", True
            except JournalError as exc:
                outcome.restore_error = str(exc)
            outcome.result = _assemble(
                host, plan, steps, spec, options, arms, state, journal_path, started, complete=state.error is None
            )
    return outcome


def _assemble(
    host: Host,
    plan: Plan,
    steps: Sequence[PlanStep],
    spec: LoadSpec,
    options: AbOptions,
    arms: Sequence[Arm],
    state: _Session,
    journal_path: Path,
    started: str,
    *,
    complete: bool,
) -> AbResult:
    return AbResult(
        host=host.name,
        source=host.source,
        plan_hash=plan.digest(),
        steps=[s.id for s in steps],
        journal=str(journal_path),
        cycles=options.cycles,
        complete=complete,
        error=state.error,
        arms=[
            ArmResult(name=a.name, steps=[s.id for s in a.steps], result=spec.result(state.runs[a.name], started)) for a in arms
        ],
        visits=state.visits,
    )
