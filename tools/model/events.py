"""The typed events a session emits: the one stream every command (and the fleet) reports through.

A command emits events into its session; the terminal UI draws them, the transcript writer records
them, ``--json`` is written from them, and ``rigaudit replay`` draws the recorded ones again with the
same UI. An :data:`EventSink` is anything that takes an event; :func:`discard` is the one that
ignores them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rigaudit.tools.model.audit import AuditResult, InvestigatorStatus
from rigaudit.tools.model.finding import Finding
from rigaudit.tools.model.plan import Plan


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    """``defer_build``: each event's validator is built when first used, not at import (a command uses few)."""

    t: float = Field(default_factory=time.time)
    """Wall-clock time (epoch seconds) when the event happened."""


class SessionStarted(_Event):
    type: Literal["session_started"] = "session_started"
    command: str
    """``audit``, ``apply``, ``bench``, ``chat``..."""
    versions: dict[str, str] = Field(default_factory=dict)
    host: str = ""
    source: str = ""
    options: dict[str, Any] = Field(default_factory=dict)


class InvestigatorStarted(_Event):
    type: Literal["investigator_started"] = "investigator_started"
    area: str
    title: str = ""


class InvestigatorActivity(_Event):
    """An investigator is reading something (shown on the live board)."""

    type: Literal["investigator_activity"] = "investigator_activity"
    area: str
    ref: str


class ToolCall(_Event):
    """One operation that reached the host, with its full result (transcripts rebuild snapshots from these).

    ``op`` is ``read``, ``list_dir``, ``readlink``, ``exists``, ``run`` or ``nvml``. ``result`` is
    JSON: for ``read`` ``{"data_b64": ...}`` or ``{"error": ...}``; for ``run`` the command
    result's fields; for ``nvml`` ``{"result": ...}`` or ``{"error": ...}``.
    """

    type: Literal["tool_call"] = "tool_call"
    area: str | None = None
    op: str
    target: str
    args: list[Any] = Field(default_factory=list)
    result: dict[str, Any] = Field(default_factory=dict)


class InvestigatorFinished(_Event):
    type: Literal["investigator_finished"] = "investigator_finished"
    area: str
    status: InvestigatorStatus
    duration_s: float
    error: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    """Findings by status: ``{"problem": 2, "ok": 3, ...}``."""


class FindingReported(_Event):
    type: Literal["finding"] = "finding"
    finding: Finding


class PlanReady(_Event):
    type: Literal["plan"] = "plan"
    plan: Plan


class AuditFinished(_Event):
    type: Literal["audit_finished"] = "audit_finished"
    result: AuditResult


class LlmExchange(_Event):
    type: Literal["llm_exchange"] = "llm_exchange"
    agent: str
    request: dict[str, Any] = Field(default_factory=dict)
    response: dict[str, Any] = Field(default_factory=dict)
    usage: dict[str, int] = Field(default_factory=dict)


class ApprovalDecided(_Event):
    type: Literal["approval"] = "approval"
    step_id: str
    decision: Literal["yes", "no", "all", "quit", "auto"]
    who: str
    plan_hash: str
    note: str = ""


class ChangeApplied(_Event):
    type: Literal["change_applied"] = "change_applied"
    step_id: str
    target: str
    before: str
    after: str
    verified: bool
    reverted: bool = False
    message: str = ""


class BenchTable(BaseModel):
    """A result as the person sees it: a titled table of text cells."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: str
    headers: list[str]
    rows: list[list[str]]


class BenchResultReported(_Event):
    type: Literal["bench_result"] = "bench_result"
    kind: str
    """``p2p``, ``nccl``, ``inference``, ``compare``, ``roofline``."""
    summary: str
    """The report section it belongs to (``Validation``, ``Benchmark comparison``)."""
    data: dict[str, Any] = Field(default_factory=dict)
    """The result as its own JSON (``rigaudit.p2p/1``, ``rigaudit.bench/1``...): what ``--json`` writes."""
    tables: list[BenchTable] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    """Lines shown under the table (versions, GPUs, how to read it)."""


class Progress(_Event):
    """Long work advancing: ``done`` of ``total`` under ``label`` (a bar on a terminal, nothing elsewhere)."""

    type: Literal["progress"] = "progress"
    label: str
    done: int
    total: int


class PcieDevice(BaseModel):
    """One place in the PCIe tree: a root complex, a port, a switch port, a GPU, an NVSwitch or a NIC."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bdf: str
    kind: str
    parent: str | None = None


class TopologyReported(_Event):
    """Where the GPUs, switches and NICs sit (drawn as a tree, in the terminal and the report)."""

    type: Literal["topology"] = "topology"
    devices: list[PcieDevice] = Field(default_factory=list)


class Output(_Event):
    """A line of another program's own output, shown as it is (an external benchmark's log)."""

    type: Literal["output"] = "output"
    text: str


