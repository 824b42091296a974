"""The plan: ordered steps built from problem findings."""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, ConfigDict

from rigaudit.tools.model.finding import Action, FixKind, Risk, Severity, Where

Priority = Literal["P0", "P1", "P2"]


class PlanStep(BaseModel):
    """One change to make, with everything a person needs to approve it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    check: str
    also_checks: tuple[str, ...] = ()
    priority: Priority
    kind: FixKind
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


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    steps: tuple[PlanStep, ...] = ()

    @property
    def runtime_steps(self) -> tuple[PlanStep, ...]:
        return tuple(s for s in self.steps if s.kind == "runtime")

    @property
    def deferred_steps(self) -> tuple[PlanStep, ...]:
        return tuple(s for s in self.steps if s.kind != "runtime")

    def digest(self) -> str:
        """A hash of the plan's content: approvals are bound to it."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]
