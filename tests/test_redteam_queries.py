"""Attacks on the query commands (``transcripts list/show``, ``replay --rediagnose``, ``diff --values``): times a
clock cannot show (NaN, 1e300, before 1970) in a transcript are one line or a ``?``, never a traceback, and a
display that fails says so instead of leaving the screen empty with exit 0."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main

H200X2 = Path(__file__).resolve().parent / "fixtures" / "transcripts" / "h200x2-audit.jsonl"
SNAPSHOT = Path(__file__).resolve().parent / "fixtures" / "h200x2-vm"
TIMES = {"nan": math.nan, "huge": 1e300, "negative": -1e300, "infinite": math.inf, "far": 1e18}


def _retimed(folder: Path, name: str, t: float) -> Path:
    """The fixture transcript with every event's time (and the session's duration) set to ``t``."""
    lines = H200X2.read_text().splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        event = json.loads(line)
        event["t"] = t
        if event.get("type") == "audit_finished":
            event["result"]["duration_s"] = t
        out.append(json.dumps(event))
    path = folder / f"20260101-000000-audit-{name}.jsonl"
    path.write_text("\n".join(out) + "\n")
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("store")
    for name, t in TIMES.items():
        _retimed(folder, name, t)
    return folder


def test_transcripts_list_shows_an_unknown_time_as_unknown(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["transcripts", "list", "--dir", str(store)]) == 0
    out = capsys.readouterr()
    rows = [line for line in out.out.splitlines() if "20260101-000000-audit-" in line]
    assert len(rows) == len(TIMES), out.out + out.err
    assert "Traceback" not in out.err


@pytest.mark.parametrize("name", list(TIMES))
def test_transcripts_show_draws_whatever_the_times(store: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["transcripts", "show", str(store / f"20260101-000000-audit-{name}.jsonl")]) == 0
    out = capsys.readouterr()
    assert "session:" in out.out and "findings:" in out.out, out.out + out.err


@pytest.fixture(scope="module")
def recorded() -> int:
    """The exit status of ``diff --values`` of the snapshot against the transcript as recorded."""
    return main(["diff", "--values", str(SNAPSHOT), str(H200X2)])


@pytest.mark.parametrize("name", list(TIMES))
def test_rediagnosis_and_diff_of_a_retimed_transcript(
    store: Path, recorded: int, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = store / f"20260101-000000-audit-{name}.jsonl"
    assert main(["replay", str(path), "--rediagnose", "--no-live"]) == 1  # today's rules differ from the recording's
    assert main(["diff", "--values", str(SNAPSHOT), str(path)]) == recorded  # times change no value
    out = capsys.readouterr()
    assert "Traceback" not in out.err and "Rebuilt the host" in out.out, out.err


def test_a_display_that_fails_is_said_on_stderr(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The terminal is a query's only output: if drawing fails, the person must hear of it."""
    import rigaudit.orchestrator.ui.terminal as terminal

    def broken(self: object, event: object) -> None:
        raise RuntimeError("the display broke")

    monkeypatch.setattr(terminal.TerminalUI, "__call__", broken)
    assert main(["transcripts", "show", str(store / "20260101-000000-audit-huge.jsonl")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the display broke" in err[0], err


def test_an_error_quoting_crafted_text_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A path or a name typed (or pasted) with a newline and escapes: the error is one line, its escapes shown."""
    crafted = tmp_path / "a\nb\x1b[2J"
    assert main(["diff", str(crafted), str(SNAPSHOT)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and "\\x1b[2J" in err, err
    with pytest.raises(SystemExit):
        main(["checks", "pcie\n\x1b]0;x\x07"])
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and "\x07" not in err, err
