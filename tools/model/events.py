"""The typed events a session emits: the one stream every command (and the fleet) reports through.

A command emits events into its session; the terminal UI draws them, the transcript writer records
them, ``--json`` is written from them, and ``rigaudit replay`` draws the recorded ones again with the
same UI. An :data:`EventSink` is anything that takes an event; :func:`discard` is the one that
ignores them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from rigaudit.tools.model.audit import AuditResult, InvestigatorStatus
from rigaudit.tools.model.check import CheckResult
from rigaudit.tools.model.finding import Finding, FixKind
from rigaudit.tools.model.plan import Plan


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    """``defer_build``: each event's validator is built when first used, not at import (a command uses few)."""

    t: float = Field(default_factory=time.time)
    """Wall-clock time (epoch seconds) when the event happened."""

    verbatim: ClassVar[bool] = False
    """True for events that hold only rigaudit's own text (the check catalog, a schema, the policy's rules), never
    a host's, a person's or a model's: the transcript records them unredacted (a catalog's ``-k KERNEL`` is no
    secret), so a replay shows them as they were."""


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

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

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

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

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


class GateReported(_Event):
    """What ``rigaudit check`` judged, and how much of it the run showed (its lines are drawn from this)."""

    type: Literal["gate_reported"] = "gate_reported"
    result: CheckResult
    quiet: bool = False
    """The reason line alone (``--quiet``)."""
    verbose: bool = False
    """Every check, not only those that matter (``--verbose``)."""


