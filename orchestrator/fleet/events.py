"""What a fleet run reports as it goes (the progress display consumes these)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Union

from rigaudit.orchestrator.fleet.model import FleetResult


@dataclass(frozen=True)
class FleetStarted:
    targets: tuple[str, ...]
    """Known up front (SSH, a Slurm node list); empty when Slurm picks the nodes."""
    kind: str


@dataclass(frozen=True)
class HostConnecting:
    target: str


@dataclass(frozen=True)
class HostCollected:
    target: str
    mode: str
    size_bytes: int
    seconds: float


@dataclass(frozen=True)
class HostJudged:
    target: str
    problems: int
    seconds: float


@dataclass(frozen=True)
class HostFailed:
    target: str
    stage: str
    error: str


@dataclass(frozen=True)
class FleetFinished:
    result: FleetResult


FleetEvent = Union[FleetStarted, HostConnecting, HostCollected, HostJudged, HostFailed, FleetFinished]  # noqa: UP007
FleetEmit = Callable[[FleetEvent], None]


def ignore(event: FleetEvent) -> None:
    del event
