"""What an audit reports as it runs: each investigator's start, reads and end, the host operations, the findings,
the plan, the result, the PCIe topology."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from rigaudit.tools.schema.audit import AuditResult, InvestigatorStatus
from rigaudit.tools.schema.events.base import BaseEvent
from rigaudit.tools.schema.finding import Finding
from rigaudit.tools.schema.plan import Plan


class InvestigatorStarted(BaseEvent):
    type: Literal["investigator_started"] = "investigator_started"
    area: str
    title: str = ""


class InvestigatorActivity(BaseEvent):
    """An investigator is reading something (shown on the live board while the read is in flight; not recorded: the
    read's :class:`ToolCall` follows it)."""

    display_only: ClassVar[bool] = True
    type: Literal["investigator_activity"] = "investigator_activity"
    area: str
    ref: str


class ToolCall(BaseEvent):
    """One operation that reached the host, with its full result (transcripts rebuild snapshots from these).

    ``op`` is ``read``, ``list_dir``, ``readlink``, ``exists``, ``run`` or ``nvml``. ``result`` is
    JSON: for ``read`` ``{"data_b64": ...}`` or ``{"error": ...}``; for ``run`` the command
    result's fields; for ``nvml`` ``{"result": ...}`` or ``{"error": ...}``. A read of a sealed snapshot is recorded
    by reference: ``{"digest": ...}``, the digest of what the snapshot answered, read there again by a replay
    (:class:`SnapshotReferenced` before it names the snapshot; :mod:`rigaudit.transcripts.references`).
    """

    type: Literal["tool_call"] = "tool_call"
    area: str | None = None
    op: str
    target: str
    args: list[Any] = Field(default_factory=list)
    result: dict[str, Any] = Field(default_factory=dict)
    _answer: object = PrivateAttr(default=None)
    """The host's answer behind a reference, never serialized: a transcript embeds it where the read's path or
    command would not survive redaction (a replay could not name it in the snapshot)."""


class SnapshotReferenced(BaseEvent):
    """The audit reads a sealed snapshot: the tool calls after it hold digests of its answers, not their text."""

    type: Literal["snapshot_referenced"] = "snapshot_referenced"
    path: str
    """The snapshot's folder, absolute."""
    manifest: str
    """The SHA-256 of its ``snapshot.json``: which snapshot it was (checked before a replay reads it again)."""


class InvestigatorFinished(BaseEvent):
    type: Literal["investigator_finished"] = "investigator_finished"
    area: str
    status: InvestigatorStatus
    duration_s: float
    error: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    """Findings by status: ``{"problem": 2, "ok": 3, ...}``."""


class FindingReported(BaseEvent):
    type: Literal["finding"] = "finding"
    finding: Finding


class PlanReady(BaseEvent):
    type: Literal["plan"] = "plan"
    plan: Plan


class AuditFinished(BaseEvent):
    type: Literal["audit_finished"] = "audit_finished"
    result: AuditResult


class PcieDevice(BaseModel):
    """One place in the PCIe tree: a root complex, a port, a switch port, a GPU, an NVSwitch or a NIC."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    bdf: str
    kind: str
    parent: str | None = None


class TopologyReported(BaseEvent):
    """Where the GPUs, switches and NICs sit (drawn as a tree, in the terminal and the report)."""

    type: Literal["topology"] = "topology"
    devices: list[PcieDevice] = Field(default_factory=list)
