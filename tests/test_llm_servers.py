"""Real servers' habits, played by the scripted server through the real openai client: each is handled or told once."""

from __future__ import annotations

import json

import anyio
import pytest

from rigaudit.agents.llm import ChatRequest, LlmConfig, OpenAIChatModel
from rigaudit.agents.llm.answer import RESPONSE_FORMAT
from rigaudit.agents.llm.client import ChatReply
from rigaudit.agents.llm.errors import LlmError
from rigaudit.agents.llm.testing.server import FAMILIES, Quirks, Reply, ScriptedOpenAIServer, call, calls, final, say
from rigaudit.agents.llm.usage import UsageBook

FAST = {"backoff_s": 0.001, "client_retries": 0, "model": "scripted"}
HELLO = ChatRequest([{"role": "system", "content": "# t test"}, {"role": "user", "content": "hi"}], agent="t")
ANSWER = {"findings": []}


def _run(server: ScriptedOpenAIServer, *requests: ChatRequest, **config: object) -> tuple[list[ChatReply], OpenAIChatModel]:
    model = OpenAIChatModel(LlmConfig(base_url=server.base_url, **{**FAST, **config}))  # type: ignore[arg-type]

    async def go() -> list[ChatReply]:
        try:
            return [await model.complete(r) for r in requests]
        finally:
            await model.aclose()

    return anyio.run(go), model


