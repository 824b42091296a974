"""One brain, two audits (as a chat runs them): the second audit's LLM outcome tells only what happened in it."""

from __future__ import annotations

import anyio

from rigaudit.agents.llm import LLMBrain, LlmConfig
from rigaudit.agents.llm.testing.server import ScriptedOpenAIServer, fail, final
from rigaudit.orchestrator.audit.run import AuditOptions, run_audit
from rigaudit.tools.schema.audit import AuditResult
from tests.test_llm_support import SeedHost

AREAS = ["kernel", "numa"]


def test_an_agent_lost_in_one_audit_is_not_lost_in_the_next() -> None:
    with ScriptedOpenAIServer(
        {"kernel": [fail(400, "unknown field: parallel_tool_calls")]}, default=final({"findings": []})
    ) as server:
        brain = LLMBrain(LlmConfig(base_url=server.base_url, model="scripted"))

        async def twice() -> tuple[AuditResult, AuditResult]:
            try:
                options = AuditOptions(brain=brain, areas=AREAS)
                return await run_audit(SeedHost(), options=options), await run_audit(SeedHost(), options=options)
            finally:
                await brain.aclose()

        first, second = anyio.run(twice)
    assert first.llm is not None and first.llm.failed == ("kernel",) and first.llm.status == "degraded"
    assert second.llm is not None
    assert (second.llm.status, second.llm.failed, second.llm.problems) == ("ok", (), ())
