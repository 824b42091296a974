"""The typed data that crosses every boundary of rigaudit (pydantic, frozen)."""

from rigaudit.tools.schema.audit import AUDIT_SCHEMA, AuditResult, InvestigatorRun, InvestigatorStatus
from rigaudit.tools.schema.evidence import Evidence, EvidenceKind
from rigaudit.tools.schema.finding import (
    Action,
    Area,
    Finding,
    Fix,
    FixKind,
    Risk,
    Severity,
    Status,
    Where,
)
from rigaudit.tools.schema.plan import Plan, PlanStep, Priority

__all__ = [
    "AUDIT_SCHEMA",
    "Action",
    "Area",
    "AuditResult",
    "Evidence",
    "EvidenceKind",
    "Finding",
    "Fix",
    "FixKind",
    "InvestigatorRun",
    "InvestigatorStatus",
    "Plan",
    "PlanStep",
    "Priority",
    "Risk",
    "Severity",
    "Status",
    "Where",
]
