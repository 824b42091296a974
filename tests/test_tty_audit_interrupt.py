"""Ctrl-C during an audit at a real (pseudo) terminal, its live board showing: the run stops (exit 130), says it is
not a pass, and states nothing of the facts it never read (issue 34: "No NVIDIA GPU", "No problem", "Plan: nothing
to change" around the banner)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import SEED
from tests.support.tty import CTRL_C, spawn

NEVER_SAID = ("No NVIDIA GPU", "No problem and nothing unknown", "Plan: nothing to change.", "What to expect", "Traceback")
"""What only a finished audit may say (what is said of the checks that finished says so)."""


def test_ctrl_c_with_the_live_board_gives_no_verdict(tmp_path: Path) -> None:
    report = tmp_path / "system-improve.md"
    args = ["audit", "--snapshot", str(SEED), "--replay-latency-ms", "50", "--no-transcript", "--report", str(report)]
    tty = spawn(args, env={"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}, cols=100)
    tty.expect(" done ")  # the board shows real progress: an investigator finished, others still reading
    tty.send(CTRL_C)
    assert tty.wait() == 130, tty.text
    screen = " ".join(tty.text.split())  # a phrase wrapped across lines still reads as one
    assert "not a pass" in screen, screen[-3000:]
    assert not [said for said in NEVER_SAID if said in screen], screen[-3000:]
    written = " ".join(report.read_text().split())
    assert "This is not a pass" in written and not [said for said in NEVER_SAID if said in written]
