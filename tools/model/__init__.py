"""The typed data that crosses every boundary of rigaudit (pydantic, frozen)."""

from tools.model.audit import AUDIT_SCHEMA, AuditResult, InvestigatorRun, InvestigatorStatus
from tools.model.evidence import Evidence, EvidenceKind
from tools.model.finding import (
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
from tools.model.plan import Plan, PlanStep, Priority

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
