"""LLMBrain: each investigator becomes an agent that may dig further than its rules, within budgets.

The rules' findings always stand (``rigaudit.orchestrator.audit.run`` enforces it); a failing, slow or confused
model ends only its own agent. What went wrong is kept once per distinct problem (:mod:`.problems`)
and summed up by :meth:`LLMBrain.outcome` for the audit's result: its warnings, the investigators'
``llm`` status, ``--json`` and the exit status all say when LLM mode was degraded.
"""

from __future__ import annotations

import math

import anyio

from rigaudit.agents.investigator import AnyInvestigator
from rigaudit.agents.llm.agent import AgentRun
from rigaudit.agents.llm.ask_queue import AskQueue
from rigaudit.agents.llm.client import ChatModel, OpenAIChatModel, describe_endpoint
from rigaudit.agents.llm.clock import agent_deadline
from rigaudit.agents.llm.config import LlmConfig
from rigaudit.agents.llm.errors import BudgetExhausted, LlmError
from rigaudit.agents.llm.preflight import preflight
from rigaudit.agents.llm.problems import Problems
from rigaudit.agents.llm.usage import UsageBook
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.policy.shell import Approver
from rigaudit.tools.schema.audit import AgentUsage, LlmRun, LlmStatus
from rigaudit.tools.schema.events.chat import LlmExchange, Message
from rigaudit.tools.schema.events.session import Warning_
from rigaudit.tools.schema.events.sink import EventSink, discard
from rigaudit.tools.schema.finding import Finding


def _error_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{exc.__class__.__name__}: {text[0]}" if text else exc.__class__.__name__


