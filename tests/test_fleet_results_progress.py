"""``audit --results DIR`` over many files shows its progress: Progress events while it reads the files and
writes each node's, told a bounded number of times, drawn as a bar on a terminal before the fleet's own."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from rigaudit.orchestrator.fleet.gathered import READING, STEPS, WRITING, read_gathered
from rigaudit.orchestrator.ui.terminal import TerminalUI
from rigaudit.tools.schema.events.fleet import FleetFinished, FleetStarted, HostFailed
from rigaudit.tools.schema.events.session import Progress
from rigaudit.tools.schema.events.union import Event

FILES = 1234


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("results")
    for i in range(FILES):
        (root / f"node-{i:04d}.json").write_text('{"schema": "not one"}')
    return root


def _events(folder: Path, out: Path | None = None) -> list[Event]:
    events: list[Event] = []
    read_gathered(folder, out, events.append)
    return events


def test_reading_is_told_in_bounded_steps_from_none_to_all(folder: Path) -> None:
    events = _events(folder)
    told = [e for e in events if isinstance(e, Progress)]
    reading = [(e.done, e.total) for e in told if e.label == READING]
    assert reading[0] == (0, FILES) and reading[-1] == (FILES, FILES)
    assert [d for d, _ in reading] == sorted({d for d, _ in reading})  # never backwards, never twice
    assert STEPS // 2 <= len(reading) <= STEPS + 2
    started = next(i for i, e in enumerate(events) if isinstance(e, FleetStarted))
    assert all(isinstance(e, Progress) for e in events[:started])  # the bar goes before the fleet draws its own
    assert sum(isinstance(e, HostFailed) for e in events) == FILES and isinstance(events[-1], FleetFinished)


def test_writing_each_node_is_told_too(folder: Path, tmp_path: Path) -> None:
    told = [e for e in _events(folder, tmp_path / "out") if isinstance(e, Progress) and e.label == WRITING]
    assert [(e.done, e.total) for e in told] == [(0, 0)]  # no node had a result: nothing to write, said once


def test_a_terminal_draws_the_bar_then_the_fleet(folder: Path) -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, color_system=None, width=100)
    ui = TerminalUI(console, live=True)
    for event in _events(folder):
        ui(event)
    ui.close()
    drawn = screen.getvalue()
    assert READING in drawn and f"{FILES}/{FILES}" in drawn
    assert f"0 of {FILES} host(s) audited" in drawn
