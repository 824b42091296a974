"""The chat's exchanges are recorded as the agents' are (``agents/llm/recording.py``): the messages sent and
the reply whole, redacted, with latency, request id and usage; replay and ``transcripts show`` read a
chat transcript of either form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigaudit.agents.llm.testing.server import Reply, ScriptedOpenAIServer
from rigaudit.orchestrator.cli import build_parser, main
from rigaudit.orchestrator.commands.chat import run_chat
from rigaudit.tools.schema.events.chat import LlmExchange
from rigaudit.transcripts.reader import read_transcript
from tests.test_llm_support import SEED

SECRET = "hunter2-very-secret"
LONG = "The audit found these, check by check. " * 20 + f"password={SECRET} ends it."


def _record(server: ScriptedOpenAIServer, path: Path) -> None:
    argv = ["chat", "--snapshot", str(SEED), "--llm", "--base-url", server.base_url, "--model", "scripted",
            "--llm-no-preflight", "--transcript", str(path)]  # fmt: skip
    assert run_chat(build_parser().parse_args(argv), lines=["/audit", "what is wrong?"], interactive=False) == 0


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One chat (an audit, then a question the scripted model answers with LONG) recorded for the tests: read only."""
    path = tmp_path_factory.mktemp("chat") / "chat.jsonl"
    with ScriptedOpenAIServer({"chat": [Reply(content=LONG)]}) as server:
        _record(server, path)
    return path


def test_a_long_chat_reply_is_recorded_whole_and_redacted(recorded: Path) -> None:
    path = recorded
    assert len(LONG) > 400 and SECRET not in path.read_text()
    (chat,) = [e for e in read_transcript(path).events if isinstance(e, LlmExchange) and e.agent == "chat"]
    assert chat.response["content"] == LONG.replace(SECRET, "<redacted>")
    assert chat.request["sent"][-1] == {"role": "user", "content": "what is wrong?"}
    assert chat.response["request_id"] and chat.response["latency_s"] >= 0 and chat.usage["total_tokens"] > 0


def _old_form(path: Path, folder: Path) -> Path:
    """The transcript as an older release wrote the chat's exchange: the reply's first 400 characters."""
    lines = []
    for line in path.read_text().splitlines():
        event = json.loads(line)
        if event.get("type") == "llm_exchange" and event.get("agent") == "chat":
            event["request"] = {"messages": 2, "last": "what is wrong?"}
            event["response"] = {"content": event["response"]["content"][:400], "tool_calls": []}
        lines.append(json.dumps(event))
    old = folder / "old.jsonl"
    old.write_text("\n".join(lines) + "\n")
    return old


@pytest.mark.parametrize("form", ["new", "old"])
def test_replay_and_show_read_a_chat_transcript(
    recorded: Path, tmp_path: Path, form: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _old_form(recorded, tmp_path) if form == "old" else recorded
    for argv in (["replay", str(path), "--no-live"], ["replay", str(path), "--rediagnose"], ["transcripts", "show", str(path)]):
        assert main(argv) == 0, argv
    assert "Traceback" not in capsys.readouterr().err
