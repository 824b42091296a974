"""The budget holds: whatever the settings, a model that always asks for more never makes one audit spend past it.

Every request is paid for before it is sent (its prompt estimated, its completion limited to what is
left), failed and retried ones too; an agent whose next round the budget could not pay for is asked
for its answer at once; old tool results are cut so a conversation's cost grows linearly.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rigaudit.agents.llm import ChatRequest, LLMBrain, LlmConfig, OpenAIChatModel
from rigaudit.agents.llm.agent import DROPPED, compact
from rigaudit.agents.llm.client import ChatReply, ToolCallRequest, request_chars
from rigaudit.agents.llm.errors import BudgetExhausted, LlmError
from rigaudit.agents.llm.prompt import SAFETY_PREAMBLE
from rigaudit.agents.llm.testing import ScriptedModel
from rigaudit.agents.llm.testing.server import Reply, ScriptedOpenAIServer, call, fail, final
from rigaudit.agents.llm.usage import TEMPLATE_TOKENS, UsageBook
from rigaudit.agents.registry import select
from rigaudit.orchestrator.audit.run import AuditOptions, run_audit
from rigaudit.tools.schema.audit import AuditResult
from tests.test_llm_support import SeedHost, rule_findings

BIG = "/etc/modprobe.d/big.conf"
BIG_TEXT = "options nvidia NVreg_X=1\n" * 400


def greedy(chars_per_token: float) -> Any:
    """A model that always reads one more file and uses all the room it is given, counting ``chars_per_token``."""

    def reply(request: ChatRequest) -> ChatReply:
        prompt = int(request_chars(request) / chars_per_token) + 1
        if not request.tools:  # asked for the answer: it answers, at full length
            return ChatReply(json.dumps({"findings": []}), (), "stop", prompt, 10**6)
        calls = (ToolCallRequest(f"c{len(request.messages)}", "read_file", json.dumps({"path": BIG})),)
        return ChatReply(None, calls, "tool_calls", prompt, 10**6)

    return reply


def _audit(chat: Any, areas: Sequence[str], **config: Any) -> tuple[AuditResult, LLMBrain]:
    brain = LLMBrain(LlmConfig(**config), model=chat)
    options = AuditOptions(investigators=select(list(areas)), brain=brain)
    result = anyio.run(lambda: run_audit(SeedHost({BIG: BIG_TEXT}), options=options))
    return result, brain


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    budget=st.integers(min_value=500, max_value=80_000),
    steps=st.integers(min_value=1, max_value=8),
    completion=st.integers(min_value=16, max_value=8192),
    output=st.integers(min_value=200, max_value=12_000),
    density=st.sampled_from([3.0, 3.5, 4.0, 5.0]),
    areas=st.sampled_from([("kernel",), ("kernel", "numa"), ("nccl", "p2p", "nvlink")]),
)
def test_no_setting_lets_an_audit_spend_past_its_budget(
    budget: int, steps: int, completion: int, output: int, density: float, areas: tuple[str, ...]
) -> None:
    model = ScriptedModel([], default=greedy(density))
    result, brain = _audit(
        model, areas, max_audit_tokens=budget, max_steps=steps, max_completion_tokens=completion, tool_output_chars=output
    )
    assert brain.book.total.tokens <= budget
    assert brain.book.reserved == 0  # every request settled
    assert len(result.findings) >= 1 and {f.source for f in result.findings} >= {"rules"}


def test_failed_and_retried_requests_are_paid_for_before_they_are_sent() -> None:
    with ScriptedOpenAIServer([fail(500), fail(503), fail(500)]) as server:
        model = OpenAIChatModel(
            LlmConfig(base_url=server.base_url, model="scripted", retries=2, client_retries=0, backoff_s=0.001)
        )
        book = UsageBook(1_000_000)
        request = ChatRequest(
            [{"role": "system", "content": "# t test"}, {"role": "user", "content": "x" * 3000}], agent="t", book=book
        )

        async def go() -> None:
            try:
                with pytest.raises(LlmError, match="failed 3 times"):
                    await model.complete(request)
            finally:
                await model.aclose()

        anyio.run(go)
        sent = sum(r.prompt_chars for r in server.requests)
    assert book.total.requests == 3 == book.total.failed == len(server.requests)
    assert book.total.prompt_chars == sent  # counted as the server received them
    assert book.total.prompt_tokens >= sent // 4


def test_the_budget_is_checked_when_the_request_slot_is_granted() -> None:
    """Four agents wait for one slot; each is paid for only once it holds the slot, so none overshoots."""
    with ScriptedOpenAIServer([], default=Reply(content='{"findings": []}', usage=(3000, 500), delay_s=0.05)) as server:
        areas = ("kernel", "numa", "pcie", "driver")
        config = {"base_url": server.base_url, "model": "scripted", "max_parallel": 1, "max_audit_tokens": 9000}
        result, brain = _audit(None, areas, **config)
    answered = [r.area for r in result.investigators if r.llm == "answered"]
    assert brain.book.total.tokens <= 9000 and len(server.requests) == brain.book.total.requests
    assert 1 <= len(answered) < len(areas)
    assert result.llm is not None and result.llm.status == "degraded"
    assert any("token budget (9,000) ran out" in p for p in result.llm.problems)


def test_an_agent_near_the_budget_answers_instead_of_losing_its_work() -> None:
    model = ScriptedModel([], default=greedy(4.0))
    _, brain = _audit(model, ("kernel",), max_audit_tokens=12_000, max_steps=6, max_completion_tokens=512)
    run = brain.runs["kernel"]
    assert run.budget_final and brain.book.total.tokens <= 12_000
    assert model.requests[-1].tools == () and model.requests[-1].json_schema is not None  # asked for the answer
    assert brain.failures == {}  # it answered


def test_the_reservation_refuses_what_the_budget_cannot_pay_and_shrinks_the_answer() -> None:
    book = UsageBook(1000)
    ticket = book.reserve("a", 2400, 2048)  # 800 tokens of prompt and the template's: the rest for the answer
    assert ticket.prompt_estimate == 800 + TEMPLATE_TOKENS and ticket.max_tokens == 200 - TEMPLATE_TOKENS
    assert book.remaining() == 0
    with pytest.raises(BudgetExhausted):
        book.reserve("b", 30, 100)
    ticket.settle(700, 150)
    assert book.total.tokens == 850 and book.remaining() == 150 and book.reserved == 0
    book.reserve("c", 30, 100).fail()
    assert book.total.failed == 1 and book.total.completion_tokens == 150


def test_old_tool_results_are_cut_so_cost_grows_linearly() -> None:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    sizes = []
    for round_ in range(12):
        messages.append({"role": "assistant", "content": "", "tool_calls": [{"id": f"c{round_}", "type": "function"}]})
        messages.append({"role": "tool", "tool_call_id": f"c{round_}", "content": "y" * 3000})
        compact(messages)
        sizes.append(len(json.dumps(messages)))
    growth = [b - a for a, b in itertools.pairwise(sizes)]
    assert max(sizes) < 3000 + 2400 + 12 * 200  # the last result whole, the earlier ones bounded
    assert growth[-1] < 300  # late rounds add only their call and a dropped line, not their results
    assert DROPPED in json.dumps(messages)
    assert messages[-1]["content"] == "y" * 3000


def test_a_tool_round_resends_a_compact_opening() -> None:
    model = ScriptedModel([call("read_file", path="/proc/cmdline"), final({"findings": []})])
    _audit(model, ("driver",))
    first, second = (request_chars(r) for r in model.requests)
    (system1, user1), (system2, user2) = ((r.messages[0]["content"], r.messages[1]["content"]) for r in model.requests)
    assert "## What to read" in system1 and "## What to read" not in system2  # the reads are done
    assert "## Judging" in system2 and "## Pitfalls" in system2 and SAFETY_PREAMBLE in system2  # how to judge stays
    assert "Evidence the rules read" in user1 and "Evidence the rules read" not in user2
    checks = {f["check"] for f in rule_findings(["driver"])}
    assert all(check in user2 for check in checks)  # every rule finding is named again
    assert second < first  # the round's result included


def test_waiting_for_a_request_slot_is_not_the_agents_time() -> None:
    """Six agents, one slot, 0.6 s a request: the last waits 3 s or more, past its 3 s, and still answers."""
    slow_answer = Reply(content='{"findings": []}', delay_s=0.6)
    areas = ("kernel", "numa", "pcie", "nccl", "p2p", "nvlink")
    with ScriptedOpenAIServer({}, default=slow_answer) as server:
        config = {"base_url": server.base_url, "model": "scripted", "max_parallel": 1, "agent_time_s": 3.0}
        result, brain = _audit(None, areas, **config)
    assert brain.failures == {} and [r.llm for r in result.investigators] == ["answered"] * len(areas)
