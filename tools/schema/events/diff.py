"""Two audits compared (``rigaudit diff``), and a recorded audit judged again with today's rules
(``rigaudit replay --rediagnose``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.events.base import BaseEvent


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


class DiffReported(BaseEvent):
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


class LlmReplay(BaseModel):
    """The agents of a recorded LLM audit re-run with no server: each request answered by its recorded reply."""

    exchanges: int
    """Recorded answers replayed."""
    changed: list[str] = Field(default_factory=list)
    """Requests whose messages differ from the recorded ones (a changed prompt or rule)."""
    unanswered: list[str] = Field(default_factory=list)
    """Agents that asked more than the recording holds."""
    left: dict[str, int] = Field(default_factory=dict)
    """Recorded answers no request asked for, by agent."""
    recorded: int = 0
    """The model's suggestions recorded."""
    changes: list[DiffFindingChange] = Field(default_factory=list)
    """Suggestions: recorded = A, replayed = B."""


class RediagnoseFinished(BaseEvent):
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
    llm: LlmReplay | None = None
    """The model's side, where the session recorded its exchanges: re-run against the recorded answers."""
