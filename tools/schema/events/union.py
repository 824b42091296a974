"""The :data:`Event` union: every event a session may emit, told apart by its ``type`` (what a transcript holds).

The transcript reader and writer need it; a command that records no transcript imports only the events it emits.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from rigaudit.tools.schema.events.apply import ApplyFinished, ApprovalDecided, ChangeApplied, RollbackFinished
from rigaudit.tools.schema.events.audit import (
    AuditFinished,
    FindingReported,
    InvestigatorActivity,
    InvestigatorFinished,
    InvestigatorStarted,
    PlanReady,
    SnapshotReads,
    SnapshotReferenced,
    ToolCall,
    TopologyReported,
)
from rigaudit.tools.schema.events.bench import BenchResultReported
from rigaudit.tools.schema.events.catalog import ChecksListed, PolicyListed, PolicyVerdict, SchemaShown
from rigaudit.tools.schema.events.chat import LlmExchange, Message, ReplyStreamed
from rigaudit.tools.schema.events.diff import DiffReported, RediagnoseFinished
from rigaudit.tools.schema.events.fleet import FleetFinished, FleetStarted, HostAudited, HostCollected, HostConnecting, HostFailed
from rigaudit.tools.schema.events.gate import GateReported
from rigaudit.tools.schema.events.session import (
    Output,
    Progress,
    ReportWritten,
    SessionEnded,
    SessionStarted,
    SnapshotWritten,
    Warning_,
)
from rigaudit.tools.schema.events.transcripts import TranscriptsFolder, TranscriptShown, TranscriptsListed

Event = Annotated[
    SessionStarted
    | InvestigatorStarted
    | InvestigatorActivity
    | ToolCall
    | SnapshotReferenced
    | SnapshotReads
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
    | ReplyStreamed
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
