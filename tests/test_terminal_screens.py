"""The screens shipped in docs/terminal/ are what ``rigaudit audit --demo seed`` shows today (issue 34: a stale
screen said 66 checks): each is ``benchmarks/terminal_screenshot.py``'s output, but for the run's timing and the
demo's unpacked path."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import terminal_screenshot


def _comparable(text: str) -> list[str]:
    """The screen from the verdict's first line on (the session line above it wraps the demo's unpacked path, which
    differs from machine to machine), with the audit's duration left out."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("pve-gpu01 ("))
    return [re.sub(r" in \d+(\.\d+)? s$", " in N s", line) for line in lines[start:]]


@pytest.mark.parametrize("width", [80, 120])
def test_the_shipped_screen_is_todays_audit(width: int) -> None:
    shipped = (terminal_screenshot.DOCS / f"seed-audit-{width}.txt").read_text(encoding="utf-8")
    assert _comparable(shipped) == _comparable(terminal_screenshot.screen(width)), (
        f"docs/terminal/seed-audit-{width}.txt is stale: run python benchmarks/terminal_screenshot.py"
    )
