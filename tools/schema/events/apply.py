"""What apply and rollback report: each approval, each change, what an apply did step by step, what a rollback restored."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rigaudit.tools.schema.events.base import BaseEvent


class ApprovalDecided(BaseEvent):
    type: Literal["approval"] = "approval"
    step_id: str
    decision: Literal["yes", "no", "all", "quit", "auto"]
    who: str
    plan_hash: str
    note: str = ""


class ChangeApplied(BaseEvent):
    type: Literal["change_applied"] = "change_applied"
    step_id: str
    target: str
    before: str
    after: str
    verified: bool
    reverted: bool = False
    message: str = ""


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


class ApplyFinished(BaseEvent):
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


class RollbackFinished(BaseEvent):
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
