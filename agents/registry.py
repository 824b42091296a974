"""All investigators, in catalog order."""

from __future__ import annotations

import importlib
from typing import get_args

from rigaudit.agents.investigator import AnyInvestigator
from rigaudit.tools.model.finding import Area

AREA_MODULES: tuple[str, ...] = get_args(Area)
"""Every area, in catalog order: the investigator modules under ``agents/investigators/``."""


def all_investigators() -> list[AnyInvestigator]:
    """Every investigator whose module exists (each module exposes ``INVESTIGATOR``)."""
    found: list[AnyInvestigator] = []
    for name in AREA_MODULES:
        qualified = f"rigaudit.agents.investigators.{name}"
        try:
            module = importlib.import_module(qualified)
        except ModuleNotFoundError as exc:
            if exc.name == qualified:
                continue
            raise
        found.append(module.INVESTIGATOR)
    return found


def select(areas: list[str] | None) -> list[AnyInvestigator]:
    investigators = all_investigators()
    if not areas:
        return investigators
    wanted = set(areas)
    return [inv for inv in investigators if inv.area in wanted]
