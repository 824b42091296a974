"""Merge problem findings into one prioritized plan.

Ranks: **P0** high-impact changes that can be made now at acceptable risk (runtime, severity
critical/high/medium, risk not high), or anything critical; **P1** high-impact work that needs a
restart, reboot, firmware change or hardware, and risky runtime changes; **P2** tuning hygiene
(low severity). Runtime steps come first; restart/reboot/firmware/hardware steps are deferred.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rigaudit.tools.model.finding import FIX_KIND_ORDER, SEVERITY_ORDER, Action, Finding
from rigaudit.tools.model.plan import Plan, PlanStep, Priority

SYMPTOM_CAUSES: dict[str, tuple[str, ...]] = {
    "p2p.status": ("pcie.acs", "kernel.iommu", "driver.version"),
    "p2p.bandwidth": ("pcie.acs", "kernel.iommu", "pcie.link", "pcie.mrrs", "pcie.mps"),
    "pcie.aer": ("pcie.link",),
    "gpu.clocks": ("gpu.thermals", "power.gpu_power_limit"),
}
"""A symptom whose cause is also a problem joins the cause's step instead of getting its own."""

_PRIORITY_ORDER = {"P0": 0, "P1": 1, "P2": 2}


def rank(finding: Finding) -> tuple[Priority, str]:
    """The priority of a problem's fix and one line on why."""
    assert finding.fix is not None
    severity = finding.severity or "low"
    fix = finding.fix
    if severity == "critical":
        return "P0", "critical: data loss, a GPU off the bus or wrong results; fix before anything else"
    if fix.kind == "runtime" and severity in ("high", "medium"):
        if fix.risk == "high":
            return "P1", f"{severity} impact but a high-risk change: schedule it with the GPUs drained"
        return "P0", f"{severity} impact, takes effect now without a reboot, {fix.risk} risk"
    if severity in ("high", "medium"):
        return "P1", f"{severity} impact, but needs a {fix.kind}{' window' if fix.kind in ('restart', 'reboot') else ''}"
    return "P2", "low impact (tuning hygiene); do it when convenient"


def _action_key(actions: Iterable[Action]) -> str:
    return "|".join(sorted(a.model_dump_json() for a in actions))


def _write_targets(action: Action) -> dict[str, str]:
    """target -> value written, for conflict detection."""
    data = action.model_dump()
    if data["type"] == "sysctl":
        return {f"sysctl:{data['key']}": str(data["value"])}
    if data["type"] == "sysfs_write":
        return {f"sysfs:{p}": str(data["value"]) for p in data["paths"]}
    if data["type"] == "pci_register":
        return {f"pci:{d}:{data['capability']}+{data['offset']}": f"{data['value']}/{data['mask']}" for d in data["devices"]}
    return {}


def build_plan(findings: Sequence[Finding]) -> tuple[Plan, list[str]]:
    """One step per distinct fix; symptoms folded into their causes; conflicts resolved by severity."""
    warnings: list[str] = []
    problems = [f for f in findings if f.status == "problem" and f.fix is not None]
    problem_checks = {f.check for f in problems}
    problems.sort(key=lambda f: (SEVERITY_ORDER.get(f.severity or "low", 9), f.check))

    steps: dict[str, PlanStep] = {}
    by_actions: dict[str, str] = {}
    written: dict[str, tuple[str, str]] = {}
    folded: dict[str, list[str]] = {}
    for finding in problems:
        causes = [c for c in SYMPTOM_CAUSES.get(finding.check, ()) if c in problem_checks]
        if causes:
            folded.setdefault(causes[0], []).append(finding.check)
            continue
        fix = finding.fix
        assert fix is not None
        key = _action_key(fix.actions) if fix.actions else ""
        if key and key in by_actions:
            folded.setdefault(by_actions[key], []).append(finding.check)
            continue
        conflict = False
        for action in fix.actions:
            for target, value in _write_targets(action).items():
                previous = written.get(target)
                if previous and previous[1] != value:
                    warnings.append(
                        f"{finding.check} wants {target}={value} but {previous[0]} (more severe) wants {previous[1]}: "
                        f"kept {previous[0]}"
                    )
                    conflict = True
        if conflict:
            continue
        for action in fix.actions:
            for target, value in _write_targets(action).items():
                written.setdefault(target, (finding.check, value))
        priority, why = rank(finding)
        steps[finding.check] = PlanStep(
            id=finding.check,
            check=finding.check,
            priority=priority,
            kind=fix.kind,
            where=fix.where,
            title=fix.summary or finding.title,
            severity=finding.severity,
            subjects=finding.subjects,
            actions=fix.actions,
            risk=fix.risk,
            verify=fix.verify,
            revert=fix.revert,
            persist=fix.persist,
            rationale=why,
        )
        if key:
            by_actions[key] = finding.check
    for cause, symptoms in folded.items():
        step = steps.get(cause)
        if step is None:
            continue
        note = f"; also resolves {', '.join(symptoms)}"
        steps[cause] = step.model_copy(update={"also_checks": tuple(symptoms), "rationale": step.rationale + note})
    ordered = sorted(
        steps.values(),
        key=lambda s: (
            s.kind != "runtime",
            _PRIORITY_ORDER[s.priority],
            FIX_KIND_ORDER[s.kind],
            SEVERITY_ORDER.get(s.severity or "low", 9),
            s.id,
        ),
    )
    return Plan(steps=tuple(ordered)), warnings
