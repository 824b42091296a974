"""The default policy (loaded, and its examples checked, on first import) and its two entry points."""

from __future__ import annotations

from collections.abc import Sequence

from rigaudit.tools.policy.engine import Policy
from rigaudit.tools.policy.rules import RULES
from rigaudit.tools.policy.verdict import Verdict

POLICY = Policy(RULES)


def judge_argv(argv: Sequence[str]) -> Verdict:
    """Judge a command given as argv (no shell parsing): what rule code and investigators call."""
    return POLICY.judge_argv(argv)


def judge_command_line(line: str) -> Verdict:
    """Judge a command line as an LLM writes it: parsed without a shell, never run through one."""
    return POLICY.judge_line(line)
