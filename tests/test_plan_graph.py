"""The plan's graph: each kind of edge changes the order or blocks a step; cycles and bad orders are refused."""

from __future__ import annotations

from rigaudit.orchestrator.plan.planner import build_plan
from rigaudit.tools.schema.finding import CommandAction, Edge, Finding, Fix, Gain, SysctlAction
from rigaudit.tools.schema.plan import Plan, PlanStep, StepEdge


def _problem(
    check: str,
    severity: str = "medium",
    *,
    kind: str = "runtime",
    risk: str = "low",
    edges: tuple[Edge, ...] = (),
    provides: tuple[str, ...] = (),
    gain: tuple[float, float] | None = None,
    actions: tuple[SysctlAction | CommandAction, ...] = (),
    source: str = "rules",
) -> Finding:
    return Finding(
        check=check,
        area=check.split(".", maxsplit=1)[0],
        status="problem",
        severity=severity,  # type: ignore[arg-type]
        title=check,
        source=source,  # type: ignore[arg-type]
        fix=Fix(
            kind=kind,  # type: ignore[arg-type]
            where="host",
            summary=f"fix {check}",
            risk=risk,  # type: ignore[arg-type]
            actions=actions or (SysctlAction(key=f"vm.{check.split('.')[1]}", value="1"),),
            edges=edges,
            provides=provides,
            gain=Gain(low=gain[0], high=gain[1], why="test") if gain else None,
        ),
    )


def _ids(plan: Plan) -> list[str]:
    return [s.id for s in plan.steps]


def test_requires_puts_the_prerequisite_first_even_when_it_buys_less() -> None:
    start = _problem("a.start", gain=(20, 30), edges=(Edge(kind="requires", check="a.install"),))
    install = _problem("a.install", gain=(0, 1))
    plan, warnings = build_plan([start, install])
    assert _ids(plan) == ["a.install", "a.start"]
    assert plan.steps[1].waits_for() == (StepEdge(kind="requires", step="a.install"),)
    assert warnings == []


def test_a_prerequisite_ranks_as_high_as_the_step_that_waits_for_it() -> None:
    start = _problem("a.start", gain=(20, 30), edges=(Edge(kind="requires", check="a.install"),))
    install = _problem("a.install", gain=(0, 1))
    plan, _ = build_plan([start, install])
    assert [s.priority for s in plan.steps] == ["P0", "P0"]
    assert "a.start waits for it" in plan.steps[0].rationale
    assert build_plan([install])[0].steps[0].priority == "P2"


def test_not_before_a_fact_orders_after_the_step_that_provides_it() -> None:
    clear = _problem("x.clear", gain=(10, 20), edges=(Edge(kind="not_before", fact="iommu.passthrough", why="misrouted"),))
    boot = _problem("x.boot", kind="reboot", gain=(1, 2), provides=("iommu.passthrough",))
    plan, _ = build_plan([clear, boot])
    assert _ids(plan) == ["x.boot", "x.clear"]
    assert plan.steps[1].edges[0] == StepEdge(kind="not_before", step="x.boot", why="misrouted")
    assert "iommu.passthrough" in plan.steps[0].provides


def test_an_edge_to_a_step_the_plan_lacks_is_satisfied() -> None:
    clear = _problem("x.clear", edges=(Edge(kind="not_before", fact="iommu.passthrough"),))
    plan, _ = build_plan([clear])
    assert plan.steps[0].edges == () and plan.order_breaches() == []


def test_moot_after_merges_into_the_step_that_fixes_it_too() -> None:
    tune = _problem("a.tune", gain=(5, 10), edges=(Edge(kind="moot_after", check="a.reboot"),))
    reboot = _problem("a.reboot", kind="reboot", gain=(1, 2))
    plan, _ = build_plan([tune, reboot])
    assert _ids(plan) == ["a.reboot"]
    assert plan.steps[0].also_checks == ("a.tune",) and "also resolves a.tune" in plan.steps[0].rationale


def test_moot_after_several_steps_needs_all_of_them() -> None:
    symptom = _problem("p.symptom", edges=(Edge(kind="moot_after", check="a.one"), Edge(kind="moot_after", check="a.two")))
    one = _problem("a.one")
    assert "p.symptom" in _ids(build_plan([symptom, one])[0])
    assert "p.symptom" not in _ids(build_plan([symptom, one, _problem("a.two")])[0])


