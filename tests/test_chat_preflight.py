"""``rigaudit chat --llm`` checks its endpoint before the first line: a server that refuses, is not
there, answers 404 or never answers ends the chat at once with one line and exit status 1."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rigaudit.agents.llm.testing.server import ScriptedOpenAIServer, say
from rigaudit.orchestrator.cli import main
from tests.test_llm_support import SEED


def _chat(url: str, *extra: str) -> int:
    args = ["chat", "--snapshot", str(SEED), "--llm", "--base-url", url, "--model", "scripted"]
    return main([*args, "--no-live", "--no-transcript", *extra])


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.fixture(autouse=True)
def _config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A three-second check (the config file's ``preflight_timeout_s``); no key, no other settings."""
    (tmp_path / "config" / "rigaudit").mkdir(parents=True)
    (tmp_path / "config" / "rigaudit" / "config.json").write_text(json.dumps({"llm": {"preflight_timeout_s": 3}}))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def silent() -> Iterator[str]:
    """A loopback server that accepts connections and never answers (a hung or wrong server)."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


def test_a_refused_connection_ends_the_chat_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    assert _chat(f"http://127.0.0.1:{port}/v1") == 1
    assert "cannot be reached" in _one_line(capsys)


def test_a_wrong_url_404_ends_the_chat_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with ScriptedOpenAIServer([say("never")]) as server:
        code = _chat(server.base_url.removesuffix("/v1") + "/not-v1")
        assert server.requests == []  # nothing reached the chat endpoint
    line = _one_line(capsys)
    assert code == 1 and "failed its check" in line and "HTTP 404" in line


def test_a_server_that_never_answers_ends_the_chat_at_its_deadline(silent: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _chat(silent) == 1
    line = _one_line(capsys)
    assert "gave no answer to its check within 3 s" in line


def test_the_check_can_be_skipped(silent: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", open("/dev/null"))  # noqa: SIM115 (end of input: the chat ends at once)
    assert _chat(silent, "--llm-no-preflight") == 0  # no line was said, so the model was never asked
