"""The stored transcripts, as ``rigaudit transcripts list``, ``path`` and ``show`` show them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rigaudit.tools.schema.events.base import BaseEvent


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


class TranscriptsListed(BaseEvent):
    type: Literal["transcripts_listed"] = "transcripts_listed"
    folder: str
    entries: list[TranscriptEntry] = Field(default_factory=list)


class TranscriptsFolder(BaseEvent):
    """Where transcripts are kept (``rigaudit transcripts path``)."""

    type: Literal["transcripts_folder"] = "transcripts_folder"
    path: str


class EventLine(BaseModel):
    """One event of a shown transcript: seconds after its first, its type, one line about it."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    after_s: float
    type: str
    text: str


class TranscriptShown(BaseEvent):
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
    llm_cost_usd: float | None = None
    """What the model's tokens cost, as the session's total recorded it (``None``: no price given)."""
    reports: list[str] = Field(default_factory=list)
    listing: list[EventLine] = Field(default_factory=list)
    """Every event, one line each (``--events``)."""