class AppliedStep(BaseModel):
    """One plan step as an apply left it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    step_id: str
    status: str
    """``applied``, ``partial``, ``failed``, ``unchanged``, ``declined``, ``deferred``, ``elsewhere``, ``manual``,
    ``blocked`` (a step it waits for did not run: ``reason`` says which), ``not_attempted``."""
    reason: str = ""
    changes: list[tuple[str, str]] = Field(default_factory=list)
    """``(what: before -> after, outcome)``, identical changes folded into one line."""
    problems: list[str] = Field(default_factory=list)
    """``target: message`` for each change reverted or failed."""


class ApplyFinished(_Event):
    """What an apply did, step by step; where its journal is and how to undo it."""

    type: Literal["apply_finished"] = "apply_finished"
    host: str
    source: str
    plan_hash: str
    steps: list[AppliedStep] = Field(default_factory=list)
    persist: list[tuple[str, bool]] = Field(default_factory=list)
    """``(persist file: outcome message, verified)``."""
    persist_notes: list[str] = Field(default_factory=list)
    journal: str | None = None
    undo: str = ""
    """The rollback command that undoes it."""
    reaudit: dict[str, str] = Field(default_factory=dict)
    """Check -> status on the changed copy (``apply --into``)."""
    reaudited: str = ""
    """What was re-audited (the copy's folder)."""
    stopped: str = ""
    """Why the apply ended before its last step: ``interrupted (Ctrl-C)``, ``input ended (Ctrl-D)``, ``quit``."""


class RestoredGroup(BaseModel):
    """Restores of one step with one outcome and value (128 CPUs restored is one group)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    step_id: str
    outcome: Literal["restored", "skipped", "failed"]
    what: str
    text: str


class RollbackFinished(_Event):
    """What a rollback restored from its journal."""

    type: Literal["rollback_finished"] = "rollback_finished"
    journal: str
    host: str
    source: str
    groups: list[RestoredGroup] = Field(default_factory=list)
    restored: int = 0
    failed: int = 0
    nothing_to_do: bool = False
    """Every change of the journal was already reverted."""


class FleetStarted(_Event):
    """A fleet audit begins: the hosts it knows up front (empty when Slurm picks the nodes)."""

    type: Literal["fleet_started"] = "fleet_started"
    targets: list[str] = Field(default_factory=list)
    kind: str
    """``ssh`` or ``slurm``."""


class HostConnecting(_Event):
    type: Literal["host_connecting"] = "host_connecting"
    target: str


class HostCollected(_Event):
    type: Literal["host_collected"] = "host_collected"
    target: str
    mode: str
    """How the node collected: ``installed`` (its rigaudit), ``agent`` (the node server), ``slurm``."""
    size_bytes: int = 0
    seconds: float = 0.0


class HostAudited(_Event):
    type: Literal["host_audited"] = "host_audited"
    target: str
    problems: int
    seconds: float = 0.0


class HostFailed(_Event):
    type: Literal["host_failed"] = "host_failed"
    target: str
    stage: str
    """``connect``, ``collect``, ``timeout`` or ``audit``."""
    error: str


class HostFailure(BaseModel):
    """One host a fleet audit could not audit, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    target: str
    stage: str
    error: str


class FleetFinished(_Event):
    """What a fleet audit found, as its summary shows it (``fleet.json`` holds the whole result)."""

    type: Literal["fleet_finished"] = "fleet_finished"
    kind: str
    hosts: int
    audited: int
    failures: list[HostFailure] = Field(default_factory=list)
    differ: int = 0
    """Hosts that differ from their peers."""
    outliers: list[str] = Field(default_factory=list)
    """The differences shown, a few per host (the fleet report lists them all)."""
    fixes: int = 0
    """Distinct fixes of the fleet plan."""
    duration_s: float = 0.0
    warnings: list[str] = Field(default_factory=list)


class SnapshotWritten(_Event):
    """A snapshot directory or a share bundle written: what it holds, in one line (``... -> PATH``)."""

    type: Literal["snapshot_written"] = "snapshot_written"
    kind: Literal["snapshot", "share bundle"]
    path: str
    summary: str
    details: list[str] = Field(default_factory=list)
    """Lines shown before the summary (a share bundle's host, GPUs, problems and what was replaced)."""


class ReportWritten(_Event):
    type: Literal["report_written"] = "report_written"
    path: str
    section: str = ""


class Message(_Event):
    """Free text for the conversation: what the person typed, what rigaudit answered."""

    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system"]
    text: str


class Warning_(_Event):
    type: Literal["warning"] = "warning"
    text: str


class SessionEnded(_Event):
    type: Literal["session_ended"] = "session_ended"
    exit_code: int = 0
    reason: str = ""


Event = Annotated[
    SessionStarted
    | InvestigatorStarted
    | InvestigatorActivity
    | ToolCall
    | InvestigatorFinished
    | FindingReported
    | PlanReady
    | AuditFinished
    | LlmExchange
    | ApprovalDecided
    | ChangeApplied
    | BenchResultReported
    | Progress
    | TopologyReported
    | Output
    | ApplyFinished
    | RollbackFinished
    | FleetStarted
    | HostConnecting
    | HostCollected
    | HostAudited
    | HostFailed
    | FleetFinished
    | SnapshotWritten
    | ReportWritten
    | Message
    | Warning_
    | SessionEnded,
    Field(discriminator="type"),
]

EventSink = Callable[[Event], None]
"""Anything that takes events: a session's ``emit``, the terminal UI, the transcript writer."""


def discard(event: Event) -> None:
    """The sink that ignores every event (work run with nobody watching)."""
    del event