def _schema_request(**kw: object) -> ChatRequest:
    return ChatRequest(HELLO.messages, json_schema=RESPONSE_FORMAT, agent="t", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("stream", [False, True])
def test_hermes_tool_calls_written_as_text_are_tool_calls(stream: bool) -> None:
    with ScriptedOpenAIServer([call("read_file", path="/proc/cmdline")], quirks="hermes-text") as server:
        (reply,), model = _run(server, HELLO, stream=stream)
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [("read_file", {"path": "/proc/cmdline"})]
    assert reply.text_calls and not reply.content and reply.finish_reason == "tool_calls"
    assert list(model.problems.items) == ["text-calls"] and not model.problems.degraded


def test_text_that_only_mentions_tool_call_stays_content() -> None:
    with ScriptedOpenAIServer([say("use <tool_call> tags like <tool_call>not json</tool_call>")]) as server:
        (reply,), _ = _run(server, HELLO)
    assert reply.tool_calls == () and reply.content is not None and "not json" in reply.content


@pytest.mark.parametrize(("family", "stream"), [("hermes-text", False), ("vllm", False), ("vllm", True)])
def test_reasoning_is_cut_before_the_answer_is_parsed(family: str, stream: bool) -> None:
    thinking = 'The user wants {"findings": ...} hmm, let me think } {'
    with ScriptedOpenAIServer([Reply(content=json.dumps(ANSWER), reasoning=thinking)], quirks=family) as server:
        (reply,), _ = _run(server, HELLO, stream=stream)
        sent = server.requests[0]
    assert json.loads(reply.content or "") == ANSWER
    assert reply.reasoning is (not FAMILIES[family].reasoning_field)  # a <think> block was in the content
    assert sent.status == 200


@pytest.mark.parametrize("family", ["llama.cpp", "tgi-old"])
def test_arguments_sent_as_an_object_become_json_text(family: str) -> None:
    with ScriptedOpenAIServer([call("nvml", function="nvmlDeviceGetCount", args=[])], quirks=family) as server:
        (reply,), _ = _run(server, HELLO)
    assert json.loads(reply.tool_calls[0].arguments) == {"function": "nvmlDeviceGetCount", "args": []}


def test_a_cut_answer_is_retried_once_with_twice_the_room() -> None:
    long = json.dumps({"findings": [], "note": "x" * 600})  # about 160 tokens: cut at 100, whole at 200
    with ScriptedOpenAIServer([Reply(content=long), Reply(content=long)]) as server:
        (reply,), model = _run(server, ChatRequest(HELLO.messages, max_tokens=100, agent="t"))
        limits = [r.body["max_tokens"] for r in server.requests]
    assert limits == [100, 200] and reply.content == long and reply.attempts == 2
    assert "length" in model.problems.items


def test_a_reply_cut_twice_comes_back_cut() -> None:
    long = json.dumps({"findings": [], "note": "x" * 4000})
    with ScriptedOpenAIServer([Reply(content=long), Reply(content=long)]) as server:
        (reply,), _ = _run(server, ChatRequest(HELLO.messages, max_tokens=100, agent="t"))
        server.assert_complete()
    assert reply.finish_reason == "length" and len(server.requests) == 2


@pytest.mark.parametrize(
    ("family", "statuses", "answered_with"),
    [
        ("vllm", [200], "json_schema"),
        ("llama.cpp-old", [500, 200], "json_object"),  # old llama.cpp: 500 for json_schema
        ("tgi-old", [422, 422, 200], None),  # old TGI: neither OpenAI format
        ("litellm", [400, 200], "json_object"),
    ],
)
def test_a_refused_answer_format_falls_back_for_that_request_only(
    family: str, statuses: list[int], answered_with: str | None
) -> None:
    with ScriptedOpenAIServer([final(ANSWER), final(ANSWER)], quirks=family) as server:
        replies, model = _run(server, _schema_request(), _schema_request())
        first = [r.status for r in server.requests[: len(statuses)]]
        again = [r.status for r in server.requests[len(statuses) :]]
    assert first == statuses and again == statuses  # the next request asks the best format again
    assert all(r.response_format == answered_with for r in replies)
    assert all(json.loads(r.content or "") == ANSWER for r in replies)
    refusals = [k for k in model.problems.items if k.startswith("format:")]
    assert len(refusals) == len(statuses) - 1
    assert all(model.problems.items[k].count == 2 for k in refusals)  # counted, told once


def test_a_server_error_without_a_format_is_not_a_format_refusal() -> None:
    with ScriptedOpenAIServer([Reply(status=500, error="overloaded", retry_after_ms=1), say("ok")]) as server:
        (reply,), model = _run(server, HELLO, retries=1)
    assert reply.content == "ok" and not model.problems.items


def test_a_truncated_prompt_is_told_once_and_degrades() -> None:
    big = ChatRequest([{"role": "system", "content": "# t test"}, {"role": "user", "content": "evidence " * 1500}], agent="t")
    with ScriptedOpenAIServer([say("ok"), say("ok")], quirks="ollama") as server:
        _, model = _run(server, big, big)
        counted = [r.body for r in server.requests]
    assert len(counted) == 2
    assert list(model.problems.items) == ["truncated"] and model.problems.degraded
    assert model.problems.items["truncated"].count == 2
    assert "num_ctx" in model.problems.lines()[0]


def test_a_prompt_within_the_window_is_not_called_truncated() -> None:
    small = ChatRequest([{"role": "system", "content": "# t test"}, {"role": "user", "content": "evidence " * 200}], agent="t")
    with ScriptedOpenAIServer([say("ok")], quirks="ollama") as server:
        _, model = _run(server, small)
    assert not model.problems.items


def test_a_server_that_demands_max_completion_tokens_is_asked_so() -> None:
    with ScriptedOpenAIServer([say("one"), say("two")], quirks="openai-reasoning") as server:
        replies, model = _run(server, HELLO, HELLO)
        bodies = [(r.status, sorted(k for k in r.body if k.startswith("max_"))) for r in server.requests]
    assert [r.content for r in replies] == ["one", "two"]
    assert bodies == [(400, ["max_tokens"]), (200, ["max_completion_tokens"]), (200, ["max_completion_tokens"])]
    assert list(model.problems.items) == ["token-field"]


def test_the_token_field_setting_is_sent_from_the_start() -> None:
    with ScriptedOpenAIServer([say("one")], quirks="openai-reasoning") as server:
        _run(server, HELLO, token_field="max_completion_tokens")
        assert [r.status for r in server.requests] == [200]


def test_a_server_without_usage_is_estimated_and_told() -> None:
    with ScriptedOpenAIServer([say("ok")], quirks=Quirks(report_usage=False)) as server:
        book = UsageBook()
        (reply,), model = _run(server, ChatRequest(HELLO.messages, agent="t", book=book))
    assert not reply.usage_reported and book.total.prompt_tokens > 0
    assert "no-usage" in model.problems.items


def test_a_cut_answer_the_budget_cannot_give_room_comes_back_as_it_is() -> None:
    long = json.dumps({"findings": [], "note": "x" * 600})
    with ScriptedOpenAIServer([Reply(content=long)]) as server:
        book = UsageBook(200)  # room for the first try only
        request = ChatRequest(HELLO.messages, max_tokens=100, agent="t", book=book)
        (reply,), _ = _run(server, request)
        server.assert_complete()
    assert reply.finish_reason == "length" and len(server.requests) == 1 and book.total.tokens <= 200


def test_a_prompt_longer_than_the_context_is_resent_shorter_once() -> None:
    from tests.test_llm_budget import _audit

    with ScriptedOpenAIServer({}, default=final(ANSWER), quirks="vllm-short-context") as server:
        result, brain = _audit(None, ("kernel",), base_url=server.base_url, model="scripted")
        statuses = [r.status for r in server.requests]
        second = server.requests[1].body
    assert statuses == [400, 200] and brain.failures == {}
    assert result.investigators[0].llm == "answered"
    system, user = (m["content"] for m in second["messages"][:2])
    assert second["max_tokens"] == 1024  # half the completion limit, which vLLM counts in the context
    assert "## What to read" not in system and "Evidence the rules read" not in user and "kernel.iommu" in user  # compact


def test_an_error_event_mid_stream_is_retried_as_a_transient_error() -> None:
    answer = json.dumps({"findings": [], "note": "x" * 60})
    with ScriptedOpenAIServer([Reply(content=answer)] * 3, quirks="openrouter") as server:
        replies, model = _run(server, HELLO, HELLO, stream=True, retries=2)
        statuses = [r.status for r in server.requests]
    assert [r.content for r in replies] == [answer, answer]  # the second stream broke after part of its answer
    assert statuses == [200, 200, 200] and replies[1].attempts == 2
    assert not model.problems.degraded


def test_an_error_event_on_every_try_ends_the_request_with_its_message() -> None:
    server = ScriptedOpenAIServer([], default=say("partial answer"), quirks=Quirks(stream_error_every=1))
    with server, pytest.raises(LlmError, match="failed 2 times: the stream broke: Provider returned error"):
        _run(server, HELLO, stream=True, retries=1)


@pytest.mark.parametrize("stream", [False, True])
def test_content_sent_as_a_list_of_parts_is_joined(stream: bool) -> None:
    with ScriptedOpenAIServer([final(ANSWER)], quirks="content-parts") as server:
        (reply,), _ = _run(server, HELLO, stream=stream)
    assert json.loads(reply.content or "") == ANSWER


def test_streamed_tool_calls_without_index_are_merged_by_id() -> None:
    two = calls(("read_file", {"path": "/proc/cmdline"}), ("shell", {"command": "lspci -tv"}))
    with ScriptedOpenAIServer([two], quirks="gemini") as server:
        (reply,), _ = _run(server, HELLO, stream=True)
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("read_file", {"path": "/proc/cmdline"}),
        ("shell", {"command": "lspci -tv"}),
    ]
    assert len({c.id for c in reply.tool_calls}) == 2


