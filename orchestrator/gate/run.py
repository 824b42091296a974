"""Run the gate: the selected areas' investigators (rules only) under one deadline, judged into a
:class:`~rigaudit.tools.schema.check.CheckResult`.

The deadline covers everything: at it, whatever still runs is cancelled and its checks are
``not_checked`` (what finished is kept), so the verdict comes in time even when a read hangs. The
command adds a watchdog past the deadline for what cancellation cannot reach (a blocked thread).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import anyio

from rigaudit.agents.facts.gpus import GpuInventory
from rigaudit.agents.investigator import AnyInvestigator
from rigaudit.agents.registry import all_investigators
from rigaudit.orchestrator.audit.run import DEFAULT_CONCURRENCY, AuditControl, AuditOptions, run_audit
from rigaudit.orchestrator.audit.suggestions import plan_findings
from rigaudit.orchestrator.gate import DEFAULT_DEADLINE_S
from rigaudit.orchestrator.gate.selection import Selection, select
from rigaudit.orchestrator.gate.verdict import judge_checks, reason_line, verdict_of
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.check import CheckResult, GateGpu
from rigaudit.tools.schema.events.sink import EventSink
from rigaudit.tools.schema.finding import Severity

if TYPE_CHECKING:
    from rigaudit.orchestrator.gate.expect import Expectations
    from rigaudit.orchestrator.gate.promised import Promises


class GateOptions(Record):
    fail_on: Severity = "high"
    deadline_s: float = DEFAULT_DEADLINE_S
    strict: bool = False
    """An ``unknown`` on any selected check counts as "could not check"."""
    facts: bool = False
    """Also read the fingerprint the fleet compares (for ``--json``)."""
    concurrency: int | None = DEFAULT_CONCURRENCY


class GatePlan(Record):
    """What to judge and who judges it."""

    selection: Selection
    investigators: tuple[AnyInvestigator, ...]
    seen: list[GpuInventory]
    """The GPU inventory the promised checks read, once they ran."""


def plan_gate(
    only: str | None = None,
    skip: str | None = None,
    expectations: Expectations | None = None,
    promises: Promises | None = None,
) -> GatePlan:
    """The checks ``--only``/``--skip`` select (the expectations' and the node's promised GPUs among them) and the
    investigators they need. ``promises``: what the scheduler says this node holds (none read: the PCI bus and NVML
    are still compared)."""
    from rigaudit.orchestrator.gate import promised

    registered = all_investigators()
    seen: list[GpuInventory] = []
    extra: tuple[AnyInvestigator, ...] = (promised.investigator(promises or promised.Promises(), seen),)
    if expectations is not None:
        from rigaudit.orchestrator.gate.expect import investigator

        extra = (*extra, investigator(expectations))
    every = (*registered, *extra)
    selection = select([c for inv in every for c in inv.checks], only, skip)
    areas = set(selection.areas)
    return GatePlan(selection, tuple(inv for inv in every if inv.area in areas), seen)


def _selected(audit: AuditResult, selection: Selection) -> AuditResult:
    """The audit of the selected checks alone, without evidence (the gate's result stays small)."""
    wanted = set(selection.ids)
    findings = tuple(f for f in audit.findings if f.check in wanted)
    plan = audit.plan if len(findings) == len(audit.findings) else plan_findings(findings, audit.host.facts)[0]
    return audit.model_copy(update={"findings": findings, "plan": plan, "evidence": ()})


def _judged(seen: list[GpuInventory]) -> str:
    """``judged 2 of 8 GPUs (the job step's)`` when the check ran in a job step whose NVML shows some of the node's."""
    inventory = seen[0] if seen else None
    if inventory is None or not inventory.confined or not inventory.elsewhere or not inventory.nvml_indices:
        return ""
    shown = len(inventory.nvml_indices)
    return f"judged {shown} of {shown + inventory.elsewhere} GPUs (the job step's)"


def _gpus(seen: list[GpuInventory]) -> tuple[GateGpu, ...]:
    if not seen:
        return ()
    return tuple(GateGpu(gpu=g.index, uuid=g.uuid or "", pci_bus_id=g.bdf, name=g.name) for g in seen[0].gpus)


async def run_gate(host: Host, plan: GatePlan, options: GateOptions | None = None, emit: EventSink | None = None) -> CheckResult:
    """Judge ``plan`` on ``host`` within ``options.deadline_s``."""
    options = options or GateOptions()
    started = time.monotonic()
    control = AuditControl()
    stopped = False
    facts: dict[str, str] = {}

    async def stop_at_deadline() -> None:
        nonlocal stopped
        await anyio.sleep(options.deadline_s)
        stopped = True
        control.cancel()

    audit_options = AuditOptions(concurrency=options.concurrency, timeout_s=options.deadline_s, investigators=plan.investigators)
    async with anyio.create_task_group() as group:
        group.start_soon(stop_at_deadline)
        audit = await run_audit(host, options=audit_options, emit=emit, control=control)
        if options.facts and not stopped:
            from rigaudit.orchestrator.fleet.fingerprint import fingerprint

            with anyio.move_on_after(max(0.0, options.deadline_s - (time.monotonic() - started))):
                facts = await fingerprint(host)
        group.cancel_scope.cancel()
    checks = judge_checks(
        plan.selection,
        audit.findings,
        audit.investigators,
        fail_on=options.fail_on,
        deadline_s=options.deadline_s,
        stopped=stopped,
        strict=options.strict,
    )
    verdict, code = verdict_of(checks)
    return CheckResult(
        verdict=verdict,
        exit_code=code,
        reason=reason_line(checks, verdict, options.fail_on, len(plan.seen[0].gpus) if plan.seen else None, _judged(plan.seen)),
        host=audit.host.name,
        source=audit.host.source,
        started_at=audit.started_at,
        finished_at=round(time.time(), 3),
        duration_s=round(time.monotonic() - started, 4),
        fail_on=options.fail_on,
        deadline_s=options.deadline_s,
        strict=options.strict,
        checks=checks,
        facts=facts,
        gpus=_gpus(plan.seen),
        audit=_selected(audit, plan.selection),
    )


__all__ = ["GateOptions", "GatePlan", "plan_gate", "run_gate"]
