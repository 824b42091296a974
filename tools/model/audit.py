"""The audit result, ``rigaudit.audit/1``: what ``--json`` writes and ``--plan`` reads."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rigaudit.tools.model.evidence import Evidence
from rigaudit.tools.model.finding import Area, Finding
from rigaudit.tools.model.plan import Plan

AUDIT_SCHEMA = "rigaudit.audit/1"
InvestigatorStatus = Literal["done", "failed", "timeout", "cancelled"]


class InvestigatorRun(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    area: Area
    status: InvestigatorStatus
    duration_s: float
    error: str | None = None
    findings: int = 0


class HostSummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    source: str
    """``local``, ``snapshot:DIR`` or ``ssh:HOST``."""
    facts: dict[str, str] = Field(default_factory=dict)
    """Baseline facts for the report: kernel, driver, GPUs, CPU, platform..."""


class AuditResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_: str = Field(default=AUDIT_SCHEMA, alias="schema")
    host: HostSummary
    started_at: str
    duration_s: float
    investigators: tuple[InvestigatorRun, ...] = ()
    findings: tuple[Finding, ...] = ()
    plan: Plan = Plan()
    evidence: tuple[Evidence, ...] = ()
    warnings: tuple[str, ...] = ()

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