class AppliedStep(BaseModel):
    """One plan step as an apply left it."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

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

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

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
    """``ssh``, ``slurm`` or ``gathered`` (``audit --results``)."""


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

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

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


# -- query commands: what they show is an event too (diff, checks, policy, schema, transcripts, replay) ------


class DiffSide(BaseModel):
    """One side of a diff: where it came from and what it is (``snapshot``, ``audit``, ``transcript``, ``bundle``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    path: str
    kind: str
    host: str = ""


class DiffVerdict(BaseModel):
    """A finding as a diff shows it (one side of a changed check)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    status: str
    severity: str | None = None
    title: str = ""
    observed: str = ""
    expected: str = ""
    subjects: list[str] = Field(default_factory=list)


class DiffFindingChange(BaseModel):
    """One check whose finding changed between A and B (``appeared``, ``resolved``, ``status``, ``severity``,
    ``observed``, ``only_a``, ``only_b``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    kind: Literal["appeared", "resolved", "status", "severity", "observed", "only_a", "only_b"]
    check: str
    area: str
    detail: str
    a: DiffVerdict | None = None
    b: DiffVerdict | None = None


class DiffFindings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    changes: list[DiffFindingChange] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict)
    unchanged: int = 0


class DiffValueChange(BaseModel):
    """One value read (file, folder, link, command, NVML call) that differs, is only in A or only in B."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    kind: Literal["file", "dir", "link", "command", "nvml"]
    ref: str
    change: Literal["changed", "only_a", "only_b"]
    detail: str
    volatile: bool = False
    """It moves on its own (power, temperature, counters): listed apart, not counted."""
    diff: str = ""


class DiffValues(BaseModel):
    """The values compared (``compared`` false: one side had no snapshot, ``note`` says why)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    compared: bool
    note: str = ""
    compared_count: int = 0
    counts: dict[str, int] = Field(default_factory=dict)
    changes: list[DiffValueChange] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


class DiffReported(_Event):
    """Two audits compared (``rigaudit diff``): the fields of ``rigaudit.diff/1``, and how many value rows are shown."""

    type: Literal["diff"] = "diff"
    a: DiffSide
    b: DiffSide
    different: bool
    headline: list[str] = Field(default_factory=list)
    """The host facts that changed (GPUs, driver, kernel...)."""
    facts_compared: bool = False
    """Both sides recorded their host facts (an empty headline then means the same facts)."""
    findings: DiffFindings = Field(default_factory=DiffFindings)
    values: DiffValues = Field(default_factory=lambda: DiffValues(compared=False))
    warnings: list[str] = Field(default_factory=list)
    rows: int = 40
    """Value changes shown in the table (``--rows``)."""


class CheckEntry(BaseModel):
    """One check of the catalog, as ``rigaudit checks --json`` writes it."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    check: str = Field(pattern=r"^[a-z][a-z0-9]*\.[a-z0-9_]+$")
    area: str
    title: str
    reads: str
    problem: str
    fix: str
    fix_kinds: list[FixKind] = Field(default_factory=list)


class ChecksListed(_Event):
    """The check catalog (``rigaudit checks``), shown as a table, as JSON (``--json``) or as docs/checks.md."""

    verbatim: ClassVar[bool] = True
    type: Literal["checks_listed"] = "checks_listed"
    checks: list[CheckEntry] = Field(default_factory=list)
    form: Literal["table", "json", "markdown"] = "table"


class PolicyVerdict(_Event):
    """A command line vetted by the command policy (``rigaudit policy check``); nothing was run."""

    type: Literal["policy_verdict"] = "policy_verdict"
    line: str
    decision: Literal["allow", "ask", "deny"]
    reason: str
    rule: str = ""
    """The rule that decided."""


class PolicyRule(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str
    decision: Literal["allow", "ask", "deny"]
    description: str


class PolicyListed(_Event):
    """The command policy's rules, then its fallbacks (``rigaudit policy list``)."""

    verbatim: ClassVar[bool] = True
    type: Literal["policy_listed"] = "policy_listed"
    rules: list[PolicyRule] = Field(default_factory=list)


class SchemaShown(_Event):
    """A JSON schema (``rigaudit schema``: the audit result's)."""

    verbatim: ClassVar[bool] = True
    type: Literal["schema_shown"] = "schema_shown"
    name: str
    """``rigaudit.audit/1``."""
    document: dict[str, Any] = Field(default_factory=dict)


class TranscriptEntry(BaseModel):
    """One stored transcript as ``rigaudit transcripts list`` shows it (``error``: it could not be read)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    file: str
    started: str = "?"
    command: str = "?"
    host: str = "?"
    events: int | None = None
    duration_s: float | None = None
    exit_code: int | None = None
    error: str = ""


class TranscriptsListed(_Event):
    type: Literal["transcripts_listed"] = "transcripts_listed"
    folder: str
    entries: list[TranscriptEntry] = Field(default_factory=list)


class TranscriptsFolder(_Event):
    """Where transcripts are kept (``rigaudit transcripts path``)."""

    type: Literal["transcripts_folder"] = "transcripts_folder"
    path: str


class EventLine(BaseModel):
    """One event of a shown transcript: seconds after its first, its type, one line about it."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    after_s: float
    type: str
    text: str


class TranscriptShown(_Event):
    """What one transcript holds (``rigaudit transcripts show``)."""

    type: Literal["transcript_shown"] = "transcript_shown"
    path: str
    format: str = ""
    written_by: str = ""
    created_at: str = ""
    command: str | None = None
    """``None``: the transcript recorded no session start."""
    host: str = ""
    source: str = ""
    options: dict[str, Any] = Field(default_factory=dict)
    versions: dict[str, str] = Field(default_factory=dict)
    duration_s: float | None = None
    exit_code: int | None = None
    """``None``: no recorded end."""
    end_reason: str = ""
    counts: list[tuple[str, int]] = Field(default_factory=list)
    """Events by type, most common first."""
    investigators: list[tuple[str, str]] = Field(default_factory=list)
    """``(area, status)`` of each investigator that finished."""
    findings: int = 0
    problems: list[tuple[str, str | None]] = Field(default_factory=list)
    """``(check, severity)`` of each problem found."""
    plan_steps: int | None = None
    """Steps of the recorded audit's plan (``None``: no audit)."""
    approvals: int = 0
    changes: int = 0
    benchmarks: int = 0
    llm_usage: dict[str, int] = Field(default_factory=dict)
    reports: list[str] = Field(default_factory=list)
    listing: list[EventLine] = Field(default_factory=list)
    """Every event, one line each (``--events``)."""


class RediagnoseFinished(_Event):
    """A recorded audit judged again with today's rules (``rigaudit replay --rediagnose``): what changed."""

    type: Literal["rediagnose_finished"] = "rediagnose_finished"
    transcript: str
    what: str
    """``audit of HOST``: the recorded session."""
    recorded_at: float
    audit: int = 1
    """Which audit of the session."""
    rebuild: str
    """What the rebuilt snapshot holds, in one line."""
    warnings: list[str] = Field(default_factory=list)
    """The rebuild's warnings."""
    mismatches: list[str] = Field(default_factory=list)
    """Recorded results the rebuilt snapshot does not give back."""
    saved: str = ""
    """The folder the rebuilt snapshot was kept in (``--save-snapshot``)."""
    recorded: int
    """Findings recorded."""
    changes: list[DiffFindingChange] = Field(default_factory=list)
    """Recorded = A, today = B."""
    result: AuditResult
    """Today's audit of the rebuilt snapshot."""


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
    | GateReported
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
    | SessionEnded
    | DiffReported
    | ChecksListed
    | PolicyVerdict
    | PolicyListed
    | SchemaShown
    | TranscriptsListed
    | TranscriptsFolder
    | TranscriptShown
    | RediagnoseFinished,
    Field(discriminator="type"),
]

EventSink = Callable[[Event], None]
"""Anything that takes events: a session's ``emit``, the terminal UI, the transcript writer."""


def discard(event: Event) -> None:
    """The sink that ignores every event (work run with nobody watching)."""
    del event
