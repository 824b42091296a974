"""Interleaved A/B of arms that restart the server: ``bench ab --arm base='CMD' --arm fix='CMD'``.

A change that needs a restart (the server's environment, its open-file limit, a launch flag) cannot be
switched under a running server, so each arm is the command that brings the server up as that arm.
Before EVERY visit the server is restarted as the visit's arm, its readiness awaited (the first token
served, within ``--ready-timeout``), and warmed up on new connections: every visit is then a new server
session, so the cycles' log ratios are independent and their paired t interval counts the noise between
sessions (restarting only when the arm changes would pair visits that share a session and understate it).
The arms follow the rows of a Williams Latin square (A B, B A, ...), as the runtime arms do.

The person approves the whole session once (every command and how many restarts), each restart is
journaled (planned, then verified once the server serves, or failed) before and after it runs, and the
server is left as it was found: the baseline arm is restarted last unless ``--end-on`` names another,
also after a failed start, a server that stops answering, or Ctrl-C.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import anyio

from rigaudit.orchestrator.change.approval import StepApprover
from rigaudit.tools.actions.journal import Journal, JournalError
from rigaudit.tools.actions.preview import StepView
from rigaudit.tools.bench.ab import AbResult, ArmResult, Visit
from rigaudit.tools.bench.compare import DEFAULT_SESSION_CV, Settings
from rigaudit.tools.bench.loadgen import REAL, Load, LoadSession, LoadSpec, Progress, now_utc, time_left
from rigaudit.tools.bench.power import detectable, headline_share
from rigaudit.tools.bench.provenance import gpus_at_start
from rigaudit.tools.bench.restart import ArmCommand, SwitchFailed, run_command, wait_ready
from rigaudit.tools.bench.results import GpuAtStart, Run, host_name
from rigaudit.tools.bench.schedule import visit_order, williams_rows
from rigaudit.tools.core.errors import NotApprovedError, UsageError
from rigaudit.tools.core.record import Record, field

MAX_CYCLES = 100


class RestartOptions(Record):
    cycles: int = 6
    settle: int = 1
    """Untimed requests after every restart, besides the load's warm-up."""
    ready_timeout_s: float = 300.0
    """Seconds a command and the server's first token may take, together, after a restart."""
    end_on: str | None = None
    """The arm to leave the server as (None: the baseline, the first arm)."""
    steps: tuple[str, ...] = ()
    """The plan step the arms measure, when rigaudit derived them from one (rigaudit.orchestrator.bench.step_arms)."""
    about: tuple[str, ...] = ()
    """What the person is told of where the arms come from and what they change."""


class RestartRun(Record, frozen=False):
    """What ``run_restart_ab`` did: the result (complete or not) and whether the server was left as asked."""

    result: AbResult
    interrupted: bool = False
    restore_error: str | None = None


class _State(Record, frozen=False):
    runs: dict[str, list[Run]]
    visits: list[Visit] = field(default_factory=list)
    current: str | None = None
    """The arm the server was last (re)started as; None while a restart is under way or failed."""
    error: str | None = None
    gpus: list[GpuAtStart] = field(default_factory=list)
    """This machine's GPUs, read (never set) before the first restart."""


def plan_power(spec: LoadSpec, arms: int, cycles: int, settings: Settings) -> str:
    """Before the run: what ``cycles`` restarted visits a side can detect at the assumed spread between sessions."""
    cv = settings.session_cv if settings.session_cv is not None else DEFAULT_SESSION_CV
    share = headline_share(settings.alpha, len(spec.concurrency), arms - 1)
    found = detectable(math.sqrt(2.0) * cv, cycles, alpha=share, paired=True)
    said = "--session-cv" if settings.session_cv is not None else "assumed: what the 1x H200 measured; --session-cv sets it"
    where = f"about {found:.0%}" if found is not None else "nothing (2 cycles at least)"
    return (
        f"at {cycles} cycles, every visit a new server session (spread {cv:.0%} between sessions, {said}), this A/B "
        f"resolves changes of output tok/s of {where} (found 80% of the time)"
    )


