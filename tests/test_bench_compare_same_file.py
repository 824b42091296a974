"""``bench compare a.json a.json`` says it is one file twice."""

from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main


def test_one_file_twice_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = tmp_path / "a.json"
    result.write_text("{}")
    assert main(["bench", "compare", str(result), f"{tmp_path}/./a.json"]) == 2
    assert "one file given twice" in capsys.readouterr().err
