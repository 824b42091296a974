"""Run every investigator at once against a host, and merge what they find into one result."""

from __future__ import annotations

import contextvars
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

import anyio

from rigaudit.agents.facts.baseline import collect_baseline
from rigaudit.agents.facts.pcie_tree import collect_pcie_tree
from rigaudit.agents.investigator import AnyInvestigator
from rigaudit.agents.registry import all_investigators, select
from rigaudit.orchestrator.audit.suggestions import plan_findings
from rigaudit.orchestrator.hosts.identity import FACT as IDENTITY_FACT
from rigaudit.orchestrator.hosts.identity import identify
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.hosts.probe import Observer, Probe
from rigaudit.tools.schema.audit import AuditResult, AuditStatus, HostSummary, InvestigatorRun, InvestigatorStatus, LlmRun
from rigaudit.tools.schema.dropped import DroppedFinding
from rigaudit.tools.schema.events.audit import (
    AuditFinished,
    FindingReported,
    InvestigatorActivity,
    InvestigatorFinished,
    InvestigatorStarted,
    PcieDevice,
    PlanReady,
    ToolCall,
    TopologyReported,
)
from rigaudit.tools.schema.events.sink import EventSink, discard
from rigaudit.tools.schema.finding import Finding
from rigaudit.transcripts.references import ReferencedReads, snapshot_reference
from rigaudit.transcripts.tool_calls import tool_call_from_probe

if TYPE_CHECKING:
    from rigaudit.agents.brain import Brain
    from rigaudit.tools.schema.events.session import Warning_

_current_area: contextvars.ContextVar[str | None] = contextvars.ContextVar("rigaudit_area", default=None)


def current_area() -> str | None:
    """The area whose investigator (or agent) runs in this task: who is asking, at a prompt."""
    return _current_area.get()


DEFAULT_CONCURRENCY: int | None = None
"""Host operations in flight at once: ``None`` chooses from the host's measured latency (8 for local reads, gentle
on a production host; up to 64 where each read waits on SSH or the node server: ``tools.hosts.probe``)."""


@runtime_checkable
class ReportingBrain(Protocol):
    """A brain that sums up what it did (the LLM brain; named here so a rules-only audit never imports it)."""

    agents_expected: int

    def outcome(self, areas: int) -> LlmRun: ...


class AuditOptions(Record):
    concurrency: int | None = DEFAULT_CONCURRENCY
    areas: Sequence[str] | None = None
    timeout_s: float = 60.0
    investigators: Sequence[AnyInvestigator] | None = None
    """Explicit investigators (tests); default: every registered one, filtered by ``areas``."""
    brain: Brain | None = None
    """An LLM brain that may dig further; ``None`` is the rules alone."""


class AuditControl(Record, frozen=False):
    """Lets the caller stop an audit early (Ctrl-C): finished work is kept."""

    _scope: anyio.CancelScope | None = None
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True
        if self._scope is not None:
            self._scope.cancel()


class _Outcome(Record, frozen=False):
    status: InvestigatorStatus = "cancelled"
    findings: list[Finding] = field(default_factory=list)
    suggestions: list[Finding] = field(default_factory=list)
    dropped: list[DroppedFinding] = field(default_factory=list)
    error: str | None = None
    duration_s: float = 0.0
    llm: Literal["answered", "failed"] | None = None
    llm_error: str | None = None


def _warning(text: str) -> Warning_:
    """A warning event; its module (the session's events) is imported when an audit first warns, which a sound
    check never does (a rule's bug, an LLM's failure)."""
    from rigaudit.tools.schema.events.session import Warning_

    return Warning_(text=text)


def _error_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{exc.__class__.__name__}: {text[0]}" if text else exc.__class__.__name__


def _check_owners(investigators: Sequence[AnyInvestigator]) -> dict[str, str]:
    """Every known check id and its area (registered ones and those of ``investigators``)."""
    return {c: inv.area for inv in (*all_investigators(), *investigators) for c in inv.check_ids}


async def _refine(inv: AnyInvestigator, scoped: Probe, brain: Brain, owners: dict[str, str], outcome: _Outcome) -> None:
    """The brain's say on one area: the rules stand, what it adds is a suggestion apart from them if the evidence it
    cites (as the probe recorded it) bears it out (:func:`merge_refinement`), what it refused is kept (the brains'
    module is imported with the first brain: the rules alone never need it)."""
    from rigaudit.agents.brain import merge_refinement

    rule_findings = outcome.findings
    proposed = await brain.refine(inv, scoped, list(rule_findings))
    recorded = {e.ref: e for e in scoped.evidence_for(scoped.refs)}
    merged = merge_refinement(
        inv.area,
        rule_findings,
        proposed,
        recorded,
        own_checks=frozenset(inv.check_ids),
        other_checks=frozenset(c for c, area in owners.items() if area != inv.area),
    )
    outcome.findings, outcome.suggestions, outcome.dropped = merged.findings, merged.suggestions, merged.dropped


