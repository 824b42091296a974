"""One apply from start to end, as ``rigaudit apply`` runs it: plan, copy, apply, re-audit, script, report.

The work is :func:`rigaudit.orchestrator.change.apply.apply_plan`; this module adds what surrounds it for
a command (and what the chat reuses: :func:`reaudit`, :func:`finished`). Its summary is one
:class:`~rigaudit.tools.schema.events.apply.ApplyFinished` event; nothing here prints.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
from anyio.abc import TaskStatus

from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.orchestrator.change.apply import (
    ApplyOptions,
    ApplyReport,
    StepReport,
    apply_plan,
    classify,
    selected_steps,
)
from rigaudit.orchestrator.change.approval import Console, StepApprover
from rigaudit.orchestrator.change.sections import apply_section
from rigaudit.orchestrator.change.trust import check_machine, rederive
from rigaudit.orchestrator.hosts.choose import in_container
from rigaudit.orchestrator.hosts.identity import HostIdentity, identify
from rigaudit.orchestrator.hosts.snapshots import copy_snapshot
from rigaudit.orchestrator.report.document import append_section
from rigaudit.tools.actions.journal import utc_now
from rigaudit.tools.actions.preview import summarize
from rigaudit.tools.actions.script import render_script
from rigaudit.tools.actions.targets import AnyTarget
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.audit import HostSummary
from rigaudit.tools.schema.events.apply import AppliedStep, ApplyFinished
from rigaudit.tools.schema.events.session import ReportWritten
from rigaudit.tools.schema.events.sink import EventSink, discard
from rigaudit.tools.schema.plan import Plan, PlanStep

__all__ = ["ApplyRequest", "finished", "reaudit", "run_apply", "stopped_text"]


class ApplyRequest(Record):
    journal: Path
    plan: Plan | None = None
    """The plan to apply; ``None``: audit the host first and apply its plan."""
    snapshot: Path | None = None
    into: Path | None = None
    """With ``snapshot``: the new copy that is changed (the snapshot itself never is)."""
    scope: str = "runtime"
    only: Sequence[str] | None = None
    persist: bool = False
    assume_yes: bool = False
    emit_script: Path | None = None
    report: Path | None = None
    plan_host: HostSummary | None = None
    """The host ``plan`` was audited on: a plan not proven to be of this machine is refused before anything runs
    (:mod:`rigaudit.orchestrator.change.trust`)."""


async def reaudit(host: Host, steps: Sequence[StepReport]) -> dict[str, str]:
    """Status of the steps' checks on the changed host: the proof that the plan did what it claims."""
    checks = dict.fromkeys(c for e in steps if e.step.kind != "measure" for c in (e.step.check, *e.step.also_checks))
    statuses = {f.check: f.status for f in (await run_audit(host)).findings}
    return {check: statuses.get(check, "not checked") for check in checks}


def _step(entry: StepReport) -> AppliedStep:
    changes: list[tuple[str, str]] = []
    for outcome in ("verified", "applied", "reverted", "failed"):
        rows: list[tuple[AnyTarget, str | None, str | None]] = [
            (r.target, r.before, r.after) for r in entry.results if r.outcome == outcome
        ]
        changes += [(text, outcome) for text in summarize(rows)]
    problems = [f"{r.target.describe()}: {r.message}" for r in entry.results if r.outcome in ("reverted", "failed")]
    return AppliedStep(step_id=entry.step.id, status=entry.status, reason=entry.reason, changes=changes, problems=problems)


def stopped_text(report: ApplyReport, approver: StepApprover | None = None) -> str:
    """Why ``report`` ended early, in a few words (``""``: it ran to its end)."""
    if report.interrupted:
        return "interrupted (Ctrl-C)"
    if approver is not None and approver.ended:
        return "input ended (Ctrl-D)"
    if approver is not None and approver.timed_out:
        return "no answer in time"
    return "quit" if report.quit else ""


def finished(
    report: ApplyReport, *, reaudited: dict[str, str] | None = None, copy: Path | None = None, stopped: str = ""
) -> ApplyFinished:
    """The event that sums up ``report``."""
    undo = ""
    if report.journal is not None:
        undo = f"rigaudit rollback {report.journal}" + (f" --snapshot {copy}" if copy is not None else "")
    return ApplyFinished(
        host=report.host,
        source=report.source,
        plan_hash=report.plan_hash,
        steps=[_step(e) for e in report.steps],
        persist=[(f"{r.target.describe()}: {r.outcome} {r.message}".rstrip(), r.verified) for r in report.persist],
        persist_notes=list(report.persist_notes),
        journal=str(report.journal) if report.journal is not None else None,
        undo=undo,
        reaudit=reaudited or {},
        reaudited=str(copy) if copy is not None and reaudited else "",
        stopped=stopped or stopped_text(report),
    )


