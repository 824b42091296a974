"""Text read from a host, or quoted in an error, reaches the screen literally: Rich markup in it is never rendered."""

from __future__ import annotations

import io

from rich.console import Console

from rigaudit.orchestrator.ui.tables import findings_table
from rigaudit.orchestrator.ui.terminal import TerminalUI
from rigaudit.tools.schema.events.audit import InvestigatorFinished
from rigaudit.tools.schema.finding import Finding


def test_markup_in_title_and_observed_is_literal() -> None:
    finding = Finding(
        check="gpu.count",
        area="gpu",
        status="unknown",
        title="[red]title[/red]",
        observed="model [bold]x[/bold] seen",
    )
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(findings_table([finding], width=200))
    text = out.getvalue()
    assert "[red]title[/red]" in text
    assert "[bold]x[/bold]" in text


def test_an_investigators_error_reaches_its_line_literally() -> None:
    error = "LLM: findings.0.[link=http://evil.example]click here[/link]: Extra inputs are not permitted"
    out = io.StringIO()
    ui = TerminalUI(Console(file=out, width=400, color_system=None), live=False)
    ui(InvestigatorFinished(area="kernel", status="done", duration_s=0.1, error=error, counts={"ok": 5}))
    assert out.getvalue() == f"  kernel          done       0.10s  5 ok: {error}\n"
