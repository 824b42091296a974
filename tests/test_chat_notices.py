"""Every one-time notice of the LLM client that an audit shows reaches the chat's screen too, once: what it
changed to get answers (a server that does not stream, a rate limit, the other completion-limit field) and
what it saw go wrong (a prompt the server cut), whether the chat's own requests, the endpoint check or an
audit's agents met it; and a conversation grown longer than the server's context goes on, its earlier
turns left out."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.agents.llm.testing.server import Quirks, Reply, ScriptedOpenAIServer, fail, final
from rigaudit.orchestrator.cli import build_parser
from rigaudit.orchestrator.commands.chat import run_chat
from rigaudit.tools.schema.events.chat import Message
from rigaudit.tools.schema.events.session import Warning_
from rigaudit.tools.schema.events.union import Event
from tests.test_llm_support import SEED


@pytest.fixture(autouse=True)
def _config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _chat(server: ScriptedOpenAIServer, lines: list[str], *extra: str) -> list[Event]:
    argv = ["chat", "--snapshot", str(SEED), "--llm", "--base-url", server.base_url, "--model", "scripted",
            "--no-transcript", *extra]  # fmt: skip
    events: list[Event] = []
    assert run_chat(build_parser().parse_args(argv), lines=lines, interactive=False, consumers=[events.append]) == 0
    return events


def _said(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, Message) and e.role == "assistant"]


ANSWERS = [Reply(content="first answer."), Reply(content="second answer.")]
CUT = [Reply(content="first answer.", usage=(100, 3)), Reply(content="second answer.", usage=(100, 3))]
"""A server that counts 100 prompt tokens for thousands of characters: it cut the prompt (Ollama's num_ctx)."""


@pytest.mark.parametrize(
    ("quirks", "replies", "notice"),
    [
        (Quirks(stream_refused=True), ANSWERS, "refused a streamed request"),
        (Quirks(), [fail(429, "slow down", retry_after_ms=5), *ANSWERS], "limited the rate (HTTP 429)"),
        (Quirks(token_field="max_completion_tokens"), ANSWERS, "asked for max_completion_tokens"),
        (Quirks(report_usage=False), ANSWERS, "reported no token usage"),
        (Quirks(), CUT, "it cut the prompt"),
        (Quirks(), [Reply(content="first answer.", reasoning="hmm"), ANSWERS[1]], "began with a <think> block"),
    ],
    ids=["no-stream", "rate-limit", "token-field", "no-usage", "truncated", "think"],
)
def test_each_notice_of_the_client_is_said_once_in_the_chat(quirks: Quirks, replies: list[Reply], notice: str) -> None:
    with ScriptedOpenAIServer({"chat": replies}, default=Reply(content="ok"), quirks=quirks) as server:
        said = _said(_chat(server, ["one", "two"]))
    told = [s for s in said if notice in s]
    assert len(told) == 1 and "\n" not in told[0] and told[0].startswith("LLM: "), said
    assert said.index(told[0]) < said.index("first answer.")  # as it happens, before the answer it came with
    assert said[-1] == "second answer."


def test_the_endpoint_checks_notice_is_said_before_the_first_line() -> None:
    quirks = Quirks(token_field="max_completion_tokens")
    with ScriptedOpenAIServer({"chat": ANSWERS}, default=Reply(content="ok"), quirks=quirks) as server:
        events = _chat(server, ["one"])
    said = _said(events)
    told = [s for s in said if "asked for max_completion_tokens" in s]
    first_line = next(i for i, e in enumerate(events) if isinstance(e, Message) and e.role == "user")
    assert len(told) == 1 and events.index(next(e for e in events if isinstance(e, Message) and e.text == told[0])) < first_line


def test_an_audits_agents_notices_reach_the_chat_once_and_its_warnings_are_not_repeated() -> None:
    answer = final({"findings": []})
    cut = Reply(content=answer.content, reasoning="thinking", usage=(100, 3))  # handled, and cut: the audit warns
    with ScriptedOpenAIServer({"chat": ANSWERS}, default=cut) as server:
        events = _chat(server, ["/audit", "/audit", "one"], "--llm-agents", "--llm-no-preflight")
    said = _said(events)
    handled = [s for s in said if "began with a <think> block" in s]
    assert len(handled) == 1 and handled[0].startswith("LLM: ")  # two audits of 13 agents: said once
    warned = [e.text for e in events if isinstance(e, Warning_) and "cut the prompt" in e.text]
    assert len(warned) == 2  # each audit's own warning: that audit was degraded
    assert not [s for s in said if "cut the prompt" in s]  # and the chat does not say it a third time


def test_a_conversation_longer_than_the_servers_context_goes_on_without_its_earlier_turns() -> None:
    long = "please look at this: " + "the decode rate is low " * 80  # about 460 tokens a line
    replies = {"chat": [Reply(content="first answer."), Reply(content="second answer.")]}
    with ScriptedOpenAIServer(replies, quirks=Quirks(context=2000)) as server:
        said = _said(_chat(server, [long + "one", long + "two"], "--llm-no-preflight"))
        statuses = [r.status for r in server.requests]
        resent = server.requests[-1].messages
    assert statuses == [200, 400, 200]
    assert [m["role"] for m in resent] == ["system", "user"] and resent[1]["content"].endswith("two")
    assert server.requests[-1].body["max_tokens"] < server.requests[1].body["max_tokens"]
    refused = [i for i, s in enumerate(said) if "longer than its context" in s]
    left_out = [i for i, s in enumerate(said) if "turns before this one were left out" in s]
    assert len(refused) == len(left_out) == 1 and refused[0] < left_out[0]  # the refusal, then what was done
    assert said[-1] == "second answer."
