"""The approval prompt of ``rigaudit apply`` at a real (pseudo) terminal of 40, 60, 80 and 200 columns: every line,
the typed answer included, fits the terminal, so it never breaks one mid-word; the question reads whole."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rigaudit.orchestrator.change.timed_prompt import APPROVAL_TIMEOUT_S
from tests.support.apply import mini_seed, seed_plan
from tests.support.tty import CTRL_D, spawn

pytestmark = pytest.mark.slow


def _said(text: str) -> str:
    """``text`` as words, where a line may have ended at a space or after a ``/`` of a long path."""
    return re.sub(r"(?<=/) ", "", " ".join(text.split()))


@pytest.mark.parametrize("cols", [40, 60, 80, 200])
def test_the_approval_prompt_wraps_at_spaces_only(tmp_path: Path, cols: int) -> None:
    mini = mini_seed(tmp_path / "mini")
    plan = tmp_path / "plan.json"
    plan.write_text(seed_plan().model_dump_json())
    copy = tmp_path / "copy"
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    args = ["apply", "--snapshot", str(mini), "--into", str(copy), "--plan", str(plan), "--journal", str(tmp_path / "j")]
    tty = spawn([*args, "--no-transcript", "--report", str(tmp_path / "r.md")], env=env, cols=cols)
    question = f"Apply numa.balancing? yes/no/all/details/quit (no; no answer within {APPROVAL_TIMEOUT_S:g} s: no)"
    at = tty.expect("s: no)")
    tty.send("details\n")  # the longest answer, echoed after the question
    at = tty.expect("Apply numa.balancing?", after=at)
    tty.expect("s: no)", after=at)
    tty.send(CTRL_D)
    assert tty.wait() == 3
    screen = tty.text
    too_long = [line for line in screen.split("\n") if len(line) > cols]
    assert not too_long, screen
    start = screen.index("Apply numa.balancing?")
    shown = screen[start : screen.index("s: no)", start) + len("s: no)")]
    assert " ".join(shown.split()) == question, shown
    where = f"where: the snapshot copy {copy} (of pve-gpu01) · kind runtime · risk low"
    assert _said(where) in _said(screen), screen
    assert "command: sysctl -w kernel.numa_balancing=0" in _said(screen)  # the details, wrapped too