ROUND_HEADROOM = 1.3
"""The budget named for one tool round per agent, over the first short agent's need (openings differ by a quarter)."""


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
        self.approver = AskQueue(approver) if approver is not None else None
        """Asks the person about an agent's ``ask`` command: one question at a time, in order, the wait for a
        turn not counted against the agent (:mod:`.ask_queue`); ``None``: no one to ask, each is "no" at once."""
        self.book = book if book is not None else UsageBook(config.max_audit_tokens, prices=config.prices)
        """Usage and the token budget; pass one to share it (a chat's coordinator and its audits)."""
        self.runs: dict[str, AgentRun] = {}
        self.failures: dict[str, str] = {}
        """Areas whose agent gave no answer, and why (one line)."""
        self.problems = Problems()
        """Why agents failed, each distinct reason once."""
        self.agents_expected = 0
        """How many agents this audit runs (set by the audit): each gets a fair share of the budget for tool rounds."""
        self._ends_at: float | None = None
        self._endpoint_mark: dict[str, tuple[int, int]] = {}
        """Where the endpoint's problems stood when the last audit ended: an audit's outcome tells only its own."""
        self._told = False
        """The outcome was told: the next agent starts a new audit, with no failure and no problem yet."""
        self.budget_note: str | None = None
        """Why the agents answer without a tool round (the budget is too small for one), once per audit."""
        """When this audit's agents must all have answered (``deadline_s`` after the first one started)."""

    async def preflight(self) -> None:
        """Check the endpoint before any agent starts (the real client only): one clear line when it cannot work."""
        if isinstance(self.model, OpenAIChatModel) and self.config.preflight:
            await preflight(self.model, self.book)

    async def refine(self, investigator: AnyInvestigator, probe: Probe, rule_findings: list[Finding]) -> list[Finding]:
        area = investigator.area
        if self._told:  # a chat's next audit with this brain
            self.failures, self.problems, self.runs, self._told = {}, Problems(), {}, False
        run = AgentRun(investigator, probe, list(rule_findings), self.model, self.config, self.book, self.emit, self.approver)
        if self.book.token_budget is not None and self.agents_expected > 0:
            run.share = self.book.token_budget // self.agents_expected
        self.runs[area] = run
        self._check_budget(run)
        if self._ends_at is None:
            self._ends_at = anyio.current_time() + self.config.deadline_s
        found: list[Finding] | None = None
        try:
            with anyio.CancelScope(deadline=self._ends_at) as audit_scope:  # all agents together: never paused
                with agent_deadline(self.config.agent_time_s):  # queueing for a request slot is not counted
                    found = await run.run()
        except LlmError as exc:
            self._failed(area, str(exc), "budget" if isinstance(exc, BudgetExhausted) else str(exc))
            raise
        except Exception as exc:  # not one of ours (a library's error, a bug): the agent is lost all the same
            why = _error_line(exc)
            self._failed(area, why, why)
            raise LlmError(why) from exc
        if found is None and audit_scope.cancel_called:
            why = f"deadline: no answer within the audit's LLM deadline of {self.config.deadline_s:g} s (--llm-deadline)"
            self._failed(area, why, "deadline")
            raise LlmError(why)
        if found is None:
            why = f"no final answer within {self.config.agent_time_s:g} s"
            self._failed(area, why, "timeout")
            raise LlmError(why)
        return found

    def _check_budget(self, run: AgentRun) -> None:
        """Before the first agent the budget cannot give one tool round: one line naming the budget needed."""
        budget = self.book.token_budget
        if budget is None or self.budget_note is not None:
            return
        agents = max(1, self.agents_expected)
        need = run.round_tokens()
        left = self.book.remaining() or 0  # a chat's audits share the conversation's budget
        if min(left, run.share if run.share is not None else budget) >= need:
            return
        enough = math.ceil(need * ROUND_HEADROOM * agents / 1000) * 1000  # agents' openings differ in size
        self.budget_note = (
            f"the token budget ({budget:,}) is too small for one tool round per agent: give about {enough:,} "
            f"(--llm-max-tokens {enough}) for {agents} agent{'s' if agents > 1 else ''}; "
            "until then they answer from what the rules read"
        )
        self.emit(Warning_(text=f"LLM: {self.budget_note}"))

    def _failed(self, area: str, why: str, key: str) -> None:
        self.failures[area] = why
        text = (
            f"the audit's token budget ({self.book.token_budget:,}) ran out before these agents answered"
            if key == "budget"
            else f"the audit's LLM deadline ({self.config.deadline_s:g} s, --llm-deadline) passed before these agents answered"
            if key == "deadline"
            else why
        )
        self.problems.note(f"agent:{key}", f"agents gave no answer, their rule findings stand: {text}", agent=area)

    def outcome(self, areas: int) -> LlmRun:
        """What LLM mode did in this audit of ``areas`` investigators, and only in it: the next audit (a chat runs
        several with one brain) starts with no failure, no problem and a deadline of its own."""
        self._ends_at = None
        endpoint = getattr(self.model, "problems", None)
        since = endpoint.since(self._endpoint_mark) if isinstance(endpoint, Problems) else Problems()
        if isinstance(endpoint, Problems):
            self._endpoint_mark = endpoint.mark()
            endpoint.told(key for key, p in since.items.items() if p.degrading)  # the audit's warnings tell them
        degrading = self.problems.lines() + since.lines(degrading=True)
        notes = since.lines(degrading=False)
        if self.budget_note is not None:
            notes.insert(0, self.budget_note)
            self.budget_note = None
        failed = tuple(sorted(self.failures))
        self._told = True
        status: LlmStatus = "ok"
        if areas and len(failed) >= areas:
            status = "failed"
        elif degrading:
            status = "degraded"
        return LlmRun(
            endpoint=describe_endpoint(self.config),
            status=status,
            agents=areas,
            failed=failed,
            problems=tuple(degrading),
            notes=tuple(notes),
            usage=self.book.total.as_dict(),
            cost_usd=self.book.total_cost(),
            by_agent={
                a: AgentUsage(model=u.model, usage=u.as_dict(), cost_usd=self.book.cost(a))
                for a, u in sorted(self.book.agents.items())
            },
        )

    def usage_lines(self) -> list[str]:
        return self.book.lines()

    def report_usage(self, emit: EventSink | None = None) -> None:
        """Record the totals (an ``LlmExchange`` of agent ``total``) and show them (a system message)."""
        emit = emit or self.emit
        emit(LlmExchange(agent="total", usage=self.book.total.as_dict(), cost_usd=self.book.total_cost()))
        endpoint = getattr(self.model, "problems", None)
        notes = [f"  handled: {line}" for line in endpoint.lines(degrading=False)] if isinstance(endpoint, Problems) else []
        emit(Message(role="system", text="\n".join(self.usage_lines() + notes)))

    async def aclose(self) -> None:
        close = getattr(self.model, "aclose", None)
        if close is not None:
            await close()
