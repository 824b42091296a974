"""What the model is shown of a command's output or a file is redacted as the share bundle redacts it: an
environment a person let the model print (``env``, ``printenv``), or a unit's that ``systemctl show`` prints,
by the allow-list, so a value with no known shape under a name that says nothing
(``CUSTOM_SETTING=opaquevalue123``) never reaches the model, while the settings the checks read stay."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest

from rigaudit.agents.llm import LLMBrain, LlmConfig
from rigaudit.agents.llm.prompt import value_of
from rigaudit.agents.llm.testing import ScriptedModel
from rigaudit.agents.llm.testing.server import call, final
from rigaudit.agents.registry import select
from rigaudit.orchestrator.audit.run import AuditOptions, run_audit
from rigaudit.tools.hosts.base import CommandResult
from rigaudit.tools.policy.verdict import Verdict
from rigaudit.tools.redact import REDACTED
from rigaudit.tools.schema.evidence import Evidence
from tests.test_llm_support import SeedHost

ENVIRONMENT = "CUSTOM_SETTING=opaquevalue123\nNCCL_DEBUG=INFO\nCUDA_VISIBLE_DEVICES=0,1\n"


class PrintingHost(SeedHost):
    """The seed, where ``env`` and ``printenv`` print :data:`ENVIRONMENT`, and ``systemctl show`` a unit's."""

    async def run(self, argv: Sequence[str], *, timeout_s: float = 10.0) -> CommandResult:
        if tuple(argv)[:1] in (("env",), ("printenv",)):
            self.ran.append(tuple(argv))
            return CommandResult(tuple(argv), 0, ENVIRONMENT, "", 0.01)
        if tuple(argv)[:2] == ("systemctl", "show"):
            self.ran.append(tuple(argv))
            return CommandResult(tuple(argv), 0, "Environment=" + " ".join(ENVIRONMENT.split()) + "\n", "", 0.01)
        return await super().run(argv, timeout_s=timeout_s)


async def _yes(verdict: Verdict) -> bool:
    return True


@pytest.mark.parametrize("command", ["env", "printenv", "systemctl show vllm -p Environment"])
def test_an_environment_the_model_printed_is_redacted_by_the_allow_list(command: str) -> None:
    model = ScriptedModel([call("shell", command=command), final({"findings": []})])
    brain = LLMBrain(LlmConfig(), model=model, approver=_yes)  # env asks a person; systemctl show is allowed
    host = PrintingHost()
    anyio.run(lambda: run_audit(host, options=AuditOptions(investigators=select(["kernel"]), brain=brain)))
    assert tuple(command.split()) in host.ran
    shown = next(str(m["content"]) for m in model.requests[1].messages if m["role"] == "tool")
    assert "opaquevalue123" not in shown and f"CUSTOM_SETTING={REDACTED}" in shown
    assert "NCCL_DEBUG=INFO" in shown and "CUDA_VISIBLE_DEVICES=0,1" in shown  # what the checks read stays


def test_the_prompts_evidence_is_redacted_as_the_bundle_redacts_it() -> None:
    printed = Evidence(ref="cmd:printenv", kind="command", source="printenv", ok=True, raw=ENVIRONMENT)
    shown = value_of(printed, 400)
    assert "opaquevalue123" not in shown and "NCCL_DEBUG=INFO" in shown
