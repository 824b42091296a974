"""What ``rigaudit diff`` shows, drawn from its event: the sides, what changed, the tables and the verdict.

Every text from the sides is :func:`~rigaudit.tools.core.printable.printable` before rich sees it (rich would drop a BEL
or CR silently; its escape shows the tampering)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from rigaudit.orchestrator.ui.tables import SEVERITY_STYLE, STATUS_STYLE, WIDE
from rigaudit.tools.core.printable import printable
from rigaudit.tools.diffing import ValueChange, fold_changes
from rigaudit.tools.diffing._volatile import process_path
from rigaudit.tools.schema.events.diff import DiffFindingChange, DiffReported, DiffValueChange, DiffVerdict

_KIND_STYLE = {
    "appeared": "bold red",
    "resolved": "green",
    "status": "yellow",
    "severity": "magenta",
    "observed": "cyan",
    "only_a": "dim",
    "only_b": "dim",
}
SHOWN_WARNINGS = 10


def _verdict_cell(finding: DiffVerdict | None) -> Text:
    if finding is None:
        return Text("-", style="dim")
    text = Text("n/a" if finding.status == "not_applicable" else finding.status, style=STATUS_STYLE.get(finding.status, ""))
    if finding.status == "problem" and finding.severity:
        text.append(f" {finding.severity}", style=SEVERITY_STYLE.get(finding.severity, ""))
    return text


def _detail(change: DiffFindingChange) -> str:
    """The title, and what B observed where that is the news (a new or worse problem, another observation)."""
    return printable(_news(change))


def _news(change: DiffFindingChange) -> str:
    before, after = change.a, change.b
    if change.kind == "observed" and before is not None and after is not None:
        if before.observed != after.observed:
            return f"{before.observed} -> {after.observed}"
        return f"subjects: {', '.join(before.subjects) or '-'} -> {', '.join(after.subjects) or '-'}"
    finding = after or before
    title = finding.title if finding else ""
    observed = after.observed if after else ""
    return f"{title}: {observed}" if observed and change.kind in ("appeared", "severity") else title


def findings_diff_table(changes: Sequence[DiffFindingChange], width: int = 200) -> Table:
    """One row per changed check; below 110 columns the verdicts join the detail, which wraps."""
    table = Table(title="Findings that changed", expand=True, title_justify="left")
    table.add_column("change", no_wrap=True, min_width=8)
    table.add_column("check", no_wrap=True, min_width=max((len(c.check) for c in changes), default=5))
    wide = width >= WIDE
    if wide:
        table.add_column("A", no_wrap=True)
        table.add_column("B", no_wrap=True)
    table.add_column("A -> B: detail" if not wide else "detail", ratio=3, overflow="fold", min_width=20)
    for change in changes:
        cells: list[Text | str] = [Text(change.kind, style=_KIND_STYLE[change.kind]), printable(change.check)]
        if wide:
            cells += [_verdict_cell(change.a), _verdict_cell(change.b), _detail(change)]
        else:
            verdicts = _verdict_cell(change.a) + Text(" -> ") + _verdict_cell(change.b)
            cells.append(verdicts + Text(f": {_detail(change)}"))
        table.add_row(*cells)
    return table


def values_diff_table(changes: Sequence[ValueChange], rows: int, title: str) -> Table:
    table = Table(title=title, expand=True, title_justify="left")
    table.add_column("value", ratio=3, overflow="fold", min_width=16)
    table.add_column("change", no_wrap=True, min_width=7)
    table.add_column("detail", ratio=2, overflow="fold")
    for change in changes[:rows]:
        style = "yellow" if change.change == "changed" else "dim"
        table.add_row(printable(change.ref), Text(change.change, style=style), printable(change.detail))
    if len(changes) > rows:
        table.add_row(Text(f"... {len(changes) - rows} more (see --json)", style="dim"), "", "")
    return table


def _value(change: DiffValueChange) -> ValueChange:
    return ValueChange(change.kind, change.ref, change.change, change.detail, change.volatile, change.diff)


def diff_summary(event: DiffReported) -> str:
    """``different: ...`` or ``same: ...`` follows: findings changed by kind, values that differ, volatile ones apart."""
    parts: list[str] = []
    findings = event.findings
    if findings.changes:
        counts = ", ".join(f"{n} {k}" for k, n in findings.counts.items())
        parts.append(f"{len(findings.changes)} findings changed ({counts})")
    else:
        parts.append(f"findings: no change ({findings.unchanged} checks the same)")
    values = event.values
    if values.compared:
        stable = [c for c in values.changes if not c.volatile]
        volatile = [c for c in values.changes if c.volatile]
        if stable:
            vc = {"changed": 0, "only_a": 0, "only_b": 0}
            for change in stable:
                vc[change.change] += 1
            where = f"{vc['changed']} changed, {vc['only_a']} only in A, {vc['only_b']} only in B"
            parts.append(f"{len(stable)} values differ ({where})")
        else:
            parts.append(f"values: no difference in {values.compared_count} compared")
        if volatile:
            processes = sum(1 for c in volatile if process_path(c.ref.split(":", 1)[-1]))
            apart = f", {processes} of them /proc/PID entries of processes" if processes else ""
            parts.append(f"{len(volatile)} volatile values moved (not counted{apart})")
    return "; ".join(parts)


def diff_view(event: DiffReported, width: int) -> list[RenderableType]:
    """The diff as the terminal shows it, top to bottom."""
    a, b = event.a, event.b
    sides = Text.assemble(("A", "bold"), printable(f" {a.kind} {a.path} ({a.host or '?'})   "))
    out: list[RenderableType] = [
        sides.append_text(Text.assemble(("B", "bold"), printable(f" {b.kind} {b.path} ({b.host or '?'})")))
    ]
    if event.headline:
        out.append(Text("What changed: ", style="bold") + Text(printable("; ".join(event.headline))))
    elif event.facts_compared:
        out.append(Text("Same host facts (GPUs, driver, kernel, platform).", style="dim"))
    if event.findings.changes:
        out.append(findings_diff_table(event.findings.changes, width))
    stable = [_value(c) for c in event.values.changes if not c.volatile]
    if event.values.compared and stable and event.rows:
        out.append(values_diff_table(fold_changes(stable), event.rows, "Values read that differ"))
    if event.values.note:
        out.append(Text(printable(event.values.note), style="dim"))
    for warning in event.warnings[:SHOWN_WARNINGS]:
        out.append(Text("warning:", style="yellow") + Text(printable(f" {warning}")))
    verdict = "different: " if event.different else "same: "
    out.append(Text(verdict, style="bold") + Text(printable(diff_summary(event))))
    return out
