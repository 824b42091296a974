"""Rich renderables for findings, plans and the investigator board.

Numbers, check ids and states never wrap or shrink; the free-text columns take what is left and wrap
at spaces (a long path after a ``/``). Below :data:`WIDE` columns the findings table drops its title
column first (the check id names the finding); below the width a table needs, findings and plan are
blocks of ``label: value`` lines (:mod:`~rigaudit.orchestrator.ui.fitted`).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from rigaudit.orchestrator.ui.fitted import Column, FittedTable
from rigaudit.tools.actions.text import describe
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.schema.finding import SEVERITY_ORDER, Finding
from rigaudit.tools.schema.plan import STEP_EDGE_TEXT, Plan, PlanStep

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
STATUS_ORDER = {"problem": 0, "unknown": 1, "ok": 2, "not_applicable": 3}
WIDE = 110
"""From this width on, the findings table also shows each finding's title."""


class BoardRow(Record, frozen=False):
    area: str
    state: str = "waiting"
    reading: str = ""
    reads: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    duration_s: float | None = None
    error: str | None = None


def _fixed(table: Table, header: str, *, right: bool = False, width: int = 0) -> None:
    """A column that never wraps nor shrinks below its header (or ``width``)."""
    table.add_column(header, no_wrap=True, min_width=max(len(header), width), justify="right" if right else "left")


def board_table(rows: Sequence[BoardRow], width: int = 200) -> Table:
    """The live board: one row per investigator. Its numbers and states keep their width; the
    reading/error column takes what is left of ``width`` columns, and goes first when nothing is."""
    cells = [
        [
            row.area,
            row.state,
            str(row.reads),
            str(row.counts.get("problem", "")),
            str(row.counts.get("ok", "")),
            str(row.counts.get("unknown", "")),
            f"{row.duration_s:.2f}s" if row.duration_s is not None else "",
        ]
        for row in rows
    ]
    headers = ("area", "state", "reads", "problems", "ok", "unknown", "time")
    least = (4, len("cancelled"), 5, 0, 3, 0, len("60.00s"))
    widths = [max([len(h), least[i], *(len(c[i]) for c in cells)]) for i, h in enumerate(headers)]
    left = width - sum(widths) - 3 * (len(headers) + 1) - 1  # per column: padding each side and a border
    table = Table(title="Investigators", expand=False, show_lines=False)
    for header, size in zip(headers, widths, strict=True):
        table.add_column(header, no_wrap=True, min_width=size, justify="left" if header in ("area", "state") else "right")
    if left >= 8:
        table.add_column("now reading / error", overflow="ellipsis", no_wrap=True, max_width=min(60, left))
    for row, text in zip(rows, cells, strict=True):
        detail = row.error or (row.reading if row.state == "running" else "")
        line: list[Text | str] = [
            text[0],
            Text(text[1], style=STATE_STYLE.get(row.state, "")),
            text[2],
            Text(text[3], style="bold red"),
            *text[4:],
        ]
        if left >= 8:
            line.append(Text(detail, style="bold red" if row.error else "dim"))
        table.add_row(*line)
    return table


def ordered(findings: Sequence[Finding]) -> list[Finding]:
    """Problems first (worst first), then unknowns, ok, not applicable; by check id within each."""
    return sorted(findings, key=lambda f: (STATUS_ORDER[f.status], SEVERITY_ORDER.get(f.severity or "", 9), f.check))


def _verdict(finding: Finding) -> Text:
    """``high`` (a problem, by its severity), ``unknown``, ``ok``, ``n/a``: one short word."""
    if finding.status == "problem":
        severity = finding.severity or "problem"
        return Text(severity, style=SEVERITY_STYLE.get(severity, "bold red"))
    word = "n/a" if finding.status == "not_applicable" else finding.status
    return Text(word, style=STATUS_STYLE[finding.status])


LLM_MARK = " (LLM)"
"""After the check id of a model's finding (``source: "llm"``), in the terminal and the report."""


def check_label(finding: Finding) -> str:
    """The check id, marked when a model (not a rule) wrote the finding."""
    return finding.check + (LLM_MARK if finding.source == "llm" else "")


def findings_table(findings: Sequence[Finding], *, width: int, title: str = "Findings") -> FittedTable:
    """``findings`` as they are given (see :func:`ordered`); the title column only from :data:`WIDE` columns."""
    wide = width >= WIDE
    columns = [Column(header="verdict", min_width=8), Column(header="check")]
    if wide:
        columns.append(Column(header="finding", free=True, ratio=2))
    columns.append(Column(header="observed", free=True, ratio=3, min_width=20))
    rows: list[list[Text]] = []
    for finding in findings:
        cells = [_verdict(finding), Text(check_label(finding))]
        if wide:
            cells.append(Text(finding.title))  # read from a host: literal, never Rich markup
        cells.append(Text(finding.observed))
        rows.append(cells)
    return FittedTable(title, columns, rows)


def _step_cell(step: PlanStep) -> Text:
    """A step's id and change, its exact actions, what it decides, buys and waits for."""
    cell = Text()
    cell.append(step.id, style="bold")
    if step.source == "llm":
        cell.append(f"{LLM_MARK}: the model's suggestion, never applied: ", style="magenta")
        cell.append(step.title)
    else:
        cell.append(f": {step.title}")
    for action in step.actions:
        cell.append(f"\n  {describe(action)}", style="dim")
    if step.also_checks:
        verb = "decides" if step.kind == "measure" else "also resolves"
        cell.append(f"\n  {verb} {', '.join(step.also_checks)}", style="dim")
    if step.gain is not None:
        bought = "fixes failures" if step.gain.of == "stability" else f"{step.gain.low:g}-{step.gain.high:g}%"
        cell.append(f"\n  buys {bought}", style="cyan")
    waits = [f"{STEP_EDGE_TEXT[e.kind]} {e.step}" for e in step.edges]
    if waits:
        cell.append(f"\n  order: {'; '.join(waits)}", style="yellow")
    if step.blocked:
        cell.append(f"\n  {step.blocked}", style="bold red")
    return cell


def plan_table(plan: Plan) -> FittedTable:
    """One row per step: its change and exact actions (wrapped at spaces, a long path broken after a ``/``)."""
    columns = [
        Column(header="#", justify="right", label="step"),
        Column(header="prio"),
        Column(header="step and change", free=True, min_width=24, label="change"),
        Column(header="kind"),
        Column(header="where"),
        Column(header="risk"),
    ]
    rows = [
        [
            Text(str(number)),
            Text(step.priority, style="bold red" if step.priority == "P0" else "yellow" if step.priority == "P1" else ""),
            _step_cell(step),
            Text(step.kind, style="green" if step.kind == "runtime" else "magenta"),
            Text(step.where),
            Text(step.risk),
        ]
        for number, step in enumerate(plan.steps, 1)
    ]
    return FittedTable("Plan", columns, rows, show_lines=True)