def _view(arms: Sequence[ArmCommand], visits: int, spec: LoadSpec, options: RestartOptions, end: str, power: str) -> StepView:
    per_visit = spec.warmup + options.settle + sum(spec.requests_for(c) for c in spec.concurrency)
    order = " ".join(a.name for _, a in visit_order(list(arms), 2)[: 2 * len(arms)])
    return StepView(
        step_id="bench ab",
        title=f"interleaved A/B of {', '.join(options.steps or [a.name for a in arms])}: the server restarted before every visit",
        where=spec.base_url,
        kind="restart",
        risk="medium",
        changes=tuple(f"{a.name}: {a.command}" for a in arms),
        verify=f"after every restart the server must stream a token within {options.ready_timeout_s:g} s, or the session stops",
        revert=f"the server is restarted as {end} at the end, and on any failure or Ctrl-C",
        details=(
            f"{options.cycles} cycles, order {order} ...; {visits} restarts, then one as {end} if the last visit was not",
            f"load: {visits * per_visit} streaming requests to {spec.base_url} (model {spec.model}, concurrency "
            f"{','.join(map(str, spec.concurrency))}, {spec.prompt_tokens} prompt / {spec.max_tokens} output tokens)",
            *options.about,
            power,
            "the server does not serve its own traffic while it restarts",
        ),
        question=f"Restart the server {visits} times (as {' and '.join(a.name for a in arms)}) and send load to {spec.base_url}?",
    )


async def _restart(
    arm: ArmCommand, spec: LoadSpec, journal: Journal, log: Path, options: RestartOptions, state: _State, load: Load
) -> float:
    """Restart the server as ``arm`` and wait for its first token, journaled before and after; seconds it took."""
    planned = journal.append(kind="change", state="planned", step_id=f"restart:{arm.name}", message=arm.command)
    state.current = None
    start = load.clock()
    try:
        took = await run_command(arm, log=log, timeout_s=options.ready_timeout_s)
        ready = await wait_ready(spec, timeout_s=max(1.0, options.ready_timeout_s - took), load=load)
    except SwitchFailed as exc:
        with anyio.CancelScope(shield=True):
            journal.append(kind="change", state="failed", ref=planned.seq, step_id=f"restart:{arm.name}", message=str(exc))
        raise
    state.current = arm.name
    journal.append(
        kind="change",
        state="verified",
        ref=planned.seq,
        step_id=f"restart:{arm.name}",
        message=f"served a token after {ready:.1f} s",
    )
    return load.clock() - start


def _left(durations: Sequence[float], remaining: int) -> str:
    return time_left(sum(durations) / len(durations) * remaining) if durations and remaining > 0 else ""


async def _visits(
    arms: Sequence[ArmCommand],
    spec: LoadSpec,
    journal: Journal,
    log: Path,
    options: RestartOptions,
    state: _State,
    progress: Progress | None,
    load: Load,
) -> None:
    rows = williams_rows(len(spec.concurrency))
    visits = visit_order(list(arms), options.cycles)
    session: LoadSession | None = None
    durations: list[float] = []
    for index, (cycle, arm) in enumerate(visits):
        begin = load.clock()
        ready = await _restart(arm, spec, journal, log, options, state, load)
        async with load.connect(spec) as client:
            if session is None:
                session = LoadSession(client, spec, progress, load.clock)
            session.use(client)
            await session.warm_up(spec.warmup + options.settle, "warm-up after the restart")
            runs = []
            left = _left(durations, len(visits) - index)
            for level in rows[index % len(rows)]:
                concurrency = spec.concurrency[level]
                label = f"cycle {cycle + 1}/{options.cycles} {arm.name} c={concurrency}{left}"
                runs.append(await session.run(concurrency, cycle, label))
        if all(r.requests_ok == 0 for r in runs):
            errors = [s.error for r in runs for s in r.samples if s.error]
            raise SwitchFailed(f"every request of cycle {cycle + 1} ({arm.name}) failed ({errors[0] if errors else 'no answer'})")
        state.runs[arm.name] += runs
        state.visits.append(Visit(cycle=cycle, arm=arm.name, started_s=runs[0].started_s or 0.0, switched=True, ready_s=ready))
        durations.append(load.clock() - begin)


async def _leave(
    end: ArmCommand, spec: LoadSpec, journal: Journal, log: Path, options: RestartOptions, state: _State, load: Load
) -> None:
    if state.current != end.name:
        await _restart(end, spec, journal, log, options, state, load)