async def _investigate(
    inv: AnyInvestigator, probe: Probe, options: AuditOptions, emit: EventSink, outcome: _Outcome, reads: _Reads
) -> None:
    timeout_s = options.timeout_s
    _current_area.set(inv.area)
    emit(InvestigatorStarted(area=inv.area, title=inv.title))
    started = time.perf_counter()
    scoped = probe.scoped(on_activity=lambda ref: emit(InvestigatorActivity(area=inv.area, ref=ref)))
    try:
        with anyio.fail_after(timeout_s):
            facts = await inv.collect(scoped)
        outcome.findings = inv.findings(facts)
        outcome.status = "done"
        for breach in inv.contract_breaches(outcome.findings):
            emit(_warning(f"{inv.area}: {breach} (a bug of rigaudit's rules: please report it)"))
        if options.brain is not None:
            try:
                await _refine(inv, scoped, options.brain, _check_owners(options.investigators or ()), outcome)
                outcome.llm = "answered"
            except Exception as exc:  # the rules' findings stand whatever the brain does
                outcome.llm, outcome.llm_error = "failed", (str(exc).strip().splitlines() or [_error_line(exc)])[0]
                if not isinstance(options.brain, ReportingBrain):  # an LLM brain tells each distinct problem once, below
                    emit(_warning(f"{inv.area}: LLM refinement failed, rule findings kept: {_error_line(exc)}"))
    except TimeoutError:
        outcome.status, outcome.error = "timeout", f"no answer within {timeout_s:g} s"
    except anyio.get_cancelled_exc_class():
        outcome.status, outcome.error = "cancelled", "cancelled"
        raise
    except Exception as exc:  # an investigator's bug must not end the audit
        outcome.status, outcome.error = "failed", _error_line(exc)
    finally:
        outcome.duration_s = time.perf_counter() - started
        counts: dict[str, int] = {}
        for finding in outcome.findings:
            counts[finding.status] = counts.get(finding.status, 0) + 1
        error = outcome.error or (f"LLM: {outcome.llm_error}" if outcome.llm == "failed" else None)  # shown on the board
        reads.done(inv.area)
        emit(
            InvestigatorFinished(area=inv.area, status=outcome.status, duration_s=outcome.duration_s, error=error, counts=counts)
        )


async def _take_baseline(
    host: Host, probe: Probe, timeout_s: float, emit: EventSink, baseline: dict[str, str], warnings: list[str], reads: _Reads
) -> None:
    """The host's facts (GPUs, driver, kernel...) and its PCIe tree, within the investigators' time limit: a read
    that never returns (a hung mount, a stuck NVML call) must not hold the audit after they all ended."""
    _current_area.set("baseline")
    try:
        with anyio.fail_after(timeout_s):
            baseline.update(await collect_baseline(probe.scoped()))
            token = (await identify(host, probe.read)).token()
            if token:
                baseline[IDENTITY_FACT] = token
            tree = await collect_pcie_tree(probe.scoped())
            if any(node.kind == "gpu" for node in tree):
                emit(TopologyReported(devices=[PcieDevice(bdf=n.bdf, kind=n.kind, parent=n.parent) for n in tree]))
    except TimeoutError:
        warnings.append(f"baseline facts incomplete: no answer within {timeout_s:g} s")
    except anyio.get_cancelled_exc_class():  # an interrupt: what was not read must not read as absent
        warnings.append("baseline facts incomplete: interrupted")
        raise
    except Exception as exc:
        warnings.append(f"baseline facts incomplete: {_error_line(exc)}")
    finally:
        reads.done("baseline")


class _Reads:
    """How the audit's reads reach whoever listens: each a :class:`ToolCall` as it ends (a live host's, its answer
    embedded), or an area's all at once when its investigator ends (a sealed snapshot's, by reference: its digests,
    the snapshot holds the text; :mod:`rigaudit.transcripts.references`). Nobody listening (a check without a
    transcript): no event is made."""

    def __init__(self, host: Host, emit: EventSink) -> None:
        self.emit = emit
        self.kept: ReferencedReads | None = None
        self.observer: Observer | None = None
        if emit is discard:
            return
        reference = snapshot_reference(host)
        if reference is None:
            self.observer = lambda ref, result: emit(tool_call_from_probe(_current_area.get(), ref, result))
            return
        emit(reference)
        self.kept = ReferencedReads(_current_area.get)
        self.observer = self.kept.observe

    def done(self, area: str) -> None:
        """``area``'s investigator (or the baseline) ended: its reads of a snapshot told."""
        for event in self.kept.take(area) if self.kept is not None else ():
            self.emit(event)

    def finish(self) -> None:
        """The audit ended: the reads not told yet (made outside any area) told."""
        for event in self.kept.take_all() if self.kept is not None else ():
            self.emit(event)


