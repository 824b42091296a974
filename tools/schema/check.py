"""``rigaudit.check/1``: what ``rigaudit check --json`` writes, and the fleet report reads back.

``checks`` is the gate's view (every selected check, ``not_checked`` when its investigator did not
finish); ``audit`` is the audit result of the selected checks, without evidence (a snapshot holds
that); ``facts`` are the fingerprint the fleet compares across hosts (``--json`` only).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.finding import Area, Severity

CHECK_SCHEMA = "rigaudit.check/1"
Verdict = Literal["healthy", "problem", "could_not_check"]
GateStatus = Literal["ok", "problem", "unknown", "not_applicable", "not_checked"]
GATE_STATUSES: tuple[GateStatus, ...] = ("ok", "problem", "unknown", "not_applicable", "not_checked")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class GateCheck(_Frozen):
    """One selected check as the gate judged it."""

    check: str
    area: Area
    status: GateStatus
    severity: Severity | None = None
    title: str = ""
    observed: str = ""
    """What was seen; for ``not_checked``, why the check did not run."""
    counts: bool = False
    """Whether this check decided the verdict: a problem at or above ``fail_on``, or a check that could not be
    made (``not_checked``, an asked-for ``unknown``)."""
    workload: bool = False
    """The check judges the workload (its image, environment, limits, container options, the processes on the GPUs),
    not the node: its problem is reported and never decides (a node is drained only for its own faults)."""


class GateGpu(_Frozen):
    """A GPU the gate saw, named as dcgm-exporter labels its series (``gpu``, ``UUID``, ``pci_bus_id``)."""

    gpu: int | None = None
    """NVML's index (``None``: on the PCI bus, not on NVML)."""
    uuid: str = ""
    pci_bus_id: str
    name: str = ""


class CheckResult(_Frozen):
    schema_: str = Field(default=CHECK_SCHEMA, alias="schema")
    verdict: Verdict
    exit_code: int
    reason: str
    """The one-line drain reason (the first line ``rigaudit check`` prints)."""
    host: str
    source: str
    started_at: str
    finished_at: float
    """Unix time the check ended (the textfile's timestamp)."""
    duration_s: float
    fail_on: Severity
    deadline_s: float
    strict: bool = False
    checks: tuple[GateCheck, ...] = ()
    facts: dict[str, str] = Field(default_factory=dict)
    gpus: tuple[GateGpu, ...] = ()
    """The GPUs the node shows (NVML and the PCI bus): the per-GPU metrics' labels."""
    audit: AuditResult

    def counted(self, status: GateStatus) -> int:
        return sum(1 for c in self.checks if c.status == status)


__all__ = ["CHECK_SCHEMA", "GATE_STATUSES", "CheckResult", "GateCheck", "GateGpu", "GateStatus", "Verdict"]