def test_conflicts_keep_the_better_one_first_and_mark_the_other() -> None:
    good = _problem("a.good", gain=(10, 20))
    other = _problem("a.other", gain=(1, 2), edges=(Edge(kind="conflicts", check="a.good", why="one or the other"),))
    plan, _ = build_plan([other, good])
    assert _ids(plan) == ["a.good", "a.other"]
    assert plan.steps[1].edges == (StepEdge(kind="conflicts", step="a.good", why="one or the other"),)
    assert plan.steps[0].edges == ()


def test_a_cycle_of_blocking_edges_is_refused_never_ordered() -> None:
    one = _problem("a.one", edges=(Edge(kind="not_before", check="a.two"),))
    two = _problem("a.two", edges=(Edge(kind="requires", check="a.one"),))
    free = _problem("a.free", gain=(0, 1))
    plan, warnings = build_plan([one, two, free])
    assert _ids(plan)[0] == "a.free"
    blocked = {s.id: s.blocked for s in plan.steps if s.blocked}
    assert set(blocked) == {"a.one", "a.two"} and all("cycle" in why for why in blocked.values())
    assert len(warnings) == 2 and all("refused" in w for w in warnings)


def test_same_command_merges_whatever_its_wording() -> None:
    reboot = ("systemctl", "reboot")
    a = _problem("d.one", "critical", kind="reboot", actions=(CommandAction(description="reboot now", argv=reboot),))
    b = _problem("d.two", "high", kind="reboot", actions=(CommandAction(description="reboot, the modules", argv=reboot),))
    plan, _ = build_plan([b, a])
    assert _ids(plan) == ["d.one"] and plan.steps[0].also_checks == ("d.two",)


def test_a_hand_edited_plan_that_breaks_its_edges_is_refused() -> None:
    first = PlanStep(id="a", check="a", priority="P0", kind="runtime", where="host", title="a")
    second = PlanStep(
        id="b", check="b", priority="P0", kind="runtime", where="host", title="b", edges=(StepEdge(kind="not_before", step="a"),)
    )
    assert Plan(steps=(first, second)).order_breaches() == []
    breaches = Plan(steps=(second, first)).order_breaches()
    assert breaches == ["b is placed before a, which it is unsafe before"]
    assert "not in the plan" in Plan(steps=(second,)).order_breaches()[0]


def test_a_model_finding_gets_no_step_no_priority_and_no_gain() -> None:
    model = _problem("a.model", "critical", gain=(50, 90), source="llm")
    rule = _problem("a.rule", "low", gain=(0, 1))
    plan, _ = build_plan([model, rule])
    assert _ids(plan) == ["a.rule"]
    assert build_plan([model])[0].steps == ()


def test_old_plan_json_without_edges_or_gains_still_loads() -> None:
    old = (
        '{"steps": [{"id": "numa.balancing", "check": "numa.balancing", "also_checks": [], "priority": "P0", "kind": '
        '"runtime", "where": "host", "title": "t", "severity": "medium", "subjects": [], "actions": [], "risk": "low", '
        '"verify": "", "revert": "", "persist": "", "rationale": "r"}]}'
    )
    plan = Plan.model_validate_json(old)
    assert plan.steps[0].edges == () and plan.steps[0].gain is None and plan.order_breaches() == []


def test_a_model_finding_cannot_make_a_rule_step_wait_or_reorder_it() -> None:
    rule = _problem("pcie.clear", gain=(10, 20), edges=(Edge(kind="not_before", fact="iommu.passthrough"),))
    model = _problem(
        "llm.boot",
        kind="reboot",
        gain=(1, 2),
        provides=("iommu.passthrough",),
        edges=(Edge(kind="conflicts", check="pcie.clear"), Edge(kind="moot_after", check="pcie.clear")),
        source="llm",
    )
    plan, _ = build_plan([rule, model])
    assert plan == build_plan([rule])[0]


def test_an_audit_json_of_an_earlier_release_loads_and_the_schema_publishes_the_graph() -> None:
    from pathlib import Path

    from rigaudit.orchestrator.change.apply import load_plan_file
    from rigaudit.tools.schema.audit import AuditResult

    old = Path(__file__).parent.parent / "docs" / "validation" / "h200x2" / "audit.json"
    plan, host = load_plan_file(old)
    assert plan.steps and host is not None and all(s.edges == () for s in plan.steps)
    schema = AuditResult.model_json_schema(by_alias=True)["$defs"]
    assert {"edges", "gain", "provides", "blocked"} <= set(schema["PlanStep"]["properties"])
    assert {"edges", "provides", "gain"} <= set(schema["Fix"]["properties"])
    assert "measure" in str(schema["PlanStep"]["properties"]["kind"])
