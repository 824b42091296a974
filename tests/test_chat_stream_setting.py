"""The chat streams as the audit's settings say (``stream`` in the config file, ``--llm-stream`` or
``--no-llm-stream``; unset, the chat streams and the agents do not), and a server that refuses a streamed
request gets it whole, said in one line once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigaudit.agents.llm.testing.server import Quirks, Reply, ScriptedOpenAIServer
from rigaudit.orchestrator.cli import build_parser
from rigaudit.orchestrator.commands._llm import llm_config_from_args
from rigaudit.orchestrator.commands.chat import run_chat
from rigaudit.tools.schema.events.chat import Message
from rigaudit.tools.schema.events.union import Event
from tests.test_llm_support import SEED


def _chat(server: ScriptedOpenAIServer, lines: list[str], *extra: str) -> list[str]:
    argv = ["chat", "--snapshot", str(SEED), "--llm", "--base-url", server.base_url, "--model", "scripted",
            "--llm-no-preflight", "--no-transcript", *extra]  # fmt: skip
    events: list[Event] = []
    assert run_chat(build_parser().parse_args(argv), lines=lines, interactive=False, consumers=[events.append]) == 0
    return [e.text for e in events if isinstance(e, Message) and e.role == "assistant"]


def _streamed(server: ScriptedOpenAIServer) -> list[bool]:
    return [bool(r.body.get("stream")) for r in server.requests]


@pytest.fixture(autouse=True)
def _config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return tmp_path / "config"


def test_the_chat_streams_unless_told_not_to(tmp_path: Path) -> None:
    with ScriptedOpenAIServer({"chat": [Reply(content="streamed."), Reply(content="whole.")]}) as server:
        assert _chat(server, ["first"]) == ["streamed."]
        assert _chat(server, ["second"], "--no-llm-stream") == ["whole."]
        assert _streamed(server) == [True, False]


def test_the_config_files_stream_false_reaches_the_chat(_config_home: Path) -> None:
    (_config_home / "rigaudit").mkdir(parents=True)
    (_config_home / "rigaudit" / "config.json").write_text(json.dumps({"llm": {"stream": False}}))
    with ScriptedOpenAIServer({"chat": [Reply(content="whole."), Reply(content="streamed.")]}) as server:
        assert _chat(server, ["first"]) == ["whole."]
        assert _chat(server, ["second"], "--llm-stream") == ["streamed."]  # the command line wins
        assert _streamed(server) == [False, True]


def test_the_audit_streams_only_when_asked() -> None:
    def stream(*extra: str) -> bool | None:
        args = build_parser().parse_args(["audit", "--llm", "--base-url", "http://127.0.0.1:1/v1", *extra])
        config = llm_config_from_args(args, env={})
        assert config is not None
        return config.stream

    assert (stream(), stream("--llm-stream"), stream("--no-llm-stream")) == (None, True, False)


def test_a_server_that_does_not_stream_gets_the_request_whole_once_said() -> None:
    replies = {"chat": [Reply(content="first answer."), Reply(content="second answer.")]}
    with ScriptedOpenAIServer(replies, quirks=Quirks(stream_refused=True)) as server:
        said = _chat(server, ["one", "two"])
        assert [r.status for r in server.requests] == [400, 200, 200]
        assert _streamed(server) == [True, False, False]  # refused once, then never streamed again
    told = [s for s in said if "refused a streamed request" in s]
    assert len(told) == 1 and "\n" not in told[0] and "HTTP 400" in told[0]
    assert [s for s in said if s not in told] == ["first answer.", "second answer."]
