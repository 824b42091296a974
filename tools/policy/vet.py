"""The default policy and its two entry points.

Loading it checks every rule's shape and nothing more: a program's patterns are compiled when a
command of it is first vetted, and the rules' examples are vetted by the tests
(``tests/test_policy_rules.py``), not at every start (``rigaudit check`` starts as a prolog).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from rigaudit.tools.policy.engine import Policy
from rigaudit.tools.policy.fsview import LEXICAL, LIVE, FileSystem
from rigaudit.tools.policy.rules import RULES
from rigaudit.tools.policy.verdict import Verdict

POLICY = Policy(RULES, check_examples=False, lazy=True)


def vet_argv(argv: Sequence[str], fs: FileSystem | None = None) -> Verdict:
    """Judge a command given as argv (no shell parsing): what rule code and investigators call."""
    return POLICY.vet_argv(argv, fs)


def vet_command_line(line: str, fs: FileSystem | None = None) -> Verdict:
    """Judge a command line as an LLM writes it: parsed without a shell, never run through one."""
    return POLICY.vet_line(line, fs)


class _Named(Protocol):
    @property
    def source(self) -> str: ...


def filesystem_for(host: _Named) -> FileSystem:
    """Where a host's paths are resolved: this machine for ``LocalHost``; the lexical view for a snapshot or a node.

    A snapshot runs nothing; a remote node runs only the investigators' fixed commands (the agents'
    shell is local), so a lexical vetting there names no file the node would resolve differently.
    """
    return LIVE if host.source == "local" else LEXICAL
