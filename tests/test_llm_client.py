"""The real openai client against the scripted loopback server: tool calls, streaming, structured
output, errors and retries, and the guard that keeps tests away from real models."""

from __future__ import annotations

import json
import socket

import anyio
import pytest

from rigaudit.agents.llm import ChatRequest, LlmConfig, LlmError, OpenAIChatModel, RealModelBlocked
from rigaudit.agents.llm.answer import RESPONSE_FORMAT
from rigaudit.agents.llm.guard import BLOCK_ENV
from rigaudit.agents.llm.testing.server import Reply, ScriptedOpenAIServer, call, calls, fail, final, garbage, say, slow
from rigaudit.agents.llm.usage import UsageBook

FAST = {"backoff_s": 0.001, "client_retries": 0, "model": "scripted"}
HELLO = ChatRequest([{"role": "system", "content": "# t test"}, {"role": "user", "content": "hi"}])
SCHEMA_REQUEST = ChatRequest(HELLO.messages, json_schema=RESPONSE_FORMAT)


def _complete(server: ScriptedOpenAIServer, request: ChatRequest = HELLO, **config: object):  # type: ignore[no-untyped-def]
    model = OpenAIChatModel(LlmConfig(base_url=server.base_url, **{**FAST, **config}))  # type: ignore[arg-type]

    async def go():  # type: ignore[no-untyped-def]
        try:
            return await model.complete(request)
        finally:
            await model.aclose()

    return anyio.run(go), model


@pytest.mark.parametrize("stream", [False, True])
def test_tool_calls_and_usage_come_through_whole_or_streamed(stream: bool) -> None:
    with ScriptedOpenAIServer([calls(("read_file", {"path": "/proc/cmdline"}), ("shell", '{"command": "uname -r"}'))]) as server:
        reply, _ = _complete(server, stream=stream)
        server.assert_complete()
        assert server.requests[0].body.get("stream", False) is stream
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("read_file", {"path": "/proc/cmdline"}),
        ("shell", {"command": "uname -r"}),
    ]
    assert len({c.id for c in reply.tool_calls}) == 2
    assert reply.finish_reason == "tool_calls"
    assert reply.prompt_tokens > 0 and reply.completion_tokens > 0


@pytest.mark.parametrize("stream", [False, True])
def test_plain_content_whole_or_streamed(stream: bool) -> None:
    with ScriptedOpenAIServer([say("all is well")]) as server:
        reply, _ = _complete(server, stream=stream)
    assert reply.content == "all is well" and reply.tool_calls == ()


def test_rate_limit_and_server_errors_are_retried_with_backoff() -> None:
    with ScriptedOpenAIServer([fail(429, "slow down"), fail(500), fail(503), final({"findings": []})]) as server:
        reply, _ = _complete(server, retries=3)
        server.assert_complete()
    assert json.loads(reply.content or "") == {"findings": []}
    assert reply.attempts == 4


def test_every_retry_is_ours_counted_and_honours_retry_after() -> None:
    with ScriptedOpenAIServer([fail(429, retry_after_ms=1), say("ok")]) as server:
        book = UsageBook()
        reply, _ = _complete(server, ChatRequest(HELLO.messages, agent="t", book=book), retries=0, client_retries=2)
        server.assert_complete()
    assert reply.content == "ok" and reply.attempts == 2  # the openai client's hidden retries are off
    assert book.total.requests == 2 and book.total.failed == 1 and book.total.prompt_tokens > 0


def test_retries_are_bounded_and_end_with_one_clear_line() -> None:
    with ScriptedOpenAIServer([fail(500, "boom")] * 3) as server:
        with pytest.raises(LlmError, match=r"failed 3 times: HTTP 500"):
            _complete(server, retries=2)
        assert len(server.requests) == 3


def test_a_malformed_answer_is_retried() -> None:
    with ScriptedOpenAIServer([garbage(), say("fine")]) as server:
        reply, _ = _complete(server)
        server.assert_complete()
    assert reply.content == "fine" and reply.attempts == 2


