"""LLMBrain: each investigator becomes an agent that may dig further than its rules, within budgets.

The rules' findings always stand (``rigaudit.orchestrator.audit`` enforces it); a failing, slow or confused
model ends only its own agent, with a one-line reason the audit shows as a warning.
"""

from __future__ import annotations

import anyio

from rigaudit.agents.investigator import AnyInvestigator
from rigaudit.agents.llm.agent import AgentRun
from rigaudit.agents.llm.client import ChatModel, OpenAIChatModel
from rigaudit.agents.llm.config import LlmConfig
from rigaudit.agents.llm.errors import LlmError
from rigaudit.agents.llm.usage import UsageBook
from rigaudit.tools.model.events import EventSink, LlmExchange, Message, discard
from rigaudit.tools.model.finding import Finding
from rigaudit.tools.probe import Probe
from rigaudit.tools.shell import Approver


class LLMBrain:
    """A :class:`~agents.brain.Brain` over any chat model (the real client by default)."""

    def __init__(
        self,
        config: LlmConfig,
        *,
        model: ChatModel | None = None,
        emit: EventSink | None = None,
        approver: Approver | None = None,
        book: UsageBook | None = None,
    ) -> None:
        self.config = config
        self.model: ChatModel = model if model is not None else OpenAIChatModel(config)
        self.emit: EventSink = emit or discard
        """Where LlmExchange events go; settable, so a brain can be built before its session."""
        self.approver = approver
        self.book = book if book is not None else UsageBook(config.max_audit_tokens)
        """Usage and the token budget; pass one to share it (a chat's coordinator and its audits)."""
        self.runs: dict[str, AgentRun] = {}

    async def refine(self, investigator: AnyInvestigator, probe: Probe, rule_findings: list[Finding]) -> list[Finding]:
        run = AgentRun(investigator, probe, list(rule_findings), self.model, self.config, self.book, self.emit, self.approver)
        self.runs[investigator.area] = run
        try:
            with anyio.fail_after(self.config.agent_time_s):
                return await run.run()
        except TimeoutError:
            raise LlmError(f"no final answer within {self.config.agent_time_s:g} s") from None

    def usage_lines(self) -> list[str]:
        return self.book.lines()

    def report_usage(self, emit: EventSink | None = None) -> None:
        """Record the totals (an ``LlmExchange`` of agent ``total``) and show them (a system message)."""
        emit = emit or self.emit
        emit(LlmExchange(agent="total", usage=self.book.total.as_dict()))
        emit(Message(role="system", text="\n".join(self.usage_lines())))

    async def aclose(self) -> None:
        close = getattr(self.model, "aclose", None)
        if close is not None:
            await close()
