"""The planner ranks by what each step buys for its risk, merges, and keeps runtime apart from deferred work."""

from __future__ import annotations

from rigaudit.orchestrator.plan.planner import build_plan, rank
from rigaudit.tools.schema.finding import CommandAction, Edge, Finding, Fix, PciRegisterAction, SysctlAction


def _problem(check: str, severity: str, kind: str = "runtime", risk: str = "low", actions: tuple = ()) -> Finding:  # type: ignore[type-arg]
    area = "numa"
    return Finding(
        check=check,
        area=area,
        status="problem",
        severity=severity,
        title=check,  # type: ignore[arg-type]
        fix=Fix(kind=kind, where="host", summary=f"fix {check}", risk=risk, actions=actions),  # type: ignore[arg-type]
    )


def test_rank_follows_the_gain_not_the_kind() -> None:
    cstates = _problem("power.cstates", "medium", actions=(SysctlAction(key="vm.a", value="1"),))
    pstate = _problem("power.scaling_driver", "medium", kind="reboot", actions=(CommandAction(description="amd_pstate"),))
    hygiene = _problem("kernel.swappiness", "low", actions=(SysctlAction(key="vm.swappiness", value="10"),))
    plan, warnings = build_plan([pstate, hygiene, cstates])
    assert [s.id for s in plan.steps] == ["power.cstates", "power.scaling_driver", "kernel.swappiness"]
    assert [s.priority for s in plan.steps] == ["P0", "P1", "P2"]
    assert [s.id for s in plan.deferred_steps] == ["power.scaling_driver"]
    assert warnings == []


def test_a_reboot_that_buys_most_outranks_a_runtime_change_that_buys_little() -> None:
    iommu = _problem("kernel.iommu", "high", kind="reboot", actions=(CommandAction(description="iommu=pt"),))
    mrrs = _problem("pcie.mrrs", "medium", risk="medium", actions=(SysctlAction(key="vm.b", value="1"),))
    plan, _ = build_plan([mrrs, iommu])
    assert [(s.id, s.priority) for s in plan.steps] == [("kernel.iommu", "P0"), ("pcie.mrrs", "P2")]
    assert plan.steps[0].gain is not None and plan.steps[0].gain.low >= 5
    assert "0-2%" in plan.steps[1].rationale


def test_risk_discounts_the_gain_and_critical_is_p0() -> None:
    safe = rank(_problem("pcie.acs", "high", risk="low"))
    risky = build_plan([_problem("pcie.acs", "high", risk="high"), _problem("power.cstates", "medium", risk="low")])[0]
    assert safe[0] == "P0"
    assert [s.id for s in risky.steps] == ["power.cstates", "pcie.acs"]
    assert rank(_problem("gpu.xid", "critical", kind="hardware"))[0] == "P0"


def test_symptom_folds_into_its_cause() -> None:
    link = _problem("pcie.link", "high", kind="hardware", risk="medium", actions=(CommandAction(description="reseat"),))
    aer = _problem("pcie.aer", "medium", kind="hardware", actions=(CommandAction(description="watch"),))
    plan, _ = build_plan([aer, link])
    assert [s.id for s in plan.steps] == ["pcie.link"]
    assert plan.steps[0].also_checks == ("pcie.aer",)
    assert "also resolves pcie.aer" in plan.steps[0].rationale


def test_p2p_status_folds_only_where_its_rule_says_the_cause_is() -> None:
    acs_action = PciRegisterAction(devices=("0000:02:00.0",), capability="ecap:0x000d", offset=6, width=2, value=0, mask=0xC)
    acs = _problem("pcie.acs", "high", risk="medium", actions=(acs_action,))
    undeclared = _problem("p2p.status", "high", kind="restart")
    assert {s.id for s in build_plan([undeclared, acs])[0].steps} == {"pcie.acs", "p2p.status"}
    fix = undeclared.fix.model_copy(update={"edges": (Edge(kind="moot_after", check="pcie.acs"),)})  # type: ignore[union-attr]
    declared = undeclared.model_copy(update={"fix": fix})
    plan, _ = build_plan([declared, acs])
    assert [s.id for s in plan.steps] == ["pcie.acs"] and plan.steps[0].also_checks == ("p2p.status",)


def test_conflicting_writes_keep_the_more_severe() -> None:
    first = _problem("a.one", "high", actions=(SysctlAction(key="vm.x", value="1"),))
    second = _problem("a.two", "low", actions=(SysctlAction(key="vm.x", value="2"),))
    plan, warnings = build_plan([second, first])
    assert [s.id for s in plan.steps] == ["a.one"]
    assert len(warnings) == 1 and "a.two" in warnings[0]


def test_identical_fixes_merge() -> None:
    action = SysctlAction(key="kernel.numa_balancing", value="0")
    plan, _ = build_plan([_problem("numa.balancing", "medium", actions=(action,)), _problem("x.other", "low", actions=(action,))])
    assert len(plan.steps) == 1 and plan.steps[0].also_checks == ("x.other",)


def test_ok_findings_make_no_steps() -> None:
    ok = Finding(check="pcie.link", area="pcie", status="ok", title="links")
    assert build_plan([ok])[0].steps == ()
