"""One investigator as an agent: a bounded tool-calling loop that ends in a validated ``report_findings``.

The loop: the model reads the rule findings and evidence summary, may call tools (each call one
step), and answers either with the ``report_findings`` tool or with the JSON object as content. An
invalid answer goes back with its validation error (bounded); the last step allowed offers no
tools and asks for structured output, so a model that never stops calling tools still gets one
chance to answer before the step budget ends it. Malformed calls and unknown tools come back to
the model as errors; nothing it writes is ever run without the policy's verdict.

Cost stays linear in the rounds: before each request the tool results of earlier rounds are cut to
a short summary (the last round stays whole; past :data:`HISTORY_CHARS` the oldest are dropped,
the model can read again), and every request is paid for in the shared budget before it is sent.
An agent whose next tool round the budget could not pay for is asked for its final answer now,
so what it read is not lost.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from rigaudit.agents.investigator import AnyInvestigator
from rigaudit.agents.llm.answer import RESPONSE_FORMAT, FindingsReport, parse_report, to_findings
from rigaudit.agents.llm.client import ChatModel, ChatReply, ChatRequest, Message, request_chars
from rigaudit.agents.llm.config import LlmConfig
from rigaudit.agents.llm.errors import InvalidAnswer, PromptTooLong, StepBudgetExhausted
from rigaudit.agents.llm.functions import READ_FUNCTIONS, REPORT_FUNCTION, ModelFunctions
from rigaudit.agents.llm.known_ids import learn_host_ids
from rigaudit.agents.llm.prompt import followup_prompt, system_prompt, user_prompt
from rigaudit.agents.llm.recording import exchange
from rigaudit.agents.llm.usage import UsageBook
from rigaudit.tools.core import record
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.files.bounded import loads
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.policy.shell import Approver
from rigaudit.tools.schema.events.sink import EventSink
from rigaudit.tools.schema.finding import Finding

SUMMARY_CHARS = 240
"""An earlier round's tool result, as resent."""
HISTORY_CHARS = 2400
"""The summaries of earlier rounds resent in all; older ones are dropped."""
MIN_SHORT_COMPLETION = 256
"""The completion limit of a request resent shorter after a refusal for length."""
SETTLED = ("ok", "not_applicable")
"""Rule verdicts a resent opening gives no judging for (the brief's bullet on such a check is left out)."""
FOLLOWUP_FINDINGS_CHARS = 1200
"""The rule findings in a resent opening."""
DROPPED = "[an earlier result, dropped to keep the conversation short; read it again if you need it]"


def shorten(messages: list[Message]) -> None:
    """After a refusal for length: every tool result cut to a summary, the oldest dropped, in place."""
    results = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
    for n, i in enumerate(reversed(results)):
        text = str(messages[i].get("content") or "")
        short = (
            DROPPED
            if n >= 4
            else text[:SUMMARY_CHARS] + ("… [cut: the server's context is short]" if len(text) > SUMMARY_CHARS else "")
        )
        messages[i] = {**messages[i], "content": short}


def compact(messages: list[Message]) -> int:
    """Cut the tool results of every round but the last to summaries, in place; returns characters saved."""
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant" and m.get("tool_calls")), default=-1)
    older = [i for i, m in enumerate(messages[:last]) if m.get("role") == "tool"]
    saved = 0
    kept = 0
    for i in reversed(older):  # newest first: they keep their summaries longest
        text = str(messages[i].get("content") or "")
        if kept >= HISTORY_CHARS:
            short = DROPPED
        elif len(text) > SUMMARY_CHARS + 80:
            short = f"{text[:SUMMARY_CHARS]}… [an earlier result: {len(text) - SUMMARY_CHARS:,} characters not resent]"
        else:
            short = text
        kept += len(short)
        if short != text:
            saved += len(text) - len(short)
            messages[i] = {**messages[i], "content": short}
    return saved


