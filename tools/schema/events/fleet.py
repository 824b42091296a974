"""What a fleet audit reports: its start, each host's progress or failure, its summary."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rigaudit.tools.schema.events.base import BaseEvent


class FleetStarted(BaseEvent):
    """A fleet audit begins: the hosts it knows up front (empty when Slurm picks the nodes)."""

    type: Literal["fleet_started"] = "fleet_started"
    targets: list[str] = Field(default_factory=list)
    kind: str
    """``ssh``, ``slurm`` or ``gathered`` (``audit --results``)."""


class HostConnecting(BaseEvent):
    type: Literal["host_connecting"] = "host_connecting"
    target: str


class HostCollected(BaseEvent):
    type: Literal["host_collected"] = "host_collected"
    target: str
    mode: str
    """How the node collected: ``installed`` (its rigaudit), ``agent`` (the node server), ``slurm``."""
    size_bytes: int = 0
    seconds: float = 0.0


class HostAudited(BaseEvent):
    type: Literal["host_audited"] = "host_audited"
    target: str
    problems: int
    seconds: float = 0.0


class HostFailed(BaseEvent):
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


class FleetFinished(BaseEvent):
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
