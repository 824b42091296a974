"""The plan: a graph of steps built from problem findings, in an order that honours its edges.

A step's ``edges`` name the steps it depends on (``requires``, ``not_before``, ``conflicts``) or the measurements
that decide it (``measured_by``); the steps' order is a topological order of them, best gain for the risk first.
"""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, ConfigDict

from rigaudit.tools.schema.finding import Action, Gain, Risk, Severity, Where

Priority = Literal["P0", "P1", "P2"]
StepKind = Literal["measure", "runtime", "restart", "reboot", "firmware", "hardware"]
"""A fix's kind, or ``measure``: a measurement that decides checks the audit could not (nothing changes)."""
StepEdgeKind = Literal["requires", "not_before", "conflicts", "measured_by"]
STEP_EDGE_TEXT: dict[str, str] = {
    "requires": "waits for",
    "not_before": "unsafe before",
    "conflicts": "only if not done",
    "measured_by": "decided by",
}
"""How each edge reads in a sentence: "waits for kernel.iommu"."""
BLOCKING: tuple[StepEdgeKind, ...] = ("requires", "not_before")
"""Edges whose other step must have run before this one may: apply skips the step otherwise."""


class StepEdge(BaseModel):
    """This step depends on step ``step`` of the same plan."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: StepEdgeKind
    step: str
    why: str = ""

    def text(self) -> str:
        return f"{STEP_EDGE_TEXT[self.kind]} {self.step}" + (f" ({self.why})" if self.why else "")


class PlanStep(BaseModel):
    """One change to make (or one measurement to take), with everything a person needs to approve it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    check: str
    also_checks: tuple[str, ...] = ()
    priority: Priority
    kind: StepKind
    where: Where
    title: str
    severity: Severity | None = None
    subjects: tuple[str, ...] = ()
    actions: tuple[Action, ...] = ()
    risk: Risk = "low"
    verify: str = ""
    revert: str = ""
    persist: str = ""
    rationale: str = ""
    gain: Gain | None = None
    """What the step can buy on this workload (a range, with the reasoning)."""
    edges: tuple[StepEdge, ...] = ()
    provides: tuple[str, ...] = ()
    blocked: str = ""
    """Why the planner refuses to run this step at all (an order its edges cannot satisfy)."""
    source: Literal["rules", "llm"] = "rules"
    """``llm``: a model's suggestion (never P0, ranked after every rule step, no actions: never applied)."""

    def waits_for(self) -> tuple[StepEdge, ...]:
        """The edges naming a step that must have run first."""
        return tuple(e for e in self.edges if e.kind in BLOCKING)


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    steps: tuple[PlanStep, ...] = ()

    @property
    def measurements(self) -> tuple[PlanStep, ...]:
        return tuple(s for s in self.steps if s.kind == "measure")

    @property
    def runtime_steps(self) -> tuple[PlanStep, ...]:
        return tuple(s for s in self.steps if s.kind == "runtime")

    @property
    def deferred_steps(self) -> tuple[PlanStep, ...]:
        return tuple(s for s in self.steps if s.kind not in ("runtime", "measure"))

    def step(self, step_id: str) -> PlanStep | None:
        return next((s for s in self.steps if s.id == step_id), None)

    def order_breaches(self) -> list[str]:
        """Steps placed before a step they wait for, or waiting for a step the plan lacks (a plan file edited by
        hand): one line each; an empty list for a plan the planner wrote."""
        seen: set[str] = set()
        known = {s.id for s in self.steps}
        out: list[str] = []
        for step in self.steps:
            for edge in step.waits_for():
                if edge.step not in known:
                    out.append(f"{step.id} {STEP_EDGE_TEXT[edge.kind]} {edge.step}, which is not in the plan")
                elif edge.step not in seen:
                    out.append(f"{step.id} is placed before {edge.step}, which it is {STEP_EDGE_TEXT[edge.kind]}")
            seen.add(step.id)
        return out

    def digest(self) -> str:
        """A hash of the plan's content: approvals are bound to it."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]
