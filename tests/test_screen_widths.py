"""The seed audit's screen at 40, 60, 80 and 200 columns: every line fits, no column is crushed, no check id or
word is broken across lines; below a table's width its rows are blocks of ``label: value`` lines."""

from __future__ import annotations

import functools
import re

import pytest
from rich.text import Text

from rigaudit.orchestrator.ui.audit_view import audit_view
from rigaudit.orchestrator.ui.tables import plan_table
from rigaudit.orchestrator.ui.wrap import pieces, wrap
from tests.test_board_width import render, seed_result

WIDTHS = (40, 60, 80, 200)
UNBOUNDED = 1000
"""Wide enough that nothing wraps: what every narrower screen must still say, word for word."""


def _ids() -> set[str]:
    result = seed_result()
    ids = {f.check for f in result.findings}
    for step in result.plan.steps:
        ids |= {step.id, *step.also_checks, *(e.step for e in step.edges)}
    return ids


def _count(text: str, check: str) -> int:
    return len(re.findall(rf"(?<![\w.]){re.escape(check)}(?!\w)", text))


@pytest.mark.parametrize("width", WIDTHS)
def test_every_line_fits_and_no_column_is_crushed(width: int) -> None:
    text = render(audit_view(seed_result(), width=width), width)
    assert max(len(line) for line in text.splitlines()) <= width
    assert not re.search(r"[┃│┳┼╇┴┯┿╋]{2}", text), text  # a column of zero width: two borders side by side
    table = [line for line in text.splitlines() if line and line[0] in "┏┃┡│├└"]
    assert all(line.rstrip()[-1] in "┓┃┩│┤┘" for line in table), text  # the right border is there


@functools.cache
def _unbounded() -> tuple[dict[str, int], str]:
    """How often the unbounded screen (every finding) names each check id, and the plan's table there: what each
    width's test compares with (the same for every width)."""
    whole = render(audit_view(seed_result(), width=UNBOUNDED, show_all=True), UNBOUNDED)
    return {check: _count(whole, check) for check in _ids()}, render(plan_table(seed_result().plan), UNBOUNDED)


@pytest.mark.parametrize("width", WIDTHS)
def test_no_check_id_is_split_across_lines(width: int) -> None:
    text = render(audit_view(seed_result(), width=width, show_all=True), width)
    for check, times in _unbounded()[0].items():
        assert _count(text, check) == times > 0, (check, text)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_plan_keeps_every_word_it_says(width: int) -> None:
    plan = seed_result().plan
    headers = {"#", "prio", "step", "and", "change", "kind", "where", "risk"}

    def words(text: str) -> set[str]:  # a long path may break after a "/": its pieces are its words
        return {p for word in re.findall(r"[^\s│┃]*\w[^\s│┃]*", text) for p in pieces(word)} - headers

    text = render(plan_table(plan), width)
    assert words(_unbounded()[1]) - words(text) == set(), text


def test_below_its_width_a_table_is_blocks_of_labelled_lines() -> None:
    text = render(audit_view(seed_result(), width=40), 40)
    assert "│" not in text and "┃" not in text
    assert "step: 4 · prio: P1 · kind: runtime" in text
    assert "change: power.cstates: Disable idle" in text
    assert "verdict: medium · check: numa.balancing" in text
    assert "/sys/devices/system/cpu/cpu*/\n    cpuidle/state2/disable" in text  # a long path breaks after a /


def test_wrap_breaks_at_spaces_and_after_a_slash_only() -> None:
    line = "  write '1' to 128 file(s): /sys/devices/system/cpu/cpu*/cpuidle/state2/disable, runtime.cuda_driver_compat"
    for width in (30, 40, 80):
        out = wrap(Text(line), width).plain.split("\n")
        assert all(len(part) <= width for part in out), out
        assert "".join(p.strip() for p in out).replace(" ", "") == line.replace(" ", "")
        assert all(p.strip().endswith(("/", ",", ":")) or p.strip() in line.split() or " " in p.strip() for p in out)
    assert wrap(Text("abc def"), 80).plain == "abc def"
    assert wrap(Text("one two three"), 7).plain == "one two\n  three"
