"""A journal ``apply`` cannot create is one line, never a traceback (third attack pass)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from tests.hostgen import ARCHETYPES
from tests.hostgen.cache import snapshot


def test_a_journal_that_already_exists_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    journal = tmp_path / "j.jsonl"
    journal.write_text("someone else's file\n")
    source = snapshot(ARCHETYPES["geforce-4x4090"])  # a runtime step (C-states): apply journals it
    argv = ["apply", "--snapshot", str(source), "--into", str(tmp_path / "copy"), "--yes", "--no-live", "--no-transcript"]
    code = main([*argv, "--journal", str(journal)])
    err = capsys.readouterr().err
    assert code == 2 and "a journal already exists there" in err and "Traceback" not in err
    assert journal.read_text() == "someone else's file\n"


def test_a_journal_in_a_folder_others_may_write_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    source = snapshot(ARCHETYPES["geforce-4x4090"])
    argv = ["apply", "--snapshot", str(source), "--into", str(tmp_path / "copy"), "--yes", "--no-live", "--no-transcript"]
    code = main([*argv, "--journal", str(shared / "j.jsonl")])
    err = capsys.readouterr().err
    assert code in (1, 2) and "Traceback" not in err and len(err.strip().splitlines()) == 1
