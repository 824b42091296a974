"""Ordinary mistakes get one line and exit 2 (or a sensible reading), never a traceback, before any work."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.commands._arguments import normalize_url
from rigaudit.tools.core.errors import UsageError
from tests.conftest import SEED


@pytest.mark.parametrize(
    ("given", "taken"),
    [
        ("127.0.0.1:30000", "http://127.0.0.1:30000"),
        ("localhost:8000/v1", "http://localhost:8000/v1"),
        ("https://api.example.com/v1", "https://api.example.com/v1"),
        ("  http://[::1]:8000 ", "http://[::1]:8000"),
    ],
)
def test_a_url_without_a_scheme_is_http(given: str, taken: str) -> None:
    assert normalize_url(given) == taken


@pytest.mark.parametrize("bad", ["ftp://host/x", "http://", "127.0.0.1:port", "file:///etc/passwd"])
def test_a_url_that_is_no_server_is_one_line(bad: str) -> None:
    with pytest.raises(UsageError) as caught:
        normalize_url(bad)
    assert "\n" not in str(caught.value)


def _one_line_exit_2(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err and "\n" not in err and "Traceback" not in err, err
    assert "Problems and unknowns" not in captured.out
    return err


@pytest.mark.parametrize("timeout", ["0", "-1", "nan", "soon"])
def test_a_time_limit_that_judges_nothing_is_refused(capsys: pytest.CaptureFixture[str], timeout: str) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["audit", "--snapshot", str(SEED), "--timeout", timeout, "--fail-on", "low"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--timeout" in err and "see rigaudit audit --help" in err


def test_bench_url_without_scheme_is_taken_as_http(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["bench", "inference", "--base-url", "ftp://x", "--model", "m", "--yes"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_an_unwritable_cache_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    err = _one_line_exit_2(capsys, "audit", "--demo", "seed", "--no-transcript", "--no-live")
    assert "cannot unpack the demo" in err and "XDG_CACHE_HOME" in err


def test_journal_and_script_paths_are_checked_before_the_audit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["apply", "--snapshot", str(SEED), "--into", str(tmp_path / "copy"), "--yes", "--no-transcript"]
    assert "is a directory" in _one_line_exit_2(capsys, *base, "--journal", str(tmp_path))
    assert "is a directory" in _one_line_exit_2(capsys, *base, "--emit-script", str(tmp_path))
    assert not (tmp_path / "copy").exists()
