"""``--areas A,B``, read as the audit and the fleet read it: the areas named, a note for an old name."""

from __future__ import annotations

import sys

from rigaudit.agents.registry import area_names, resolve_areas
from rigaudit.tools.core.errors import UsageError


def areas(text: str | None) -> list[str] | None:
    """The areas ``--areas`` names, in its order (``None``: every one); a note on stderr for each renamed one."""
    if not text:
        return None
    chosen, notes, unknown = resolve_areas(text)
    if unknown:
        raise UsageError(f"unknown area(s) {', '.join(unknown)}; choose from {', '.join(area_names())}")
    for note in notes:
        print(f"rigaudit: note: {note}", file=sys.stderr)
    return chosen or None


__all__ = ["areas"]
