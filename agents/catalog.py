"""The check catalog: every check the audit runs, with what it reads, when it is a problem and how it is fixed.

Derived from the investigators' check declarations (:class:`~rigaudit.agents.check.Check`), in registry order.
``docs/checks.md`` is :func:`render_markdown` of it, and ``rigaudit checks`` prints it.
"""

from __future__ import annotations

from collections.abc import Sequence

from rigaudit.agents.check import Check
from rigaudit.agents.investigator import AnyInvestigator
from rigaudit.agents.registry import all_investigators

HOW_TO_ADD = (
    "To add a check, declare it once (a `Check` next to its rule in `agents/investigators/<area>/`), add it to its "
    "investigator's `checks` and its rule to `judge`, write its tests, then regenerate this file."
)


def catalog(investigators: Sequence[AnyInvestigator] | None = None) -> list[Check]:
    """Every check, in registry order."""
    return [check for inv in (investigators if investigators is not None else all_investigators()) for check in inv.checks]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(checks: Sequence[Check]) -> str:
    """``docs/checks.md``: one table per area, in catalog order."""
    areas: dict[str, list[Check]] = {}
    for check in checks:
        areas.setdefault(check.area, []).append(check)
    lines = [
        "# Check catalog",
        "",
        "Generated from the code by `rigaudit checks --markdown > docs/checks.md`; do not edit by hand.",
        f"{len(checks)} checks in {len(areas)} areas. Each check ends in `ok`, `problem` (with a severity and a fix), "
        "`unknown` (with the reason) or `not_applicable`.",
        "",
        HOW_TO_ADD,
        "",
    ]
    for area, rows in areas.items():
        lines += [
            f"## {area}",
            "",
            "| id | title | reads | problem when | fix | fix kind |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for check in rows:
            kinds = ", ".join(f"`{k}`" for k in check.kinds) or "—"
            cells = (check.title, check.reads, check.problem, check.fix)
            lines.append(f"| `{check.id}` | " + " | ".join(_cell(c) for c in cells) + f" | {kinds} |")
        lines.append("")
    return "\n".join(lines)
