"""The typed events a session emits: the one stream every command (and the fleet) reports through.

A command emits events into its session; the terminal UI draws them, the transcript writer records
them, ``--json`` is written from them, and ``rigaudit replay`` draws the recorded ones again with the
same UI. An :data:`~.sink.EventSink` is anything that takes an event; :func:`~.sink.discard` is the one
that ignores them.

The events live in one module per concern (:mod:`.session`, :mod:`.audit`, :mod:`.chat`, :mod:`.apply`,
:mod:`.bench`, :mod:`.gate`, :mod:`.fleet`, :mod:`.diff`, :mod:`.catalog`, :mod:`.transcripts`), the :data:`~.union.Event`
union of them all in :mod:`.union`: a command imports the events it emits, and only one that reads or
writes a transcript imports them all (each event class costs its start, ``rigaudit check``'s above all).
rigaudit's code imports each name from its module; this package gives every name too, importing only the
module that defines it when the name is first asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rigaudit.tools.model.events.apply import (
        AppliedStep,
        ApplyFinished,
        ApprovalDecided,
        ChangeApplied,
        RestoredGroup,
        RollbackFinished,
    )
    from rigaudit.tools.model.events.audit import (
        AuditFinished,
        FindingReported,
        InvestigatorActivity,
        InvestigatorFinished,
        InvestigatorStarted,
        PcieDevice,
        PlanReady,
        ToolCall,
        TopologyReported,
    )
    from rigaudit.tools.model.events.base import BaseEvent
    from rigaudit.tools.model.events.bench import BenchResultReported, BenchTable
    from rigaudit.tools.model.events.catalog import (
        CheckEntry,
        ChecksListed,
        PolicyListed,
        PolicyRule,
        PolicyVerdict,
        SchemaShown,
    )
    from rigaudit.tools.model.events.chat import LlmExchange, Message
    from rigaudit.tools.model.events.diff import (
        DiffFindingChange,
        DiffFindings,
        DiffReported,
        DiffSide,
        DiffValueChange,
        DiffValues,
        DiffVerdict,
        RediagnoseFinished,
    )
    from rigaudit.tools.model.events.fleet import (
        FleetFinished,
        FleetStarted,
        HostAudited,
        HostCollected,
        HostConnecting,
        HostFailed,
        HostFailure,
    )
    from rigaudit.tools.model.events.gate import GateReported
    from rigaudit.tools.model.events.session import (
        Output,
        Progress,
        ReportWritten,
        SessionEnded,
        SessionStarted,
        SnapshotWritten,
        Warning_,
    )
    from rigaudit.tools.model.events.sink import EventSink, discard
    from rigaudit.tools.model.events.transcripts import (
        EventLine,
        TranscriptEntry,
        TranscriptsFolder,
        TranscriptShown,
        TranscriptsListed,
    )
    from rigaudit.tools.model.events.union import Event

MODULE_OF: dict[str, str] = {
    "BaseEvent": "base",
    **dict.fromkeys(("EventSink", "discard"), "sink"),
    **dict.fromkeys(
        ("Output", "Progress", "ReportWritten", "SessionEnded", "SessionStarted", "SnapshotWritten", "Warning_"), "session"
    ),
    **dict.fromkeys(
        (
            "AuditFinished",
            "FindingReported",
            "InvestigatorActivity",
            "InvestigatorFinished",
            "InvestigatorStarted",
            "PcieDevice",
            "PlanReady",
            "ToolCall",
            "TopologyReported",
        ),
        "audit",
    ),
    **dict.fromkeys(("LlmExchange", "Message"), "chat"),
    **dict.fromkeys(
        ("AppliedStep", "ApplyFinished", "ApprovalDecided", "ChangeApplied", "RestoredGroup", "RollbackFinished"), "apply"
    ),
    **dict.fromkeys(("BenchResultReported", "BenchTable"), "bench"),
    **dict.fromkeys(
        ("FleetFinished", "FleetStarted", "HostAudited", "HostCollected", "HostConnecting", "HostFailed", "HostFailure"), "fleet"
    ),
    **dict.fromkeys(
        (
            "DiffFindingChange",
            "DiffFindings",
            "DiffReported",
            "DiffSide",
            "DiffValueChange",
            "DiffValues",
            "DiffVerdict",
            "RediagnoseFinished",
        ),
        "diff",
    ),
    **dict.fromkeys(("CheckEntry", "ChecksListed", "PolicyListed", "PolicyRule", "PolicyVerdict", "SchemaShown"), "catalog"),
    **dict.fromkeys(("EventLine", "TranscriptEntry", "TranscriptShown", "TranscriptsFolder", "TranscriptsListed"), "transcripts"),
    "GateReported": "gate",
    "Event": "union",
}
"""Each name this package gives, and the module (of this package) that defines it."""


def __getattr__(name: str) -> object:
    module = MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value: object = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *MODULE_OF})


__all__ = [
    "AppliedStep",
    "ApplyFinished",
    "ApprovalDecided",
    "AuditFinished",
    "BaseEvent",
    "BenchResultReported",
    "BenchTable",
    "ChangeApplied",
    "CheckEntry",
    "ChecksListed",
    "DiffFindingChange",
    "DiffFindings",
    "DiffReported",
    "DiffSide",
    "DiffValueChange",
    "DiffValues",
    "DiffVerdict",
    "Event",
    "EventLine",
    "EventSink",
    "FindingReported",
    "FleetFinished",
    "FleetStarted",
    "GateReported",
    "HostAudited",
    "HostCollected",
    "HostConnecting",
    "HostFailed",
    "HostFailure",
    "InvestigatorActivity",
    "InvestigatorFinished",
    "InvestigatorStarted",
    "LlmExchange",
    "Message",
    "Output",
    "PcieDevice",
    "PlanReady",
    "PolicyListed",
    "PolicyRule",
    "PolicyVerdict",
    "Progress",
    "RediagnoseFinished",
    "ReportWritten",
    "RestoredGroup",
    "RollbackFinished",
    "SchemaShown",
    "SessionEnded",
    "SessionStarted",
    "SnapshotWritten",
    "ToolCall",
    "TopologyReported",
    "TranscriptEntry",
    "TranscriptShown",
    "TranscriptsFolder",
    "TranscriptsListed",
    "Warning_",
    "discard",
]