@pytest.mark.parametrize("index", [None, 0])  # none (Gemini), or every call at index 0
def test_a_new_id_is_a_new_call_and_a_delta_without_one_continues_the_last(index: int | None) -> None:
    from types import SimpleNamespace as NS

    from rigaudit.agents.llm.client import _absorb, _Accumulated

    acc = _Accumulated()
    for piece in (
        NS(index=index, id="a", function=NS(name="read_file", arguments='{"path": ')),
        NS(index=index, id=None, function=NS(name=None, arguments='"/proc/cmdline"}')),
        NS(index=index, id="b", function=NS(name="list_dir", arguments='{"path": "/sys"}')),
        NS(index=index, id="b", function=NS(name=None, arguments="")),
    ):
        _absorb(acc, NS(usage=None, choices=[NS(delta=NS(content=None, tool_calls=[piece]), finish_reason=None)]))
    assert [(c["id"], c["name"], json.loads(c["arguments"])) for _, c in sorted(acc.calls.items())] == [
        ("a", "read_file", {"path": "/proc/cmdline"}),
        ("b", "list_dir", {"path": "/sys"}),
    ]


TEXT_FAMILIES = ["hermes-text", "llama3-python-tag", "llama3-json", "llama3-function-tag", "mistral", "mistral-v11"]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("family", TEXT_FAMILIES)
def test_tool_calls_in_each_documented_text_form_are_run(family: str, stream: bool) -> None:
    two = calls(("read_file", {"path": "/proc/cmdline"}), ("nvml", {"function": "nvmlDeviceGetCount", "args": []}))
    with ScriptedOpenAIServer([two], quirks=family) as server:
        (reply,), model = _run(server, HELLO, stream=stream)
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("read_file", {"path": "/proc/cmdline"}),
        ("nvml", {"function": "nvmlDeviceGetCount", "args": []}),
    ]
    assert reply.text_calls and not reply.content and reply.finish_reason == "tool_calls"
    assert list(model.problems.items) == ["text-calls"]


