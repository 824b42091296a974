"""``--api-key-env NAME`` means one thing in bench and audit: the variable holding the key, never the key in argv."""

from __future__ import annotations

import argparse

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.commands._bench import API_KEY_NOTE, add_inference_arguments, load_spec
from rigaudit.tools.core.errors import UsageError

LOAD = ["--base-url", "http://127.0.0.1:9", "--model", "m"]


def _spec_key(*argv: str) -> str | None:
    parser = argparse.ArgumentParser()
    add_inference_arguments(parser)
    return load_spec(parser.parse_args([*LOAD, *argv])).api_key


def test_the_key_comes_from_the_variable_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_TOKEN", "sk-from-env")
    assert _spec_key("--api-key-env", "BENCH_TOKEN") == "sk-from-env"
    assert _spec_key() is None
    monkeypatch.delenv("BENCH_TOKEN")
    with pytest.raises(UsageError, match="--api-key-env BENCH_TOKEN: no such variable"):
        _spec_key("--api-key-env", "BENCH_TOKEN")


def test_the_old_spelling_still_works_with_a_notice(capsys: pytest.CaptureFixture[str]) -> None:
    assert _spec_key("--api-key", "sk-old") == "sk-old"
    with pytest.raises(UsageError, match="give one"):
        _spec_key("--api-key", "sk-old", "--api-key-env", "X")
    assert main(["bench", "inference", "--api-key", "sk-old", "--no-transcript"]) == 2  # no --base-url: usage
    assert capsys.readouterr().err.splitlines()[0] == API_KEY_NOTE
