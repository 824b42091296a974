"""What every command's session reports: its start and end, warnings, progress, another program's output, what it wrote."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from rigaudit.tools.schema.events.base import BaseEvent


class SessionStarted(BaseEvent):
    type: Literal["session_started"] = "session_started"
    command: str
    """``audit``, ``apply``, ``bench``, ``chat``..."""
    versions: dict[str, str] = Field(default_factory=dict)
    host: str = ""
    source: str = ""
    options: dict[str, Any] = Field(default_factory=dict)


class SessionEnded(BaseEvent):
    type: Literal["session_ended"] = "session_ended"
    exit_code: int = 0
    reason: str = ""


class Warning_(BaseEvent):
    type: Literal["warning"] = "warning"
    text: str


class Progress(BaseEvent):
    """Long work advancing: ``done`` of ``total`` under ``label`` (a bar on a terminal, nothing elsewhere)."""

    type: Literal["progress"] = "progress"
    label: str
    done: int
    total: int


class Output(BaseEvent):
    """A line of another program's own output, shown as it is (an external benchmark's log)."""

    type: Literal["output"] = "output"
    text: str


class ReportWritten(BaseEvent):
    type: Literal["report_written"] = "report_written"
    path: str
    section: str = ""


class SnapshotWritten(BaseEvent):
    """A snapshot directory or a share bundle written: what it holds, in one line (``... -> PATH``)."""

    type: Literal["snapshot_written"] = "snapshot_written"
    kind: Literal["snapshot", "share bundle"]
    path: str
    summary: str
    details: list[str] = Field(default_factory=list)
    """Lines shown before the summary (a share bundle's host, GPUs, problems and what was replaced)."""
