"""The verdict the policy returns for one command."""

from __future__ import annotations

from typing import Literal

from rigaudit.tools.core.record import Record

Decision = Literal["allow", "ask", "deny"]

SEVERITY: dict[Decision, int] = {"deny": 0, "ask": 1, "allow": 2}
"""Rules are tried most severe first: an ``allow`` rule can never mask a ``deny`` or ``ask`` rule."""


class Verdict(Record):
    decision: Decision
    reason: str
    argv: tuple[str, ...] = ()
    rule: str = ""
    """The name of the rule that decided (``unknown-program``/``unrecognized-form`` for the fallbacks)."""
