"""The check catalog: every check the audit runs, with what it reads, when it is a problem and how it is fixed.

Derived from the investigators' check declarations (:class:`~rigaudit.agents.check.Check`), in registry order.
``docs/checks.md`` is :func:`render_markdown` of it, and ``rigaudit checks`` prints it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rigaudit.agents.check import Check
from rigaudit.agents.investigator import AnyInvestigator
from rigaudit.agents.premise import PREMISES
from rigaudit.agents.registry import all_investigators

HOW_TO_ADD = (
    "To add a check, declare it once (a `Check` next to its rule in `agents/investigators/<area>/`, with the premises "
    "from its area's `premises.py` its verdict rests on), add it to its "
    "investigator's `checks` and its rule to `judge`, write its tests, then regenerate this file."
)


PREMISES_TEXT = (
    "A check's premises are the facts its verdict rests on (named in `agents/premise.py`, read by each area's "
    "`premises.py`): where one is not read, the verdict is `unknown` with what would tell, never `ok` (nor a problem "
    "resting on it); `none`: the verdict rests only on what the check reads. `rigaudit audit --explain CHECK` shows a "
    "verdict with each of its premises, held or missing, and its evidence."
)
PREMISE_LIST = [f"- `{name}`: {text}" for name, text in PREMISES.items()]
WORKLOAD_TEXT = (
    "Workload checks judge what runs on the node rather than the node (a server's image and packages, its environment "
    "and limits, its container's options, the processes on its GPUs): `rigaudit check` lists their problems and never "
    "drains a node for them, unless a finding places its cause on the node (a host `/etc/nccl.conf`, the device "
    'plugin\'s MPS daemon, GPU memory no job owns; docs/fleet.md, "Whose fault"). They are '
)


def catalog(investigators: Sequence[AnyInvestigator] | None = None) -> list[Check]:
    """Every check, in registry order."""
    return [check for inv in (investigators if investigators is not None else all_investigators()) for check in inv.checks]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(checks: Sequence[Check]) -> str:
    """``docs/checks.md``: one table per area, in catalog order."""
    return render_entries([c.as_dict() for c in checks])


def _premises_cell(premises: object) -> str:
    names = [str(p["name"]) for p in premises if isinstance(p, Mapping)] if isinstance(premises, list) else []
    return ", ".join(f"`{n}`" for n in names) or "none"


def render_entries(entries: Sequence[Mapping[str, object]]) -> str:
    """``docs/checks.md`` from the catalog's JSON entries (:meth:`Check.as_dict`, ``rigaudit checks --json``)."""
    areas: dict[str, list[Mapping[str, object]]] = {}
    for entry in entries:
        areas.setdefault(str(entry["area"]), []).append(entry)
    lines = [
        "# Check catalog",
        "",
        "Generated from the code by `rigaudit checks --markdown > docs/checks.md`; do not edit by hand.",
        f"{len(entries)} checks in {len(areas)} areas. Each check ends in `ok`, `problem` (with a severity and a fix), "
        "`unknown` (with the reason) or `not_applicable`.",
        "",
        PREMISES_TEXT,
        "",
        *PREMISE_LIST,
        "",
        WORKLOAD_TEXT + (", ".join(f"`{e['check']}`" for e in entries if e.get("layer") == "workload") or "none") + ".",
        "",
        HOW_TO_ADD,
        "",
    ]
    for area, rows in areas.items():
        lines += [
            f"## {area}",
            "",
            "| id | title | reads | problem when | fix | fix kind | premises |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for entry in rows:
            fix_kinds = entry.get("fix_kinds")
            kinds = ", ".join(f"`{k}`" for k in (fix_kinds if isinstance(fix_kinds, list) else ())) or "—"
            cells = (str(entry["title"]), str(entry["reads"]), str(entry["problem"]), str(entry["fix"]))
            premises = _premises_cell(entry.get("premises"))
            lines.append(f"| `{entry['check']}` | " + " | ".join(_cell(c) for c in cells) + f" | {kinds} | {premises} |")
        lines.append("")
    return "\n".join(lines)