def test_a_slow_server_times_out_and_is_retried() -> None:
    with ScriptedOpenAIServer([slow(1.0, say("late")), say("on time")]) as server:
        reply, _ = _complete(server, request_timeout_s=0.2)
    assert reply.content == "on time" and reply.attempts == 2


def test_a_client_error_is_not_retried() -> None:
    with ScriptedOpenAIServer([fail(401, "bad key")]) as server:
        with pytest.raises(LlmError, match="refused the key"):
            _complete(server, retries=3)
        assert len(server.requests) == 1


def test_structured_output_is_sent_when_supported() -> None:
    with ScriptedOpenAIServer([final({"findings": []})]) as server:
        reply, _ = _complete(server, SCHEMA_REQUEST)
        body = server.requests[0].body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "report_findings"
    assert reply.structured


def test_a_server_without_json_schema_gets_json_object_for_that_request() -> None:
    with ScriptedOpenAIServer([final({"findings": []})], json_schema=False) as server:
        reply, model = _complete(server, SCHEMA_REQUEST)
        assert [r.status for r in server.requests] == [400, 200]
        assert server.requests[1].body["response_format"] == {"type": "json_object"}
    assert not reply.structured and reply.response_format == "json_object"
    assert model.json_schema_ok is True  # one refusal does not turn structured output off for the audit
    assert [p.key for p in model.problems.items.values()] == ["format:json_schema:400"]


def test_the_model_is_discovered_when_the_server_serves_one() -> None:
    with ScriptedOpenAIServer([say("hi")], model="served-model") as server:
        _, model = _complete(server, model="")
        assert server.requests[0].body["model"] == "served-model"
    assert model.model == "served-model"


def test_real_endpoints_are_refused_while_blocked(monkeypatch: pytest.MonkeyPatch) -> None:
    assert BLOCK_ENV in __import__("os").environ  # conftest sets it for every test
    for url in ("https://api.openai.com/v1", "http://10.0.0.5:8000/v1", None):
        with pytest.raises(RealModelBlocked, match="only loopback"):
            OpenAIChatModel(LlmConfig(base_url=url))
    OpenAIChatModel(LlmConfig(base_url="http://localhost:8000/v1"))
    OpenAIChatModel(LlmConfig(base_url="http://[::1]:8000/v1"))
    monkeypatch.delenv(BLOCK_ENV)
    OpenAIChatModel(LlmConfig(base_url="https://api.openai.com/v1"))  # built, never called


def test_unscripted_requests_are_reported() -> None:
    with ScriptedOpenAIServer({"a": [say("x")]}) as server:
        with pytest.raises(LlmError):
            _complete(server, retries=0)
        with pytest.raises(AssertionError, match="never requested"):
            server.assert_complete()
    assert isinstance(Reply(), Reply) and call("x").tool_calls[0].arguments == "{}"


def test_an_unreachable_server_is_given_up_once_for_every_agent() -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAIChatModel(LlmConfig(base_url=f"http://127.0.0.1:{port}/v1", retries=1, **FAST))  # type: ignore[arg-type]

    async def twice() -> list[str]:
        errors = []
        for _ in range(2):
            with pytest.raises(LlmError) as caught:
                await model.complete(HELLO)
            errors.append(str(caught.value))
        await model.aclose()
        return errors

    first, second = anyio.run(twice)
    assert first.startswith(f"the model server failed 2 times: cannot reach http://127.0.0.1:{port}/v1")
    assert second == first  # the same line, so an audit tells it once


def test_a_refused_key_is_not_sent_again() -> None:
    with ScriptedOpenAIServer([fail(401, "bad key")]) as server:
        model = OpenAIChatModel(LlmConfig(base_url=server.base_url, **FAST))  # type: ignore[arg-type]

        async def twice() -> None:
            for _ in range(2):
                with pytest.raises(LlmError, match="refused the key"):
                    await model.complete(HELLO)
            await model.aclose()

        anyio.run(twice)
        assert len(server.requests) == 1