def check_arms(arms: Sequence[ArmCommand], options: RestartOptions) -> ArmCommand:
    """The arm to end on; one clear line for options that do not make a session."""
    if not 2 <= options.cycles <= MAX_CYCLES or not 0 <= options.settle <= 1000:
        raise UsageError(f"--cycles wants 2 to {MAX_CYCLES} and --settle 0 to 1000")
    if not 0 < options.ready_timeout_s <= 3600:
        raise UsageError("--ready-timeout wants seconds from 0 to 3600")
    end = options.end_on or arms[0].name
    found = next((a for a in arms if a.name == end), None)
    if found is None:
        raise UsageError(f"--end-on {end}: no such arm (the arms: {', '.join(a.name for a in arms)})")
    return found


def run_restart_ab(
    arms: Sequence[ArmCommand],
    spec: LoadSpec,
    approver: StepApprover,
    journal_path: Path,
    options: RestartOptions,
    settings: Settings,
    *,
    progress: Progress | None = None,
    load: Load = REAL,
) -> RestartRun:
    """Check the server answers as found, ask once, then restart and measure arm by arm; always leave it as ``end``.

    Raises :class:`NotApprovedError` (nothing restarted, no journal) when not approved, UsageError when nothing
    answers before the first restart.
    """
    end = check_arms(arms, options)
    approver.ensure_possible("nothing restarted")
    try:
        anyio.run(lambda: wait_ready(spec, timeout_s=min(30.0, options.ready_timeout_s), load=load))
    except SwitchFailed as exc:
        raise UsageError(f"{exc}: start the server as {arms[0].name} before bench ab") from None
    visits = len(arms) * options.cycles
    power = plan_power(spec, len(arms), options.cycles, settings)
    approval = approver.decide(_view(arms, visits, spec, options, end.name, power), allow_all=False)
    if not approval.approved:
        raise NotApprovedError(f"bench ab: not approved ({approval.decision}); nothing was restarted")
    state = _State({a.name: [] for a in arms}, current=arms[0].name, gpus=gpus_at_start())
    started = now_utc()
    log = journal_path.with_suffix(".restarts.log")
    outcome = RestartRun(_assemble(arms, spec, options, state, journal_path, started, None))
    with Journal.create(journal_path) as journal:
        journal.append(
            kind="session",
            host=host_name(),
            source="live",
            message=f"bench ab arms={','.join(a.name for a in arms)} cycles={options.cycles} end-on={end.name}; restarts "
            f"logged in {log}",
        )
        journal.append(kind="approval", step_id=approval.step_id, approval=approval)
        try:
            anyio.run(_visits, arms, spec, journal, log, options, state, progress, load)
        except (SwitchFailed, JournalError, OSError) as exc:
            state.error = str(exc)
        except KeyboardInterrupt:
            state.error, outcome.interrupted = "interrupted (Ctrl-C)", True
        finally:
            try:
                anyio.run(_leave, end, spec, journal, log, options, state, load)
            except KeyboardInterrupt:
                outcome.restore_error, outcome.interrupted = "interrupted while restarting the server as found", True
            except (SwitchFailed, JournalError, OSError) as exc:
                outcome.restore_error = str(exc)
            if outcome.restore_error:
                outcome.restore_error += f"; the server was left as {state.current or 'unknown'}: restart it with {end.command!r}"
            outcome.result = _assemble(
                arms, spec, options, state, journal_path, started, end.name if state.current == end.name else None
            )
    return outcome


def _assemble(
    arms: Sequence[ArmCommand],
    spec: LoadSpec,
    options: RestartOptions,
    state: _State,
    journal_path: Path,
    started: str,
    restored: str | None,
) -> AbResult:
    return AbResult(
        host=host_name(),
        source="live",
        plan_hash="",
        steps=list(options.steps),
        journal=str(journal_path),
        cycles=options.cycles,
        complete=state.error is None and len(state.visits) == len(arms) * options.cycles,
        error=state.error,
        arms=[
            ArmResult(name=a.name, command=a.command, result=spec.result(state.runs[a.name], started, state.gpus)) for a in arms
        ],
        visits=state.visits,
        baseline=arms[0].name,
        restarts=True,
        restored=restored,
    )
