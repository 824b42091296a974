"""The fleet's merged plan keeps every host's plan graph (docs/plan.md): a grouped fix comes after each fix its
steps wait for on any host, whatever their kinds; the rest ranked by priority, then by how many hosts need it.

On generated hosts (a runtime ACS clear that waits for the IOMMU reboot): tests/test_plan_orders.py.
"""

from __future__ import annotations

from rigaudit.orchestrator.fleet.analysis import fleet_plan
from rigaudit.orchestrator.fleet.result import FleetFix, HostAudit
from rigaudit.tools.schema.audit import AuditResult, HostSummary
from rigaudit.tools.schema.plan import Plan, PlanStep, StepEdge


def fix_index(plan: list[FleetFix], host: str, step: PlanStep) -> int:
    """Where the fleet plan has ``host``'s ``step``."""
    return next(i for i, f in enumerate(plan) if host in f.hosts and f.step.check == step.check and f.step.title == step.title)


def keeps_every_graph(plan: list[FleetFix], audits: list[HostAudit]) -> None:
    """Every host's edges hold in the fleet plan: each step after every step of its plan it names."""
    for audit in audits:
        steps = {s.id: s for s in audit.result.plan.steps}
        for step in steps.values():
            for edge in step.edges:
                if edge.step in steps:
                    assert fix_index(plan, audit.target, steps[edge.step]) < fix_index(plan, audit.target, step), (
                        audit.target,
                        edge,
                    )


def _step(check: str, kind: str, *, after: str | None = None) -> PlanStep:
    edges = (StepEdge(kind="requires", step=after),) if after else ()
    return PlanStep(id=check, check=check, kind=kind, where="host", title=check, priority="P1", edges=edges)  # type: ignore[arg-type]


def _host(target: str, *steps: PlanStep) -> HostAudit:
    result = AuditResult(host=HostSummary(name=target, source="test"), started_at="", duration_s=0.0, plan=Plan(steps=steps))
    return HostAudit(target, "replay", result, {}, 0.0, 0.0)


def test_a_wait_on_one_host_orders_the_fix_for_all_and_ranks_the_rest() -> None:
    # on a, a runtime step requires the reboot; on b the same runtime step stands alone
    a = _host("a", _step("boot.x", "reboot"), _step("rt.y", "runtime", after="boot.x"), _step("rt.z", "runtime"))
    b = _host("b", _step("rt.y", "runtime"), _step("rt.z", "runtime"))
    plan = fleet_plan([a, b])
    assert [f.step.check for f in plan] == ["rt.z", "boot.x", "rt.y"]  # rt.z: most hosts among the ready
    assert [(w.fix, w.kind, w.hosts) for w in plan[2].waits] == [(2, "requires", ("a",))]
    assert plan[0].waits == () and not any(f.unordered for f in plan)
    keeps_every_graph(plan, [a, b])


def test_hosts_that_order_two_fixes_both_ways_are_told_to_follow_their_own_plans() -> None:
    a = _host("a", _step("x", "runtime"), _step("y", "runtime", after="x"))
    b = _host("b", _step("y", "runtime"), _step("x", "runtime", after="y"))
    plan = fleet_plan([a, b])
    assert sorted(f.step.check for f in plan) == ["x", "y"] and all(f.unordered for f in plan)
    assert "follow each host's own plan" in plan[0].unordered
