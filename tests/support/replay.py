"""A command run live, then its transcript replayed: the two screens, to compare (tests/test_replay_screens.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main

NOT_EVENTS = ("replaying ", "transcript: ")
"""Lines that are no event: the replay's own header and the audit's footer naming its transcript."""


def screen(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines() if not line.startswith(NOT_EVENTS)]


def live_then_replayed(
    capsys: pytest.CaptureFixture[str], run: Callable[[], int], transcript: Path
) -> tuple[list[str], list[str]]:
    """What ``run`` drew (plain lines), then what ``rigaudit replay TRANSCRIPT --no-live`` draws."""
    capsys.readouterr()
    code = run()
    live = capsys.readouterr()
    assert code in (0, 1, 3), live.err
    assert main(["replay", str(transcript), "--no-live"]) == 0
    replayed = capsys.readouterr()
    assert replayed.err == ""
    return screen(live.out), screen(replayed.out)


def same(live: list[str], replayed: list[str], *, expect: str) -> None:
    """The live run drew something real (``expect`` in it), and the replay drew it line for line."""
    assert len(live) > 3 and any(expect in line for line in live), live
    assert replayed == live
