"""The one-line error of cli.main never passes a terminal control sequence through."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main


def test_an_error_quoting_a_crafted_path_shows_its_escapes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    crafted = tmp_path / "snap\x1b]0;owned\x07\x1b[2J"
    code = main(["audit", "--snapshot", str(crafted), "--no-live", "--no-transcript"])
    err = capsys.readouterr().err
    assert code == 2
    assert "\x1b" not in err and "\x07" not in err
    assert "\\x1b]0;owned\\x07" in err and err.count("\n") == 1
