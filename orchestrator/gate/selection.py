"""``--only`` and ``--skip``: which checks the gate judges, named by check id or by area.

An investigator judges every check of its area, so the gate runs the areas that hold a selected
check and reports the selected checks alone. Areas renamed since 0.1 (``nccl_p2p``) name their
successors; a name that is neither an area nor a check is a usage error that lists what exists.
"""

from __future__ import annotations

from collections.abc import Sequence

from rigaudit.agents.check import Check
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.record import Record
from rigaudit.tools.schema.finding import RENAMED_AREAS


class Selection(Record):
    """The checks to judge, in catalog order, and the areas whose investigators must run for them."""

    checks: tuple[Check, ...]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.checks)

    @property
    def areas(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.area for c in self.checks))


def _names(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()]


def _matching(name: str, checks: Sequence[Check]) -> list[Check]:
    areas = RENAMED_AREAS.get(name, (name,))
    return [c for c in checks if c.id == name or c.area in areas]


def _resolve(option: str, text: str | None, checks: Sequence[Check]) -> set[str]:
    chosen: set[str] = set()
    unknown: list[str] = []
    for name in _names(text):
        found = _matching(name, checks)
        if not found:
            unknown.append(name)
        chosen.update(c.id for c in found)
    if unknown:
        if any(n == "expect" or n.startswith("expect.") for n in unknown):
            raise UsageError(f"{option}: the expect checks need --expect FILE (the fleet's expected values)")
        areas = ", ".join(dict.fromkeys(c.area for c in checks))
        raise UsageError(
            f"{option}: no check or area named {', '.join(unknown)} (areas: {areas}; `rigaudit checks` lists the check ids)"
        )
    return chosen


def select(checks: Sequence[Check], only: str | None = None, skip: str | None = None) -> Selection:
    """The checks named by ``only`` (all when empty) less those named by ``skip``; comma-separated ids or areas."""
    if only is not None and not _names(only):
        raise UsageError("--only needs check ids or areas, e.g. --only pcie,gpu.xid")
    wanted = _resolve("--only", only, checks) if only else {c.id for c in checks}
    wanted -= _resolve("--skip", skip, checks)
    if not wanted:
        raise UsageError("--only/--skip leave no check to judge")
    return Selection(tuple(c for c in checks if c.id in wanted))


__all__ = ["Selection", "select"]
