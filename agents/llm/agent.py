"""One investigator as an agent: a bounded tool-calling loop that ends in a validated ``report_findings``.

The loop: the model reads the rule findings and evidence summary, may call tools (each call one
step), and answers either with the ``report_findings`` tool or with the JSON object as content. An
invalid answer goes back with its validation error (bounded); the last step allowed offers no
tools and asks for structured output, so a model that never stops calling tools still gets one
chance to answer before the step budget ends it. Malformed calls and unknown tools come back to
the model as errors; nothing it writes is ever run without the policy's verdict.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rigaudit.agents.investigator import AnyInvestigator
from rigaudit.agents.llm.answer import RESPONSE_FORMAT, FindingsReport, parse_report, to_findings
from rigaudit.agents.llm.client import ChatModel, ChatReply, ChatRequest, Message
from rigaudit.agents.llm.config import LlmConfig
from rigaudit.agents.llm.errors import InvalidAnswer, StepBudgetExhausted
from rigaudit.agents.llm.functions import READ_FUNCTIONS, REPORT_FUNCTION, ModelFunctions
from rigaudit.agents.llm.prompt import system_prompt, user_prompt
from rigaudit.agents.llm.usage import UsageBook
from rigaudit.tools.bounded import loads
from rigaudit.tools.model.events import EventSink, LlmExchange
from rigaudit.tools.model.finding import Finding
from rigaudit.tools.probe import Probe
from rigaudit.tools.shell import Approver


def request_chars(request: ChatRequest) -> int:
    """The prompt a request sends, in characters (messages, tool schemas, response format)."""
    sent: dict[str, Any] = {"messages": list(request.messages)}
    if request.tools:
        sent["tools"] = list(request.tools)
    if request.json_schema is not None:
        sent["response_format"] = {"type": "json_schema", "json_schema": request.json_schema}
    return len(json.dumps(sent, separators=(",", ":"), ensure_ascii=False))


def _short(text: str | None, limit: int) -> str:
    text = text or ""
    return text if len(text) <= limit else text[:limit] + "…"


@dataclass
class AgentRun:
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

    @property
    def area(self) -> str:
        return self.investigator.area

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
            {"role": "system", "content": system_prompt(self.area, self.investigator.checks)},
            {"role": "user", "content": user},
        ]

    async def _ask(self, step: int, final: bool, pending: Sequence[dict[str, Any]]) -> ChatReply:
        tools = () if final else (*READ_FUNCTIONS, REPORT_FUNCTION)
        request = ChatRequest(tuple(self.messages), tools, RESPONSE_FORMAT if final else None, self.config.max_completion_tokens)
        chars = request_chars(request)
        self.book.check(self.area, chars // 4)
        left = self.book.remaining()
        if left is not None:
            request = ChatRequest(
                request.messages, request.tools, request.json_schema, max(64, min(request.max_tokens, left - chars // 4))
            )
        reply = await self.model.complete(request)
        self.book.record(self.area, reply.prompt_tokens, reply.completion_tokens, chars)
        self.emit(
            LlmExchange(
                agent=self.area,
                request={
                    "step": step,
                    "messages": len(self.messages),
                    "prompt_chars": chars,
                    "final": final,
                    "structured": reply.structured,
                    "tool_results": list(pending),
                },
                response={
                    "content": _short(reply.content, 400),
                    "finish_reason": reply.finish_reason,
                    "attempts": reply.attempts,
                    "tool_calls": [{"name": c.name, "arguments": _short(c.arguments, 300)} for c in reply.tool_calls],
                },
                usage={
                    "prompt_tokens": reply.prompt_tokens,
                    "completion_tokens": reply.completion_tokens,
                    "total_tokens": reply.prompt_tokens + reply.completion_tokens,
                },
            )
        )
        return reply

    async def run(self) -> list[Finding]:
        tools = ModelFunctions(self.probe, approver=self.approver, output_chars=self.config.tool_output_chars)
        self.messages = self._opening()
        invalid = 0
        final = False
        pending: list[dict[str, Any]] = []
        last_error = ""
        for step in range(1, self.config.max_steps + 1):
            final = final or step == self.config.max_steps
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
