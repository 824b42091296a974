"""The typed events a session emits. The live board, the transcript writer and ``--json`` all consume them."""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rigaudit.tools.model.audit import AuditResult, InvestigatorStatus
from rigaudit.tools.model.finding import Finding
from rigaudit.tools.model.plan import Plan


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

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


class BenchResultReported(_Event):
    type: Literal["bench_result"] = "bench_result"
    kind: str
    """``p2p``, ``nccl``, ``inference``, ``compare``, ``roofline``."""
    summary: str
    data: dict[str, Any] = Field(default_factory=dict)


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
    | ReportWritten
    | Message
    | Warning_
    | SessionEnded,
    Field(discriminator="type"),
]
