"""Check the endpoint before any agent starts (or the chat's first line): its models list, then one tiny request.
A bad endpoint is one line, at once: refused, unreachable, the wrong URL, a model it does not serve, no tool
calling, or no answer within ``preflight_timeout_s``.

Without it an unreachable server, a refused key or a model the server does not serve is found by
thirteen agents at the same time, each after its retries.
"""

from __future__ import annotations

import anyio

from rigaudit.agents.llm.client import ChatRequest, OpenAIChatModel, describe_endpoint
from rigaudit.agents.llm.errors import LlmError
from rigaudit.agents.llm.usage import UsageBook

PREFLIGHT = "preflight"
"""The agent name the check's request is booked under."""
_NOOP = {
    "type": "function",
    "function": {"name": "noop", "description": "Does nothing.", "parameters": {"type": "object", "properties": {}}},
}
_PING = ChatRequest(
    (
        {"role": "system", "content": "# preflight check\n\nAnswer in one word."},
        {"role": "user", "content": "Reply with the word OK."},
    ),
    tools=(_NOOP,),
    max_tokens=64,
    agent=PREFLIGHT,
)
"""One tiny request with one tool: a server started without tool calling refuses it now, not in every agent."""


async def preflight(model: OpenAIChatModel, book: UsageBook | None = None) -> None:
    """Raise :class:`LlmError` (one line) when the endpoint cannot serve an audit or a chat."""
    import openai  # noqa: F401  (imported before the deadline starts: importing is no part of the server's answer)

    seconds = model.config.preflight_timeout_s
    try:
        with anyio.fail_after(seconds):
            await _check(model, book)
    except TimeoutError:
        where = describe_endpoint(model.config)
        raise LlmError(
            f"the LLM endpoint {where} gave no answer to its check within {seconds:g} s "
            "(a server still loading its model, or not an OpenAI-compatible one?)"
        ) from None


async def _check(model: OpenAIChatModel, book: UsageBook | None) -> None:
    import openai

    where = describe_endpoint(model.config)
    names: list[str] | None = None
    try:
        names = await model.served_models()
    except openai.APIStatusError as exc:
        if exc.status_code in (401, 403):
            raise LlmError(f"the LLM endpoint {where} refused the key (HTTP {exc.status_code}): set --api-key-env") from None
        model.problems.note("models", f"the server does not list its models (GET /models: HTTP {exc.status_code})")
    except openai.APIConnectionError as exc:
        raise LlmError(f"the LLM endpoint {where} cannot be reached: {_line(exc)} (without --llm the rules alone run)") from None
    except Exception as exc:
        model.problems.note("models", f"the server's models list is unreadable: {_line(exc)}")
    wanted = [model.config.model] + [name for _, name in model.config.area_models]
    missing = [name for name in dict.fromkeys(wanted) if name and names is not None and name not in names]
    if names is not None and missing:
        served = ", ".join(names[:6]) or "none"
        raise LlmError(f"the LLM endpoint {where} does not serve {missing[0]!r} (it serves: {served})")
    request = ChatRequest(_PING.messages, _PING.tools, max_tokens=_PING.max_tokens, agent=PREFLIGHT, book=book, retries=1)
    try:
        await model.complete(request)
    except LlmError as exc:
        hint = ""
        if "tool" in str(exc).lower() and "rejected the request" in str(exc):
            hint = " (start the server with tool calling on: see docs/llm.md)"
        raise LlmError(f"the LLM endpoint {where} failed its check: {exc}{hint}") from None


def _line(exc: BaseException) -> str:
    text = str(getattr(exc, "message", "") or exc).strip().splitlines()
    return (text[0] if text else exc.__class__.__name__)[:200]
