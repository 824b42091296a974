"""The plan with a model's suggestions: exactly the rules' plan first, then the model's steps.

A model's finding (``source: "llm"``) never shapes the rules' plan: the rules' steps are the plan
of the rule findings alone, in its order, unchanged. The model's steps follow, as the planner
ranks them among all findings, each P1 at most (never P0), with no actions (so ``apply`` never
runs one: a person reads the suggestion and decides).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rigaudit.orchestrator.plan.planner import build_plan
from rigaudit.tools.model.finding import Finding
from rigaudit.tools.model.plan import Plan, PlanStep


def _suggestion(step: PlanStep) -> PlanStep:
    return step.model_copy(
        update={"priority": "P1" if step.priority == "P0" else step.priority, "actions": (), "edges": (), "provides": ()}
    )


def plan_findings(findings: Sequence[Finding], facts: Mapping[str, str] | None = None) -> tuple[Plan, list[str]]:
    """The rules' plan (:func:`~rigaudit.orchestrator.plan.planner.build_plan` over rule findings only), then the model's."""
    rules = [f for f in findings if f.source != "llm"]
    plan, warnings = build_plan(rules, facts)
    if len(rules) == len(findings):
        return plan, warnings
    everything, _ = build_plan(findings, facts)
    taken = {s.id for s in plan.steps}
    extra = tuple(_suggestion(s) for s in everything.steps if s.source == "llm" and s.id not in taken)
    return (Plan(steps=(*plan.steps, *extra)) if extra else plan), warnings


def rules_plan(plan: Plan) -> Plan:
    """The plan without the model's steps (what the rules' expectation speaks of)."""
    return Plan(steps=tuple(s for s in plan.steps if s.source != "llm"))
