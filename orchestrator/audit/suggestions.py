"""A model's suggestions and the plan: the plan is the rules' alone.

A model's finding (``source: "llm"``) is a suggestion (``AuditResult.suggestions``): it never shapes the
plan, never gets a step, a priority or an estimate of what it buys, and ``apply`` never sees it. A person
reads it in its own section, after the rules' (the terminal's and the report's), and decides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rigaudit.orchestrator.plan.planner import build_plan
from rigaudit.tools.schema.finding import Finding
from rigaudit.tools.schema.plan import Plan


def plan_findings(findings: Sequence[Finding], facts: Mapping[str, str] | None = None) -> tuple[Plan, list[str]]:
    """The plan of the rules' findings among ``findings``
    (:func:`~rigaudit.orchestrator.plan.planner.build_plan`); a model's are left out."""
    return build_plan([f for f in findings if f.source != "llm"], facts)


def rules_plan(plan: Plan) -> Plan:
    """``plan`` without any step a model wrote (a plan of an older release could hold some)."""
    return Plan(steps=tuple(s for s in plan.steps if s.source != "llm"))