def _write_script(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        path.chmod(0o755)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


async def _stop_on_sigint(scope: anyio.CancelScope, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
    """Ctrl-C while changes are made (not at a prompt, where it raises at once): cancel the apply at its next
    step, so that what was done is said and written before the run ends. Listening before the apply starts."""
    if sys.platform == "win32" or threading.current_thread() is not threading.main_thread():
        task_status.started()
        return
    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        task_status.started()
        async for _ in signals:
            scope.cancel()
            return


async def _plan_of(source: Host, request: ApplyRequest, emit: EventSink) -> tuple[HostIdentity, Plan]:
    """This machine's identity and the plan: a file's (proven to be of this machine, by an id, each step rigaudit's
    own: trust.py), or the plan of an audit run now."""
    if request.plan is not None:
        here = await check_machine(request.plan_host, source, live=request.into is None)
        return here, request.plan
    here = await identify(source)
    return here, (await run_audit(source, emit=emit)).plan


async def _checked_steps(source: Host, request: ApplyRequest, plan: Plan, options: ApplyOptions) -> list[PlanStep]:
    """The steps ``--only`` selects; a file's steps that may run on this machine re-derived from it (trust.py)."""
    try:
        steps = selected_steps(plan, request.only)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    if request.plan is not None and request.into is None:
        await rederive([s for s in steps if classify(s, options)[0] in (None, "not_attempted")], source)
    return steps


async def _changed_host(source: Host, request: ApplyRequest) -> Host:
    """What the apply changes: ``source``, or the new copy ``into`` of the snapshot."""
    if request.into is None:
        return source
    if request.snapshot is None:
        raise UsageError("--into needs --snapshot: a snapshot is changed only as a new copy")
    await anyio.to_thread.run_sync(copy_snapshot, request.snapshot, request.into)
    return SnapshotHost(request.into, writable=True)


async def _apply_until_stopped(
    host: Host,
    plan: Plan,
    request: ApplyRequest,
    approver: StepApprover,
    options: ApplyOptions,
    emit: EventSink,
    interrupted: Callable[[ApplyReport], None],
) -> ApplyReport:
    """:func:`apply_plan`, stopped by the first Ctrl-C (``interrupted`` says what was done, then
    ``KeyboardInterrupt``); the host is closed whatever happens."""
    done: ApplyReport | None = None
    try:
        with anyio.CancelScope() as stop:
            async with anyio.create_task_group() as group:
                await group.start(_stop_on_sigint, stop)
                done = await apply_plan(
                    host,
                    plan,
                    approver=approver,
                    journal_path=request.journal,
                    options=options,
                    emit=emit,
                    on_interrupt=interrupted,
                )
                group.cancel_scope.cancel()
        if done is None:  # cancelled while working: ``interrupted`` said what was done
            raise KeyboardInterrupt
        done.interrupted = done.interrupted or stop.cancelled_caught
    except Exception as failed:  # the task group wraps what apply_plan raised in a group: raise it as itself
        inner: tuple[BaseException, ...] = getattr(failed, "exceptions", ())
        if len(inner) == 1 and isinstance(inner[0], Exception):
            raise inner[0] from None
        raise
    finally:
        with anyio.CancelScope(shield=True):
            await host.aclose()
    return done


def _write_outputs(
    report: ApplyReport,
    request: ApplyRequest,
    here: HostIdentity,
    checked: dict[str, str] | None,
    when: str,
    emit: EventSink,
) -> None:
    """``--emit-script`` and the report's Applied changes section, dated ``when`` (the apply's end)."""
    if request.emit_script is not None:
        script = render_script(report.script_steps(), host=report.host, plan_hash=report.plan_hash, generated_at=when)
        _write_script(request.emit_script, script)
        live = sum(1 for item in report.script_steps() if item.live)
        emit(ReportWritten(path=str(request.emit_script), section=f"script: {live} step(s) to run elsewhere"))
    if request.report is not None and report.journal is not None:
        append_section(request.report, "Applied changes", apply_section(report, when, checked), host=here)
        emit(ReportWritten(path=str(request.report), section="Applied changes"))


async def run_apply(
    source: Host,
    request: ApplyRequest,
    *,
    emit: EventSink = discard,
    interactive: bool | None = None,
    console: Console | None = None,
) -> ApplyReport:
    """Plan (or take the given one), ask about each runtime step, apply into ``into`` or ``source``, then
    re-audit the copy, write ``--emit-script`` and the report section. Emits :class:`ApplyFinished`.

    Ctrl-C at a prompt: what was done is still reported and written down, then ``KeyboardInterrupt``
    is raised again so that the whole run (a command, a conversation) ends."""
    here, plan = await _plan_of(source, request, emit)
    options = ApplyOptions(
        scope=request.scope, only=request.only, persist=request.persist, in_container=await in_container(source)
    )
    steps = await _checked_steps(source, request, plan, options)
    approver = StepApprover(plan.digest(), assume_yes=request.assume_yes, interactive=interactive, console=console, emit=emit)
    runnable = [s for s in steps if classify(s, options)[0] is None]
    if runnable:
        approver.ensure_possible(f"nothing applied ({len(runnable)} runtime step(s) waiting for approval)")
    host = await _changed_host(source, request)

    def interrupted(partial: ApplyReport) -> None:  # cancelled (Ctrl-C) while working: what was done, said and written
        emit(finished(partial, copy=request.into, stopped="interrupted (Ctrl-C)"))
        if request.report is not None and partial.journal is not None:
            append_section(request.report, "Applied changes", apply_section(partial, utc_now(), None), host=here)
            emit(ReportWritten(path=str(request.report), section="Applied changes"))

    report = await _apply_until_stopped(host, plan, request, approver, options, emit, interrupted)
    when = utc_now()
    checked: dict[str, str] | None = None
    if request.into is not None and report.changed and not report.interrupted:
        checked = await reaudit(SnapshotHost(request.into), report.steps)
    emit(finished(report, reaudited=checked, copy=request.into, stopped=stopped_text(report, approver)))
    _write_outputs(report, request, here, checked, when, emit)
    if report.interrupted:
        raise KeyboardInterrupt
    return report
