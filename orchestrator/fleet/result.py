"""The fleet's result: each host's audit or failure, the check matrix, the outliers, the grouped plan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from rigaudit.tools.core.record import Record, field
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.events.fleet import HostFailure
from rigaudit.tools.schema.plan import PlanStep, StepEdgeKind

FLEET_SCHEMA = "rigaudit.fleet/1"
FailureStage = Literal["connect", "collect", "timeout", "audit"]


class HostAudit(Record):
    target: str
    mode: str
    """How the evidence came: ``installed`` (the node's rigaudit), ``server`` (the zipapp), ``slurm``, ``replay``."""
    result: AuditResult
    facts: dict[str, str]
    """The fingerprint compared across hosts (see fingerprint.py)."""
    collect_s: float
    audit_s: float
    folder: Path | None = None
    """This host's folder under ``--out``: audit.json, system-improve.md, snapshot/."""

    @property
    def problems(self) -> int:
        return sum(1 for f in self.result.findings if f.status == "problem")


class Outlier(Record):
    """A host that differs from the majority of its peers on a check's status or a key fact."""

    host: str
    kind: Literal["check", "fact"]
    key: str
    value: str
    usual: str
    peers: int
    """Hosts with the usual value."""
    compared: int
    """Hosts that have a value for this key."""
    detail: str = ""
    severity: str | None = None

    def line(self) -> str:
        what = f"{self.key} is {self.value}" + (f" ({self.severity})" if self.severity else "")
        return f"{self.host}: {what}; {self.peers} of {self.compared} hosts: {self.usual}"


class FleetWait(Record):
    """A fleet fix waits for another: on ``hosts``, their own plans put ``fix`` (its number in the fleet plan) first."""

    fix: int
    kind: StepEdgeKind
    hosts: tuple[str, ...]


class FleetFix(Record):
    """One fix, identical on every host listed."""

    step: PlanStep
    hosts: tuple[str, ...]
    waits: tuple[FleetWait, ...] = ()
    """The fleet fixes each host's plan graph puts before this one (``requires``, ``not_before``, ...)."""
    unordered: str = ""
    """Why the fleet order could not honour every host's graph (hosts order these fixes differently); "" when it does."""


class FleetResult(Record):
    targets: tuple[str, ...]
    audits: tuple[HostAudit, ...]
    failures: tuple[HostFailure, ...]
    matrix: dict[str, dict[str, str]]
    """check -> host -> status (ok, problem, unknown, not_applicable), catalog order."""
    outliers: tuple[Outlier, ...]
    plan: tuple[FleetFix, ...]
    started_at: str
    duration_s: float
    kind: str = "ssh"
    warnings: tuple[str, ...] = field(default=())

    def audit_for(self, target: str) -> HostAudit | None:
        return next((a for a in self.audits if a.target == target), None)

    def to_dict(self) -> dict[str, object]:
        return {
            "schema": FLEET_SCHEMA,
            "kind": self.kind,
            "started_at": self.started_at,
            "duration_s": round(self.duration_s, 3),
            "hosts": [
                {
                    "target": a.target,
                    "name": a.result.host.name,
                    "mode": a.mode,
                    "source": a.result.host.source,
                    "problems": a.problems,
                    "plan_steps": len(a.result.plan.steps),
                    "facts": a.facts,
                    "collect_s": round(a.collect_s, 3),
                    "audit_s": round(a.audit_s, 3),
                    "folder": str(a.folder) if a.folder else None,
                }
                for a in self.audits
            ],
            "failures": [{"target": f.target, "stage": f.stage, "error": f.error} for f in self.failures],
            "matrix": self.matrix,
            "outliers": [
                {
                    "host": o.host,
                    "kind": o.kind,
                    "key": o.key,
                    "value": o.value,
                    "usual": o.usual,
                    "peers": o.peers,
                    "compared": o.compared,
                    "severity": o.severity,
                    "detail": o.detail,
                }
                for o in self.outliers
            ],
            "plan": [
                {
                    "hosts": list(f.hosts),
                    "step": f.step.model_dump(mode="json"),
                    "after": [{"fix": w.fix, "kind": w.kind, "hosts": list(w.hosts)} for w in f.waits],
                    **({"unordered": f.unordered} if f.unordered else {}),
                }
                for f in self.plan
            ],
            "warnings": list(self.warnings),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)
