"""All investigators, discovered: every sub-package of ``agents/investigators/`` is an area.

An area package exposes ``INVESTIGATOR`` (its :class:`~rigaudit.agents.investigator.Investigator`, whose area is
the package's name) and ``ORDER`` (an int: where it stands in the catalog). A new area is a new package; nothing
else lists the areas.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from rigaudit.agents import investigators as _package
from rigaudit.agents.investigator import AnyInvestigator, Investigator
from rigaudit.tools.core.errors import OperationError
from rigaudit.tools.schema.finding import RENAMED_AREAS


class RegistryError(OperationError):
    """An area package that does not declare itself as the registry expects (a bug of rigaudit, not of the host)."""


@cache
def all_investigators() -> tuple[AnyInvestigator, ...]:
    """Every investigator, in catalog order (``ORDER``, then the area's name)."""
    found: list[tuple[int, str, AnyInvestigator]] = []
    for info in pkgutil.iter_modules(_package.__path__):
        if not info.ispkg or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{_package.__name__}.{info.name}")
        investigator = getattr(module, "INVESTIGATOR", None)
        order = getattr(module, "ORDER", None)
        if not isinstance(investigator, Investigator) or not isinstance(order, int):
            raise RegistryError(f"{module.__name__} must define INVESTIGATOR (an Investigator) and ORDER (an int)")
        if investigator.area != info.name:
            raise RegistryError(f"{module.__name__}: its investigator's area is {investigator.area!r}, not {info.name!r}")
        found.append((order, info.name, investigator))
    return tuple(inv for _, _, inv in sorted(found, key=lambda item: item[:2]))


def area_names() -> tuple[str, ...]:
    """Every area, in catalog order."""
    return tuple(inv.area for inv in all_investigators())


def is_area(name: str) -> bool:
    return name in area_names()


def resolve_areas(text: str) -> tuple[list[str], list[str], list[str]]:
    """``--areas A,B`` -> (current areas, in the order given, without repeats; notes on renamed ones; unknown names)."""
    areas: dict[str, None] = {}
    notes: list[str] = []
    unknown: list[str] = []
    for name in (a.strip() for a in text.split(",")):
        if not name:
            continue
        if is_area(name):
            areas[name] = None
        elif name in RENAMED_AREAS:
            now = RENAMED_AREAS[name]
            areas.update(dict.fromkeys(now))
            notes.append(f"area {name} is now called {' and '.join(now)}; running {', '.join(now)}")
        else:
            unknown.append(name)
    return list(areas), notes, unknown


def select(areas: list[str] | None) -> list[AnyInvestigator]:
    """The investigators of ``areas`` (all when none), in catalog order; an older area name selects its successors."""
    if not areas:
        return list(all_investigators())
    wanted = {now for area in areas for now in RENAMED_AREAS.get(area, (area,))}
    return [inv for inv in all_investigators() if inv.area in wanted]
