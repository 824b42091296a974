"""A token budget too small for one tool round is said in one line before the agents start, naming the budget
needed; given that budget, every agent gets its tool round (against the scripted loopback server)."""

from __future__ import annotations

import re

import anyio

from rigaudit.agents.llm import LLMBrain, LlmConfig
from rigaudit.agents.llm.testing.server import ScriptedOpenAIServer, final
from rigaudit.orchestrator.audit.run import AuditOptions, run_audit
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.events.chat import LlmExchange
from rigaudit.tools.schema.events.session import Warning_
from rigaudit.tools.schema.events.union import Event
from tests.test_llm_support import SeedHost, rule_findings

AREAS = ["driver", "nccl", "kernel"]
"""The largest and the smallest opening of the seed, and one between."""


def _audit(budget: int) -> tuple[AuditResult, list[Event], dict[str, bool]]:
    events: list[Event] = []
    with ScriptedOpenAIServer({}, default=final({"findings": []})) as server:
        brain = LLMBrain(LlmConfig(base_url=server.base_url, model="scripted", max_audit_tokens=budget), emit=events.append)

        async def audit() -> AuditResult:
            try:
                return await run_audit(SeedHost(), options=AuditOptions(brain=brain, areas=AREAS), emit=events.append)
            finally:
                await brain.aclose()

        result = anyio.run(audit)
        tools = {area: bool(server.requests_for(area)[0].body.get("tools")) for area in AREAS}
    return result, events, tools


def test_a_budget_too_small_for_a_tool_round_is_one_line_first_naming_what_is_needed() -> None:
    result, events, tools = _audit(20_000)
    said = [e.text for e in events if isinstance(e, Warning_) and "too small for one tool round" in e.text]
    assert len(said) == 1, said
    first_request = next(i for i, e in enumerate(events) if isinstance(e, LlmExchange))
    assert events.index(next(e for e in events if isinstance(e, Warning_))) < first_request  # before the agents ask
    assert said[0].startswith("LLM: the token budget (20,000) is too small for one tool round per agent: give about ")
    assert tools == dict.fromkeys(AREAS, False)  # each answers at once, from what the rules read
    assert result.llm is not None and result.llm.status == "ok" and result.llm.notes[0] == said[0].removeprefix("LLM: ")
    assert [f.model_dump(mode="json") for f in result.findings] == rule_findings(AREAS)
    named = re.search(r"--llm-max-tokens (\d+)\) for 3 agents", said[0])
    assert named is not None

    enough, events, tools = _audit(int(named.group(1)))
    assert not [e for e in events if isinstance(e, Warning_)]
    assert tools == dict.fromkeys(AREAS, True)  # the budget named gives every agent its tool round
    assert enough.llm is not None and enough.llm.notes == ()
