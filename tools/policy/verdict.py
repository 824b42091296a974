"""The verdict the policy returns for one command."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Decision = Literal["allow", "ask", "deny"]


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    reason: str
    argv: tuple[str, ...] = ()
