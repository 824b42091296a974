"""Text read from a host reaches the findings table literally: Rich markup in it is never rendered."""

from __future__ import annotations

import io

from rich.console import Console

from rigaudit.orchestrator.ui.tables import findings_table
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
