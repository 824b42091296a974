"""A scripted chat model for unit tests: no HTTP, no real model, every reply written down in advance.

Scripts use the same replies as the loopback server (``rigaudit.agents.llm.testing.server``: ``call``,
``final``, ``say``, ``fail``...), or :class:`ChatReply` objects, or exceptions to raise. A script is
one list, or lists by conversation key (the system prompt's title word, as the server routes).

    model = ScriptedModel([call("read_file", path="/proc/cmdline"), final({"findings": []})])
    ...
    model.assert_complete()
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from rigaudit.agents.llm.client import ChatReply, ChatRequest, ToolCallRequest, request_chars
from rigaudit.agents.llm.errors import LlmError
from rigaudit.agents.llm.testing.server import Reply, route_by_system_prompt
from rigaudit.tools.core import record

Scripted = ChatReply | Reply | BaseException | Callable[[ChatRequest], "ChatReply | Reply"]

_ids = itertools.count(1)


def to_chat_reply(reply: Reply, prompt_chars: int = 0) -> ChatReply:
    """A server-level scripted reply as the client would return it (errors raise :class:`LlmError`);
    without scripted usage its prompt counts ``prompt_chars`` / 4 tokens (100 when not given)."""
    if reply.status != 200:
        raise LlmError(f"the model server failed: HTTP {reply.status}: {reply.error or 'scripted failure'}")
    if reply.raw_body is not None:
        raise LlmError("the model server failed: malformed answer")
    calls = tuple(ToolCallRequest(f"call_{next(_ids)}", c.name, c.arguments) for c in reply.tool_calls)
    text = (reply.content or "") + "".join(c.arguments for c in reply.tool_calls)
    prompt, completion = reply.usage or (max(1, prompt_chars // 4) if prompt_chars else 100, max(1, len(text) // 4))
    return ChatReply(reply.content, calls, "tool_calls" if calls else "stop", prompt, completion)


@dataclass
class ScriptedModel:
    """A :class:`~agents.llm.client.ChatModel` that replays ``script`` and records every request."""

    script: Sequence[Scripted] | Mapping[str, Sequence[Scripted]]
    default: Scripted | None = None
    requests: list[ChatRequest] = field(default_factory=list)
    _queues: dict[str, list[Scripted]] = field(default_factory=dict, init=False)
    _keyed: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        if isinstance(self.script, Mapping):
            self._keyed = True
            self._queues = {k: list(v) for k, v in self.script.items()}
        else:
            self._queues = {"": list(self.script)}

    def key_of(self, request: ChatRequest) -> str:
        return route_by_system_prompt({"messages": list(request.messages)}) if self._keyed else ""

    def requests_for(self, key: str) -> list[ChatRequest]:
        return [r for r in self.requests if self.key_of(r) == key]

    async def complete(self, request: ChatRequest) -> ChatReply:
        """The next scripted reply; paid for in ``request.book`` first, as the real client does."""
        ticket = None
        if request.book is not None:
            ticket = request.book.reserve(request.agent or "?", request_chars(request), request.max_tokens)
        self.requests.append(request)
        queue = self._queues.get(self.key_of(request))
        item = queue.pop(0) if queue else self.default
        try:
            if item is None:
                raise AssertionError(f"ScriptedModel: no reply left for conversation {self.key_of(request)!r}")
            if isinstance(item, BaseException):
                raise item
            if callable(item):
                item = item(request)
            reply = to_chat_reply(item, request_chars(request)) if isinstance(item, Reply) else item
        except BaseException:
            if ticket is not None:
                ticket.fail()
            raise
        if ticket is not None:
            completion = min(reply.completion_tokens, ticket.max_tokens)
            ticket.settle(reply.prompt_tokens, completion)
            reply = record.replace(reply, completion_tokens=completion)
        return reply

    def assert_complete(self) -> None:
        left = {k: len(v) for k, v in self._queues.items() if v}
        assert not left, f"scripted replies never requested: {left}"