@pytest.mark.parametrize(
    "content",
    [
        '{"findings": []}',  # the answer, not a call
        '{"name": "numa", "status": "ok"}',  # an object with a name is not a call without arguments alone
        'I would call {"name": "read_file", "arguments": {"path": "/x"}} next.',  # a bare object inside prose
        "[TOOL_CALLS] not json",
        "<|python_tag|>brave_search.call(query='x')",  # Llama's built-in tools are not ours
    ],
)
def test_text_that_is_not_a_documented_call_stays_content(content: str) -> None:
    with ScriptedOpenAIServer([say(content)]) as server:
        (reply,), _ = _run(server, HELLO)
    assert reply.tool_calls == () and reply.content == content


@pytest.mark.parametrize(
    ("family", "status", "reason"),
    [
        ("tgi-short-context", 422, "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 2500"),
        ("llama.cpp-short-context", 400, "the request exceeds the available context size"),
    ],
)
def test_tgi_and_llama_cpp_context_refusals_are_told_and_resent_shorter(family: str, status: int, reason: str) -> None:
    from tests.test_llm_budget import _audit

    with ScriptedOpenAIServer({}, default=final(ANSWER), quirks=family) as server:
        result, brain = _audit(None, ("kernel",), base_url=server.base_url, model="scripted")
        refused = [r for r in server.requests if r.status == status]
        last = server.requests[-1]
    assert refused and last.status == 200 and brain.failures == {}
    assert result.investigators[0].llm == "answered"
    assert last.body["max_tokens"] == 1024 and "Evidence the rules read" not in last.messages[1]["content"]
    assert any(reason in line for line in brain.model.problems.lines())  # type: ignore[attr-defined]


def test_a_context_refusal_resent_shorter_and_refused_again_ends_with_the_servers_reason() -> None:
    from tests.test_llm_budget import _audit

    quirks = Quirks(formats=frozenset(), format_refusal=422, context=200, context_refusal="tgi")
    with ScriptedOpenAIServer({}, default=final(ANSWER), quirks=quirks) as server:
        result, brain = _audit(None, ("kernel",), base_url=server.base_url, model="scripted")
    assert result.investigators[0].llm == "failed"
    assert "longer than the server's context" in brain.failures["kernel"]
    assert "HTTP 422: Input validation error: `inputs` tokens + `max_new_tokens` must be <= 200" in brain.failures["kernel"]
