"""The investigator: an area's evidence collection and its expert rules, declared together."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tools.model.finding import Area, Finding
from tools.probe import Probe

FactsT = TypeVar("FactsT")


@dataclass(frozen=True)
class Investigator(Generic[FactsT]):
    """One area of the check catalog.

    ``collect`` reads evidence through the probe (files before commands) into a facts object;
    ``judge`` is pure: it turns those facts into exactly one finding per check id in ``checks``.
    """

    area: Area
    title: str
    checks: tuple[str, ...]
    collect: Callable[[Probe], Awaitable[FactsT]]
    judge: Callable[[FactsT], list[Finding]]

    @property
    def prompt_name(self) -> str:
        return f"{self.area}.md"


AnyInvestigator = Investigator[Any]
