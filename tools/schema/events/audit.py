"""What an audit reports as it runs: each investigator's start, reads and end, the host operations, the findings,
the plan, the result, the PCIe topology."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StringConstraints

from rigaudit.tools.schema.audit import AuditResult, InvestigatorStatus
from rigaudit.tools.schema.events.base import BaseEvent
from rigaudit.tools.schema.finding import Finding
from rigaudit.tools.schema.plan import Plan


class InvestigatorStarted(BaseEvent):
    """An investigator starts: its area and title, rigaudit's own text (recorded as it is)."""

    verbatim: ClassVar[bool] = True
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
    result's fields; for ``nvml`` ``{"result": ...}`` or ``{"error": ...}``. The reads of a sealed snapshot are
    :class:`SnapshotReads` instead, an area's at once; a transcript of an older release recorded each by reference
    here: ``{"digest": ...}``, the digest of what the snapshot answered, read there again by a replay
    (:class:`SnapshotReferenced` before it names the snapshot; :mod:`rigaudit.transcripts.references`).
    """

    type: Literal["tool_call"] = "tool_call"
    area: str | None = None
    op: str
    target: str
    args: list[Any] = Field(default_factory=list)
    result: dict[str, Any] = Field(default_factory=dict)


class SnapshotReferenced(BaseEvent):
    """The audit reads a sealed snapshot: the reads after it (:class:`SnapshotReads`) hold digests of its answers,
    not their text."""

    type: Literal["snapshot_referenced"] = "snapshot_referenced"
    path: str
    """The snapshot's folder, absolute."""
    manifest: str
    """The SHA-256 of its ``snapshot.json``: which snapshot it was (checked before a replay reads it again)."""


AnswerDigest = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{32}$")]
"""The BLAKE2b digest (16 bytes, hex) of one answer: :func:`rigaudit.transcripts.references.answer_digest`."""
ReferencedRead = tuple[str, str, tuple[Any, ...], AnswerDigest]
"""One read of a sealed snapshot as :class:`SnapshotReads` holds it: ``(op, target, args, digest)``, as a
:class:`ToolCall` names it and the digest of what the snapshot answered."""


class SnapshotReads(BaseEvent):
    """An area's reads of a sealed snapshot, all at once (after :class:`SnapshotReferenced`): each its operation and
    the digest of the snapshot's answer, never its text; told when the area's investigator ends (the board and a
    replay count an area's reads then). ``area`` ``None``: reads made outside any area's investigator."""

    type: Literal["snapshot_reads"] = "snapshot_reads"
    area: str | None = None
    reads: tuple[ReferencedRead, ...] = ()
    _answers: tuple[object, ...] = PrivateAttr(default=())
    """The snapshot's answers, one per read, never serialized: a transcript embeds a read's answer where its path or
    command would not survive redaction (a replay could not name it in the snapshot)."""


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