def _run_entry(area: str, outcome: _Outcome) -> InvestigatorRun:
    return InvestigatorRun(
        area=area,
        status=outcome.status,
        duration_s=round(outcome.duration_s, 4),
        error=outcome.error,
        findings=len(outcome.findings),
        llm=outcome.llm,
        llm_error=outcome.llm_error,
    )


def _llm_run(brain: Brain | None, areas: int, emit: EventSink, warnings: list[str]) -> LlmRun | None:
    """What an LLM brain did, its problems told as warnings; ``None`` for the rules alone."""
    llm = brain.outcome(areas) if isinstance(brain, ReportingBrain) else None
    if llm is not None:
        for line in llm.problems:
            emit(_warning(f"LLM: {line}"))
        warnings.extend(f"LLM: {line}" for line in llm.problems)
    return llm


def _ending_warnings(cancelled: bool, runs: Sequence[InvestigatorRun]) -> list[str]:
    """An interrupted audit, and the investigators that did not finish (their checks are not judged)."""
    warnings = ["audit interrupted: results are partial"] if cancelled else []
    lost = [r for r in runs if r.status in ("failed", "timeout")]
    if lost:
        what = "; ".join(f"{r.area} {r.status} ({r.error})" if r.error else f"{r.area} {r.status}" for r in lost)
        warnings.append(f"audit incomplete: {len(lost)} investigator(s) did not finish, their checks were not judged: {what}")
    return warnings


def _status(cancelled: bool, runs: Sequence[InvestigatorRun]) -> AuditStatus:
    if cancelled:
        return "interrupted"
    return "incomplete" if any(r.status in ("failed", "timeout") for r in runs) else "complete"


def _snapshot_notes(host: Host, baseline: dict[str, str]) -> None:
    """A snapshot's notes (its manifest's), kept among the host's facts."""
    notes = getattr(getattr(host, "manifest", None), "notes", None)
    if isinstance(notes, str) and notes:
        baseline["snapshot notes"] = notes


async def run_audit(
    host: Host, *, options: AuditOptions | None = None, emit: EventSink | None = None, control: AuditControl | None = None
) -> AuditResult:
    """Fan out every investigator; one failing or timing out is a visible entry, never the end."""
    options = options or AuditOptions()
    emit = emit or discard
    control = control or AuditControl()
    investigators = (
        list(options.investigators)
        if options.investigators is not None
        else select(list(options.areas) if options.areas else None)
    )
    started_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    started = time.perf_counter()
    reads = _Reads(host, emit)
    probe = Probe(host, concurrency=options.concurrency, observer=reads.observer)
    if isinstance(options.brain, ReportingBrain):
        options.brain.agents_expected = len(investigators)
    outcomes = {inv.area: _Outcome() for inv in investigators}
    baseline: dict[str, str] = {}
    warnings: list[str] = list(getattr(host, "warnings", []))
    with anyio.CancelScope() as scope:
        control._scope = scope
        if control.cancelled:
            scope.cancel()
        async with anyio.create_task_group() as group:
            group.start_soon(_take_baseline, host, probe, options.timeout_s, emit, baseline, warnings, reads)
            for inv in investigators:
                group.start_soon(_investigate, inv, probe, options, emit, outcomes[inv.area], reads)
    reads.finish()
    ordered = [outcomes[inv.area] for inv in investigators]
    runs = tuple(_run_entry(inv.area, outcomes[inv.area]) for inv in investigators)
    llm = _llm_run(options.brain, len(investigators), emit, warnings)
    findings = [f for outcome in ordered for f in outcome.findings]
    suggestions = tuple(f for outcome in ordered for f in outcome.suggestions)
    plan, plan_warnings = plan_findings(findings, baseline)
    warnings.extend([*plan_warnings, *_ending_warnings(control.cancelled, runs)])
    for finding in findings:
        emit(FindingReported(finding=finding))
    emit(PlanReady(plan=plan))
    _snapshot_notes(host, baseline)
    cited = {ref for f in (*findings, *suggestions) for ref in f.evidence}
    result = AuditResult(
        status=_status(control.cancelled, runs),
        host=HostSummary(name=host.name, source=host.source, facts=baseline),
        started_at=started_at,
        duration_s=round(time.perf_counter() - started, 4),
        investigators=runs,
        findings=tuple(findings),
        suggestions=suggestions,
        plan=plan,
        evidence=tuple(e for ref, e in sorted(probe.evidence.items()) if ref in cited),
        warnings=tuple(warnings),
        dropped=tuple(d for outcome in ordered for d in outcome.dropped),
        llm=llm,
    )
    emit(AuditFinished(result=result))
    return result


__all__ = ["DEFAULT_CONCURRENCY", "AuditControl", "AuditOptions", "EventSink", "ToolCall", "run_audit"]
