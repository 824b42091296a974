"""The chat's requests are paid for before they are sent, as the investigators' are: whatever the budget, the
completion limit and the rounds, a conversation never books more than its budget; failed and retried
requests are paid too; when the budget cannot pay for the next request the model is not asked."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rigaudit.agents.llm import LlmConfig, OpenAIChatModel
from rigaudit.agents.llm.client import ChatReply, ChatRequest, ToolCallRequest, request_chars
from rigaudit.agents.llm.errors import LlmError
from rigaudit.agents.llm.testing import ScriptedModel
from rigaudit.agents.llm.testing.server import ScriptedOpenAIServer, call, fail, say
from rigaudit.agents.llm.usage import UsageBook
from rigaudit.orchestrator.chat.coordinator import ChatSettings, Coordinator
from rigaudit.orchestrator.chat.planner import LlmPlanner
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.events.chat import Message
from rigaudit.tools.schema.events.union import Event

SEED = Path(__file__).resolve().parent / "fixtures" / "seed-lxc-8x-rtxpro6000"


def _planner(model: object, book: UsageBook, work: Path, **options: int) -> tuple[LlmPlanner, list[Event]]:
    events: list[Event] = []
    settings = ChatSettings(snapshot=SEED, into=work / "copy", workdir=work, assume_yes=False, interactive=False)
    coordinator = Coordinator(SnapshotHost(SEED), settings, emit=events.append)
    return LlmPlanner(model, coordinator, book, **options), events  # type: ignore[arg-type]


def greedy(chars_per_token: float, fail_every: int) -> object:
    """A model that always asks for one more (unknown, so harmless) tool, uses all the room it is given,
    counts ``chars_per_token`` and fails every ``fail_every``-th request (0: never)."""
    seen = [0]

    def reply(request: ChatRequest) -> ChatReply:
        seen[0] += 1
        if fail_every and seen[0] % fail_every == 0:
            raise LlmError("the model server failed: HTTP 500: scripted")
        prompt = int(request_chars(request) / chars_per_token) + 1
        calls = (ToolCallRequest(f"c{seen[0]}", "look_around", json.dumps({"x": "y" * 200})),)
        return ChatReply(None, calls, "tool_calls", prompt, 10**6)

    return reply


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    budget=st.integers(min_value=200, max_value=60_000),
    completion=st.integers(min_value=16, max_value=8192),
    rounds=st.integers(min_value=1, max_value=12),
    turns=st.integers(min_value=1, max_value=4),
    density=st.sampled_from([3.0, 3.5, 4.0, 5.0]),
    fail_every=st.sampled_from([0, 2, 3]),
)
def test_no_setting_lets_a_conversation_spend_past_its_budget(
    tmp_path: Path, budget: int, completion: int, rounds: int, turns: int, density: float, fail_every: int
) -> None:
    book = UsageBook(budget)
    model = ScriptedModel([], default=greedy(density, fail_every))
    planner, events = _planner(model, book, tmp_path, max_rounds=rounds, max_tokens=completion)
    for _ in range(turns):
        anyio.run(planner.turn, "audit it and tell me what is wrong")
    assert book.total.tokens <= budget
    assert book.total.requests == len(model.requests)  # every request was paid for, failed ones too
    assert set(book.agents) <= {"chat"}
    said = [e.text for e in events if isinstance(e, Message)]
    assert all("Traceback" not in text for text in said)


def test_a_spent_budget_is_one_line_and_the_model_is_not_asked(tmp_path: Path) -> None:
    book = UsageBook(50)  # less than any request
    model = ScriptedModel([say("never sent")])
    planner, events = _planner(model, book, tmp_path)
    anyio.run(planner.turn, "audit it")
    assert model.requests == [] and book.total.requests == 0
    (line,) = [e.text for e in events if isinstance(e, Message)]
    assert line.startswith("The model was not asked: the audit's token budget") and "Slash commands still work" in line


def test_failed_and_retried_chat_requests_are_paid_through_the_real_client(tmp_path: Path) -> None:
    script = [fail(500, "overloaded"), fail(500, "overloaded"), call("no_such_tool"), fail(429, "slow down"), say("done")]
    with ScriptedOpenAIServer(script) as server:
        config = LlmConfig(base_url=server.base_url, model="scripted", backoff_s=0.01, max_audit_tokens=400_000)
        model = OpenAIChatModel(config)
        book = UsageBook(config.max_audit_tokens)
        planner, events = _planner(model, book, tmp_path)

        async def main() -> None:
            try:
                await planner.turn("audit it")
            finally:
                await model.aclose()

        anyio.run(main)
        sent = len(server.requests)
    assert sent == 5 and book.total.requests == sent and book.total.failed == 3
    assert book.agents["chat"].requests == sent
    assert [e.text for e in events if isinstance(e, Message)][-1] == "done"
