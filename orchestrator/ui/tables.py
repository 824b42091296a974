"""Rich renderables for findings, plans and the investigator board."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.table import Table
from rich.text import Text

from rigaudit.tools.action_text import describe
from rigaudit.tools.model.finding import SEVERITY_ORDER, Finding
from rigaudit.tools.model.plan import Plan

STATUS_STYLE = {"problem": "bold red", "ok": "green", "unknown": "yellow", "not_applicable": "dim"}
SEVERITY_STYLE = {"critical": "bold white on red", "high": "bold red", "medium": "yellow", "low": "cyan"}
STATE_STYLE = {
    "waiting": "dim",
    "running": "cyan",
    "done": "green",
    "failed": "bold red",
    "timeout": "bold red",
    "cancelled": "yellow",
}
_STATUS_ORDER = {"problem": 0, "unknown": 1, "ok": 2, "not_applicable": 3}


@dataclass
class BoardRow:
    area: str
    state: str = "waiting"
    reading: str = ""
    reads: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    duration_s: float | None = None
    error: str | None = None


def board_table(rows: Sequence[BoardRow]) -> Table:
    table = Table(title="Investigators", expand=False, show_lines=False)
    for column in ("area", "state", "reads", "problems", "ok", "unknown", "time", "now reading / error"):
        table.add_column(column, overflow="ellipsis", no_wrap=True, max_width=60 if column.startswith("now") else None)
    for row in rows:
        detail = row.error or (row.reading if row.state == "running" else "")
        table.add_row(
            row.area,
            Text(row.state, style=STATE_STYLE.get(row.state, "")),
            str(row.reads),
            Text(str(row.counts.get("problem", "")), style="bold red"),
            str(row.counts.get("ok", "")),
            str(row.counts.get("unknown", "")),
            f"{row.duration_s:.2f}s" if row.duration_s is not None else "",
            detail,
        )
    return table


def findings_table(findings: Sequence[Finding], *, include_ok: bool = True) -> Table:
    table = Table(title="Findings", show_lines=False, expand=True)
    table.add_column("status", no_wrap=True, max_width=9, overflow="ellipsis")
    table.add_column("severity", no_wrap=True)
    table.add_column("check", no_wrap=True)
    table.add_column("finding", ratio=2)
    table.add_column("observed", ratio=3)
    ordered = sorted(findings, key=lambda f: (_STATUS_ORDER[f.status], SEVERITY_ORDER.get(f.severity or "", 9), f.check))
    for finding in ordered:
        if not include_ok and finding.status in ("ok", "not_applicable"):
            continue
        table.add_row(
            Text(finding.status, style=STATUS_STYLE[finding.status]),
            Text(finding.severity or "", style=SEVERITY_STYLE.get(finding.severity or "", "")),
            finding.check,
            finding.title,
            finding.observed,
        )
    return table


def plan_table(plan: Plan) -> Table:
    table = Table(title="Plan", show_lines=True, expand=True)
    table.add_column("#", no_wrap=True)
    table.add_column("prio", no_wrap=True)
    table.add_column("step and change", ratio=4)
    table.add_column("kind", no_wrap=True)
    table.add_column("where", no_wrap=True)
    table.add_column("risk", no_wrap=True)
    for number, step in enumerate(plan.steps, 1):
        cell = Text()
        cell.append(step.id, style="bold")
        cell.append(f": {step.title}")
        for action in step.actions:
            cell.append(f"\n  {describe(action)}", style="dim")
        if step.also_checks:
            cell.append(f"\n  also resolves {', '.join(step.also_checks)}", style="dim")
        table.add_row(
            str(number),
            Text(step.priority, style="bold red" if step.priority == "P0" else "yellow" if step.priority == "P1" else ""),
            cell,
            Text(step.kind, style="green" if step.kind == "runtime" else "magenta"),
            step.where,
            step.risk,
        )
    return table