class AgentRun(Record, frozen=False):
    """One agent's conversation; ``tool_log`` keeps every tool call's summary (for tests and transcripts)."""

    investigator: AnyInvestigator
    probe: Probe
    rule_findings: list[Finding]
    model: ChatModel
    config: LlmConfig
    book: UsageBook
    emit: EventSink
    approver: Approver | None = None
    messages: list[Message] = field(default_factory=list)
    tool_log: list[dict[str, Any]] = field(default_factory=list)
    share: int | None = None
    """Tokens this agent may spend on tool rounds (the audit's budget split between its agents); its
    first request and its answer are never refused for it."""
    budget_final: bool = False
    """Whether the budget's nearness made the agent answer before its steps ran out."""
    _compacted_opening: bool = False
    _shortened: bool = False

    @property
    def area(self) -> str:
        return self.investigator.area

    def _followup(self) -> list[Message]:
        """The opening as resent once a tool round happened: the brief's judging sections and the rules of the
        session (its where-to-read sections and its bullets on settled checks left out), the problems and unknowns
        as sent, the other rule findings by id, the rules' evidence left out (the model reads again what it needs)."""
        user = followup_prompt(
            self.investigator,
            self.probe.host.name,
            self.rule_findings,
            findings_chars=min(self.config.findings_chars, FOLLOWUP_FINDINGS_CHARS),
        )
        settled = {f.check for f in self.rule_findings if f.status in SETTLED}
        system = system_prompt(self.area, followup=True, settled=settled)
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def _opening(self) -> list[Message]:
        evidence = self.probe.evidence_for(self.probe.refs)
        user = user_prompt(
            self.investigator,
            self.probe.host.name,
            evidence,
            self.rule_findings,
            evidence_chars=self.config.evidence_chars,
            findings_chars=self.config.findings_chars,
        )
        return [
            {"role": "system", "content": system_prompt(self.area)},
            {"role": "user", "content": user},
        ]

    def _request(self, final: bool) -> ChatRequest:
        tools = () if final else (*READ_FUNCTIONS, REPORT_FUNCTION)
        return ChatRequest(
            tuple(self.messages),
            tools,
            RESPONSE_FORMAT if final else None,
            self.config.max_completion_tokens,
            agent=self.area,
            book=self.book,
        )

    def _with_a_round(self, chars: int) -> tuple[int, int]:
        """A request of ``chars`` with tools and one more round after it: its characters and completion tokens."""
        return 2 * chars + self.config.tool_output_chars + 600, 2 * self.config.max_completion_tokens

    def round_tokens(self) -> int:
        """Tokens the opening with tools and one tool round after it need: less budget than this, no round."""
        opening = record.replace(self._request(final=False), messages=tuple(self._opening()))
        chars, completion = self._with_a_round(request_chars(opening))
        return self.book.estimate(chars) + completion

    def _room_for_another_round(self) -> bool:
        """Whether the budget could pay for this request with tools and, after it, one more round, within
        what is left and within this agent's fair share (so one greedy agent does not starve the others)."""
        chars = request_chars(self._request(final=False))
        after, completion = self._with_a_round(chars)
        after -= chars
        if not self.book.affordable(chars + after, completion):
            return False
        if self.share is None:
            return True
        spent = self.book.agents[self.area].tokens if self.area in self.book.agents else 0
        return spent + self.book.estimate(chars + after) + completion <= self.share

    async def _ask(self, step: int, final: bool, pending: Sequence[dict[str, Any]]) -> ChatReply:
        if compact(self.messages) or (len(self.messages) > 2 and not self._compacted_opening):
            self.messages[:2] = self._followup()
            self._compacted_opening = True
        request = self._request(final)
        started = time.monotonic()
        try:
            reply = await self.model.complete(request)
        except PromptTooLong:
            if self._shortened:
                raise
            self._shortened = True  # once: the opening compact, every tool result a summary
            self.messages[:2] = self._followup()
            self._compacted_opening = True
            shorten(self.messages)
            smaller = max(MIN_SHORT_COMPLETION, self.config.max_completion_tokens // 2)  # servers count it in the context
            request = record.replace(self._request(final), max_tokens=smaller)
            reply = await self.model.complete(request)
        self.emit(exchange(self.area, step, final, request, reply, time.monotonic() - started, pending))
        return reply

    async def run(self) -> list[Finding]:
        tools = ModelFunctions(self.probe, approver=self.approver, output_chars=self.config.tool_output_chars)
        await learn_host_ids(self.probe.host)  # before the opening: its evidence goes to the model too
        self.messages = self._opening()
        invalid = 0
        final = False
        pending: list[dict[str, Any]] = []
        last_error = ""
        for step in range(1, self.config.max_steps + 1):
            final = final or step == self.config.max_steps
            if not final and self.book.token_budget is not None and not self._room_for_another_round():
                final = True  # the budget is near: the answer now, not the work lost
                self.budget_final = True
            reply = await self._ask(step, final, pending)
            pending = []
            if reply.tool_calls:
                report, error = await self._tool_round(reply, tools, pending)
                if report is not None:
                    return to_findings(report, self.area, self.rule_findings)
                if error is not None:
                    invalid, last_error = invalid + 1, error
                    if invalid > self.config.answer_retries:
                        raise InvalidAnswer(f"no valid findings after {invalid} answers: {error}")
                continue
            try:
                return to_findings(parse_report(reply.content or ""), self.area, self.rule_findings)
            except ValueError as exc:
                if reply.finish_reason == "length":
                    exc = ValueError(f"the answer was cut at the completion limit (finish_reason length): {exc}")
                invalid, last_error = invalid + 1, str(exc)
                if invalid > self.config.answer_retries:
                    raise InvalidAnswer(f"no valid findings after {invalid} answers: {exc}") from None
                self.messages.append({"role": "assistant", "content": reply.content or ""})
                self.messages.append(
                    {
                        "role": "user",
                        "content": (
                            f"That answer is not valid: {exc}. Reply with only the JSON object "
                            '{"findings": [...]} as report_findings describes (an empty list is fine).'
                        ),
                    }
                )
                final = True
        why = f" (last problem: {last_error})" if last_error else ""
        raise StepBudgetExhausted(f"used its {self.config.max_steps} steps without a final answer{why}")

    async def _tool_round(
        self, reply: ChatReply, tools: ModelFunctions, pending: list[dict[str, Any]]
    ) -> tuple[FindingsReport | None, str | None]:
        """Answer every call of one reply; a valid ``report_findings`` ends the agent."""
        self.messages.append(
            {
                "role": "assistant",
                "content": reply.content or "",
                "tool_calls": [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": history_arguments(c.arguments)}}
                    for c in reply.tool_calls
                ],
            }
        )
        report: FindingsReport | None = None
        error: str | None = None
        for call in reply.tool_calls:
            if call.name == "report_findings":
                try:
                    report = parse_report(call.arguments)
                    text = "received"
                    summary: dict[str, Any] = {"tool": "report_findings", "findings": len(report.findings)}
                except ValueError as exc:
                    error = str(exc)
                    text = f"error: {exc}. Call report_findings again with a valid object."
                    summary = {"tool": "report_findings", "error": error[:200]}
            else:
                result = await tools.call(call.name, call.arguments)
                text, summary = result.text, result.summary or {"tool": call.name}
            self.tool_log.append(summary)
            pending.append(summary)
            self.messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
        return report, error


def history_arguments(arguments: str) -> str:
    """Arguments as sent back in the history: servers re-parse them, so malformed ones become ``{}``."""
    try:
        loads(arguments or "{}")
    except json.JSONDecodeError:
        return "{}"
    return arguments or "{}"
