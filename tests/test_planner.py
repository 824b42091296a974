"""The planner ranks, merges and separates runtime from deferred work."""

from __future__ import annotations

from rigaudit.orchestrator.planner import build_plan, rank
from rigaudit.tools.model.finding import CommandAction, Finding, Fix, PciRegisterAction, SysctlAction


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


def test_runtime_medium_is_p0_and_reboot_is_deferred() -> None:
    numa = _problem("numa.balancing", "medium", actions=(SysctlAction(key="kernel.numa_balancing", value="0"),))
    pstate = _problem("power.scaling_driver", "medium", kind="reboot", actions=(CommandAction(description="amd_pstate"),))
    hygiene = _problem("kernel.swappiness", "low", actions=(SysctlAction(key="vm.swappiness", value="10"),))
    plan, warnings = build_plan([pstate, hygiene, numa])
    assert [s.id for s in plan.steps] == ["numa.balancing", "kernel.swappiness", "power.scaling_driver"]
    assert [s.priority for s in plan.steps] == ["P0", "P2", "P1"]
    assert [s.id for s in plan.deferred_steps] == ["power.scaling_driver"]
    assert warnings == []


def test_high_risk_runtime_is_not_p0() -> None:
    assert rank(_problem("pcie.acs", "high", risk="high"))[0] == "P1"
    assert rank(_problem("gpu.xid", "critical", kind="hardware"))[0] == "P0"


def test_symptom_folds_into_its_cause() -> None:
    acs_action = PciRegisterAction(devices=("0000:02:00.0",), capability="ecap:0x000d", offset=6, width=2, value=0, mask=0xC)
    acs = _problem("pcie.acs", "high", risk="medium", actions=(acs_action,))
    p2p = _problem("p2p.status", "high", kind="restart")
    plan, _ = build_plan([p2p, acs])
    assert [s.id for s in plan.steps] == ["pcie.acs"]
    assert plan.steps[0].also_checks == ("p2p.status",)
    assert "also resolves p2p.status" in plan.steps[0].rationale


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
