"""The investigator: an area's evidence collection and its expert rules, declared together."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from rigaudit.tools.model.finding import Area, Finding, FixKind
from rigaudit.tools.probe import Probe

FactsT = TypeVar("FactsT")


@dataclass(frozen=True)
class CheckDoc:
    """One line of the check catalog (``docs/checks.md``, ``rigaudit checks``): what a check reads,
    when it is a problem, and how it is fixed."""

    title: str
    reads: str
    problem: str
    fix: str
    kinds: tuple[FixKind, ...] = ()
    """The fix kinds its problems carry (empty: never a problem, or described only)."""


@dataclass(frozen=True)
class Investigator(Generic[FactsT]):
    """One area of the check catalog.

    ``collect`` reads evidence through the probe (files before commands) into a facts object;
    ``judge`` is pure: it turns those facts into exactly one finding per check id in ``checks``.
    ``docs`` (optional) describes each check for the catalog.
    """

    area: Area
    title: str
    checks: tuple[str, ...]
    collect: Callable[[Probe], Awaitable[FactsT]]
    judge: Callable[[FactsT], list[Finding]]
    docs: Mapping[str, CheckDoc] = field(default_factory=dict, hash=False, compare=False)

    @property
    def prompt_name(self) -> str:
        return f"{self.area}.md"


AnyInvestigator = Investigator[Any]
