"""Compare two audits: what changed across a driver update, or between two nodes that should match.

A and B are each a snapshot directory, an audit JSON (`rigaudit audit --json`), a transcript (JSONL)
or a share bundle (`rigaudit snapshot --share`). Snapshots and bundles are audited now; audit JSONs
and transcripts give the findings they recorded. Findings are matched by check id: appeared,
resolved, status, severity or observed value changed. Between snapshots the values read are
compared too (files, commands, NVML calls); with --values a transcript's snapshot is rebuilt from
its tool calls so that its values are compared as well. Values that move on their own (power,
temperature, free memory, /proc counters) are listed apart and do not count as differences.

Examples:
  rigaudit diff before/ after/                   two snapshots: findings and values read
  rigaudit diff node1.json node2.json            two audit results
  rigaudit diff old.jsonl new/ --values          a transcript against a snapshot, values included
  rigaudit diff a/ b/ --json diff.json           also write rigaudit.diff/1

Exit status: 0 no differences; 1 differences; 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

import anyio
from rich.console import Console
from rich.table import Table
from rich.text import Text

from rigaudit.orchestrator.audit import AuditOptions
from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.diff import Side, load_side
from rigaudit.orchestrator.output import write_json
from rigaudit.orchestrator.ui.safe_console import SafeConsole
from rigaudit.orchestrator.ui.tables import SEVERITY_STYLE, STATUS_STYLE, WIDE
from rigaudit.tools.diffing import (
    FindingChange,
    FindingsDiff,
    ValueChange,
    ValuesDiff,
    diff_document,
    diff_findings,
    diff_snapshots,
    fold_changes,
    headline,
)
from rigaudit.tools.diffing._volatile import process_path
from rigaudit.tools.errors import UsageError
from rigaudit.tools.model.finding import Finding

_KIND_STYLE = {
    "appeared": "bold red",
    "resolved": "green",
    "status": "yellow",
    "severity": "magenta",
    "observed": "cyan",
    "only_a": "dim",
    "only_b": "dim",
}


def _add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", type=Path, metavar="A", help="snapshot dir, audit JSON, transcript or share bundle")
    parser.add_argument("b", type=Path, metavar="B", help="the same kinds; compared with A")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the diff (rigaudit.diff/1); - for stdout")
    parser.add_argument("--values", action="store_true", help="also compare a transcript's values (rebuilds its snapshot)")
    parser.add_argument("--rows", type=int, default=40, metavar="N", help="value changes shown in the table (default 40)")


def _verdict_cell(finding: Finding | None) -> Text:
    if finding is None:
        return Text("-", style="dim")
    text = Text("n/a" if finding.status == "not_applicable" else finding.status, style=STATUS_STYLE.get(finding.status, ""))
    if finding.status == "problem" and finding.severity:
        text.append(f" {finding.severity}", style=SEVERITY_STYLE.get(finding.severity, ""))
    return text


def findings_diff_table(diff: FindingsDiff, width: int = 200) -> Table:
    """One row per changed check; below 110 columns the verdicts join the detail, which wraps."""
    table = Table(title="Findings that changed", expand=True, title_justify="left")
    table.add_column("change", no_wrap=True, min_width=8)
    table.add_column("check", no_wrap=True, min_width=max((len(c.check) for c in diff.changes), default=5))
    wide = width >= WIDE
    if wide:
        table.add_column("A", no_wrap=True)
        table.add_column("B", no_wrap=True)
    table.add_column("A -> B: detail" if not wide else "detail", ratio=3, overflow="fold", min_width=20)
    for change in diff.changes:
        cells: list[Text | str] = [Text(change.kind, style=_KIND_STYLE[change.kind]), change.check]
        if wide:
            cells += [_verdict_cell(change.before), _verdict_cell(change.after), _detail(change)]
        else:
            verdicts = _verdict_cell(change.before) + Text(" -> ") + _verdict_cell(change.after)
            cells.append(verdicts + Text(f": {_detail(change)}"))
        table.add_row(*cells)
    return table


def _detail(change: FindingChange) -> str:
    """The title, and what B observed where that is the news (a new or worse problem, another observation)."""
    before, after = change.before, change.after
    if change.kind == "observed" and before is not None and after is not None:
        if before.observed != after.observed:
            return f"{before.observed} -> {after.observed}"
        return f"subjects: {', '.join(before.subjects) or '-'} -> {', '.join(after.subjects) or '-'}"
    finding = after or before
    title = finding.title if finding else ""
    observed = after.observed if after else ""
    return f"{title}: {observed}" if observed and change.kind in ("appeared", "severity") else title


def values_diff_table(changes: Sequence[ValueChange], rows: int, title: str) -> Table:
    table = Table(title=title, expand=True, title_justify="left")
    table.add_column("value", ratio=3, overflow="fold", min_width=16)
    table.add_column("change", no_wrap=True, min_width=7)
    table.add_column("detail", ratio=2, overflow="fold")
    for change in changes[:rows]:
        style = "yellow" if change.change == "changed" else "dim"
        table.add_row(change.ref, Text(change.change, style=style), change.detail)
    if len(changes) > rows:
        table.add_row(Text(f"... {len(changes) - rows} more (see --json)", style="dim"), "", "")
    return table


def _summary(findings: FindingsDiff, values: ValuesDiff | None) -> str:
    parts: list[str] = []
    counts = findings.counts()
    if counts:
        parts.append(f"{len(findings.changes)} findings changed (" + ", ".join(f"{n} {k}" for k, n in counts.items()) + ")")
    else:
        parts.append(f"findings: no change ({findings.unchanged} checks the same)")
    if values is not None:
        vc = values.counts()
        if values.stable:
            where = f"{vc['changed']} changed, {vc['only_a']} only in A, {vc['only_b']} only in B"
            parts.append(f"{len(values.stable)} values differ ({where})")
        else:
            parts.append(f"values: no difference in {values.compared} compared")
        if vc["volatile"]:
            processes = sum(1 for c in values.volatile if process_path(c.ref.split(":", 1)[-1]))
            apart = f", {processes} of them /proc/PID entries of processes" if processes else ""
            parts.append(f"{vc['volatile']} volatile values moved (not counted{apart})")
    return "; ".join(parts)


async def _load_both(args: argparse.Namespace, scratch: Path) -> tuple[Side, Side]:
    options = AuditOptions()
    (scratch / "a").mkdir()
    (scratch / "b").mkdir()
    a = await load_side(args.a, values=args.values, scratch=scratch / "a", options=options)
    b = await load_side(args.b, values=args.values, scratch=scratch / "b", options=options)
    return a, b


def _values(a: Side, b: Side) -> tuple[ValuesDiff | None, str]:
    if a.snapshot is None or b.snapshot is None:
        lacking = [s for s in (a, b) if s.snapshot is None]
        hint = " (add --values)" if any(s.kind == "transcript" for s in lacking) else ""
        what = ", ".join(f"{s.path} is {'an' if s.kind == 'audit' else 'a'} {s.kind}" for s in lacking)
        return None, f"values not compared: {what}{hint}"
    return diff_snapshots(a.snapshot, b.snapshot), ""


def _run(args: argparse.Namespace) -> int:
    if args.rows < 0:
        raise UsageError("--rows must be 0 or more")
    json_to_stdout = args.json is not None and str(args.json) == "-"
    console: Console = SafeConsole(stderr=json_to_stdout)
    with tempfile.TemporaryDirectory(prefix="rigaudit-diff-") as tmp:
        a, b = anyio.run(_load_both, args, Path(tmp))
        findings = diff_findings(a.findings, b.findings)
        values, note = _values(a, b)
    warnings = [*a.warnings, *b.warnings]
    changed_facts = headline(a.facts, b.facts, a.findings, b.findings)
    document = diff_document(a.info, b.info, findings, values, values_note=note, warnings=warnings, headline=changed_facts)
    console.print(f"[bold]A[/bold] {a.kind} {a.path} ({a.host or '?'})   [bold]B[/bold] {b.kind} {b.path} ({b.host or '?'})")
    if changed_facts:
        console.print(Text("What changed: ", style="bold") + Text("; ".join(changed_facts)))
    elif a.facts and b.facts:
        console.print(Text("Same host facts (GPUs, driver, kernel, platform).", style="dim"))
    if findings.changes:
        console.print(findings_diff_table(findings, console.width))
    if values is not None and values.stable and args.rows:
        console.print(values_diff_table(fold_changes(values.stable), args.rows, "Values read that differ"))
    if note:
        console.print(f"[dim]{note}[/dim]")
    for warning in warnings[:10]:
        console.print(f"[yellow]warning:[/yellow] {warning}")
    different = bool(document["different"])
    console.print(("[bold]different:[/bold] " if different else "[bold]same:[/bold] ") + _summary(findings, values))
    if args.json is not None:
        write_json(args.json, json.dumps(document, indent=2, ensure_ascii=False))
    return 1 if different else 0


__all__ = ["COMMAND", "findings_diff_table", "values_diff_table"]

COMMAND = Command("diff", "compare two snapshots, audit results or transcripts", _add, _run, __doc__ or "")
