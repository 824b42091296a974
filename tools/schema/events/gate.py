"""What ``rigaudit check`` reports: its verdict, drawn as the gate's lines."""

from __future__ import annotations

from typing import Literal

from rigaudit.tools.schema.check import CheckResult
from rigaudit.tools.schema.events.base import BaseEvent


class GateReported(BaseEvent):
    """What ``rigaudit check`` judged, and how much of it the run showed (its lines are drawn from this)."""

    type: Literal["gate_reported"] = "gate_reported"
    result: CheckResult
    quiet: bool = False
    """The reason line alone (``--quiet``)."""
    verbose: bool = False
    """Every check, not only those that matter (``--verbose``)."""
