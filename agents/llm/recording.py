"""An exchange with the model, recorded whole: what was sent, what came back, how long it took, what it cost.

A transcript holds one :class:`~tools.schema.events.chat.LlmExchange` per request an agent made. Its
``request`` has every message as sent (the prompt was redacted before it left; the transcript's writer
redacts again), the tools offered by name, the answer format, the completion limit and a digest of the
messages, and the model it went to; its ``response`` has the content and every tool call whole, the finish reason, the server's
request id and the latency. One exchange keeps at most :data:`RECORD_CHARS` characters of message text: a
longer one keeps the start of each message and says ``"cut": true`` (such an exchange still replays,
its digest is of what was sent).

:class:`RecordedModel` answers an agent's requests from those exchanges, in order, with no server:
``rigaudit replay FILE --rediagnose`` re-runs the agents with it. A request whose messages differ from
the recorded ones (a changed prompt, or a rule whose findings changed what the agent is told) is still
answered, and noted in :attr:`RecordedModel.changed`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rigaudit.agents.llm.client import ChatReply, ChatRequest, Message, ToolCallRequest, request_chars
from rigaudit.agents.llm.errors import LlmError
from rigaudit.tools.schema.events.chat import LlmExchange

RECORD_CHARS = 400_000
"""Message text one recorded exchange keeps (the audit prompt's bound is 150,000 characters)."""
CUT = "\n[cut: the recording keeps the start of each message]"


def messages_digest(messages: Sequence[Message]) -> str:
    """The digest of a request's messages as sent (what a replay compares)."""
    text = json.dumps(list(messages), sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _bounded(messages: Sequence[Message]) -> tuple[list[Message], bool]:
    total = sum(len(str(m.get("content") or "")) for m in messages)
    if total <= RECORD_CHARS:
        return [dict(m) for m in messages], False
    share = max(200, RECORD_CHARS // max(1, len(messages)))
    kept: list[Message] = []
    for message in messages:
        content = message.get("content")
        long = isinstance(content, str) and len(content) > share
        kept.append({**message, "content": str(content)[:share] + CUT} if long else dict(message))
    return kept, True


def _tool_name(tool: Mapping[str, Any]) -> str:
    function = tool.get("function")
    return str(function.get("name", "?")) if isinstance(function, Mapping) else str(tool.get("name", "?"))


def exchange(
    area: str, step: int, final: bool, request: ChatRequest, reply: ChatReply, latency_s: float, results: Iterable[Any]
) -> LlmExchange:
    """The event of one request ``area``'s agent made at ``step``, and its reply."""
    messages, cut = _bounded(request.messages)
    return LlmExchange(
        agent=area,
        request={
            "step": step,
            "model": reply.model,
            "messages": len(request.messages),
            "prompt_chars": request_chars(request),
            "final": final,
            "structured": reply.structured,
            "tool_results": list(results),
            "sent": messages,
            "digest": messages_digest(request.messages),
            "cut": cut,
            "tools": [_tool_name(t) for t in request.tools],
            "json_schema": (request.json_schema or {}).get("name", "") if request.json_schema else "",
            "max_tokens": request.max_tokens,
        },
        response={
            "content": reply.content,
            "finish_reason": reply.finish_reason,
            "attempts": reply.attempts,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.tool_calls],
            "response_format": reply.response_format,
            "usage_reported": reply.usage_reported,
            "request_id": reply.request_id,
            "latency_s": round(latency_s, 4),
        },
        usage={
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    )


def _reply(event: LlmExchange) -> ChatReply:
    response = event.response
    calls = tuple(
        ToolCallRequest(str(c.get("id", "")), str(c.get("name", "")), str(c.get("arguments", "")))
        for c in response.get("tool_calls", ())
        if isinstance(c, Mapping)
    )
    content = response.get("content")
    return ChatReply(
        content=content if isinstance(content, str) else None,
        tool_calls=calls,
        finish_reason=response.get("finish_reason") if isinstance(response.get("finish_reason"), str) else None,
        prompt_tokens=int(event.usage.get("prompt_tokens", 0)),
        completion_tokens=int(event.usage.get("completion_tokens", 0)),
        structured=bool(event.request.get("structured", False)),
        attempts=1,
        response_format=response.get("response_format") if isinstance(response.get("response_format"), str) else None,
        usage_reported=bool(response.get("usage_reported", True)),
        request_id=str(response.get("request_id") or ""),
        model=str(event.request.get("model") or ""),
    )


def replayable(events: Iterable[object]) -> list[LlmExchange]:
    """The agents' recorded exchanges (the totals and the chat's own left out) that hold a whole reply."""
    return [e for e in events if isinstance(e, LlmExchange) and "sent" in e.request and e.agent not in ("total", "chat")]


class RecordedModel:
    """A :class:`~agents.llm.client.ChatModel` that answers each agent from its recorded exchanges, in order."""

    def __init__(self, exchanges: Iterable[LlmExchange]) -> None:
        self._queues: dict[str, list[LlmExchange]] = {}
        for event in exchanges:
            self._queues.setdefault(event.agent, []).append(event)
        self.changed: list[str] = []
        """One line per request whose messages differ from the recorded request's."""
        self.unanswered: list[str] = []
        """Agents that asked more than the recording holds."""

    async def complete(self, request: ChatRequest) -> ChatReply:
        queue = self._queues.get(request.agent)
        if not queue:
            self.unanswered.append(request.agent)
            raise LlmError(f"the recording holds no further answer for the {request.agent or '?'} agent")
        event = queue.pop(0)
        step = event.request.get("step", "?")
        if not event.request.get("cut") and messages_digest(request.messages) != event.request.get("digest"):
            self.changed.append(f"{request.agent} step {step}: the request differs from the recorded one")
        reply = _reply(event)
        if request.book is not None:  # paid for as it was, so budgets decide as they did
            chars = request_chars(request)
            ticket = request.book.reserve(request.agent or "?", chars, request.max_tokens, model=reply.model)
            ticket.settle(reply.prompt_tokens, min(reply.completion_tokens, ticket.max_tokens))
        return reply

    def left(self) -> dict[str, int]:
        """Recorded answers no request asked for, by agent."""
        return {agent: len(queue) for agent, queue in self._queues.items() if queue}

    async def aclose(self) -> None:
        """Nothing to close: no connection was opened."""
