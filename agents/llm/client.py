"""The chat model an agent talks to: a small protocol, and its implementation over ``openai.AsyncOpenAI``.

Real servers (vLLM, SGLang, Ollama, llama.cpp, OpenAI) differ and fail: the client retries 429/5xx
(honouring ``retry-after``), then our own bounded loop backs off and tries again, a timeout is a
retry too, a server that rejects ``response_format`` json_schema is remembered and asked without
it, and a malformed answer is retried. What cannot be fixed by retrying ends with one clear line.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import anyio.lowlevel

from rigaudit.agents.llm.config import LlmConfig
from rigaudit.agents.llm.errors import LlmError
from rigaudit.agents.llm.guard import ensure_allowed
from rigaudit.tools.redact import redact_json, redact_text

Message = dict[str, Any]


@dataclass(frozen=True)
class ToolCallRequest:
    """A tool call as the model wrote it; ``arguments`` is its raw text (maybe not JSON)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ChatRequest:
    messages: Sequence[Message]
    tools: Sequence[dict[str, Any]] = ()
    json_schema: dict[str, Any] | None = None
    """``{"name": ..., "schema": {...}}``: structured output for the answer, when the server supports it."""
    max_tokens: int = 2048


@dataclass(frozen=True)
class ChatReply:
    content: str | None
    tool_calls: tuple[ToolCallRequest, ...] = ()
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    structured: bool = False
    """Whether the request went out with ``response_format`` json_schema."""
    attempts: int = 1


class ChatModel(Protocol):
    """Anything that answers a chat request: the real client, or a scripted model in tests."""

    async def complete(self, request: ChatRequest) -> ChatReply: ...


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


@dataclass
class _Accumulated:
    content: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    finish: str | None = None
    usage: tuple[int, int] | None = None


class OpenAIChatModel:
    """Chat completions with tool calling over any OpenAI-compatible endpoint."""

    def __init__(self, config: LlmConfig) -> None:
        ensure_allowed(config.base_url)
        self.config = config
        self.model = config.model
        self.json_schema_ok = config.json_schema
        self._client: Any = None
        self._loop: object = None
        self._limiter = anyio.CapacityLimiter(max(1, config.max_parallel))
        self._model_lock: anyio.Lock | None = None
        self.broken: str | None = None
        """Why this endpoint cannot work (unreachable, key refused, wrong URL): later requests fail at once."""

    # -- the client -------------------------------------------------------------------------

    def _openai(self) -> Any:
        """One AsyncOpenAI per event loop (its connection pool belongs to the loop)."""
        loop = anyio.lowlevel.current_token().native_token
        if self._client is None or self._loop is not loop:
            import openai

            ensure_allowed(self.config.base_url)
            self._client = openai.AsyncOpenAI(
                base_url=self.config.base_url,
                api_key=self.config.api_key or "not-needed",
                timeout=self.config.request_timeout_s,
                max_retries=max(0, self.config.client_retries),
            )
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    async def _model_name(self) -> str:
        if self.model:
            return self.model
        if self._model_lock is None:
            self._model_lock = anyio.Lock()
        async with self._model_lock:
            if not self.model:
                try:
                    listing = await self._openai().models.list()
                    names = [m.id for m in listing.data]
                except Exception as exc:
                    raise _Fatal(f"no --model given and the server's models cannot be listed: {_one_line(exc)}") from None
                if len(names) != 1:
                    raise _Fatal(
                        f"no --model given and the server serves {len(names)} models ({', '.join(names[:5])}): choose one"
                    )
                self.model = names[0]
        return self.model

    # -- one request ------------------------------------------------------------------------

    def _kwargs(self, request: ChatRequest, model: str, structured: bool) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": model, "messages": redact_json(list(request.messages))}
        token_key = (
            "max_tokens" if self.config.base_url and "api.openai.com" not in self.config.base_url else "max_completion_tokens"
        )
        kwargs[token_key] = request.max_tokens
        if request.tools:
            kwargs["tools"] = list(request.tools)
        if structured and request.json_schema is not None:
            kwargs["response_format"] = {"type": "json_schema", "json_schema": request.json_schema}
        if self.config.temperature is not None:
            kwargs["temperature"] = self.config.temperature
        if self.config.stream:
            kwargs["stream"] = True
            kwargs["stream_options"] = {"include_usage": True}
        return kwargs

    async def complete(self, request: ChatRequest) -> ChatReply:
        if self.broken is not None:
            raise LlmError(f"{self.broken} (not tried again)")
        try:
            return _redacted(await self._complete(request))
        except _Fatal as exc:
            self.broken = str(exc)
            raise LlmError(self.broken) from None

    async def _complete(self, request: ChatRequest) -> ChatReply:
        import openai

        model = await self._model_name()
        attempt = 0
        last_error = ""
        while True:
            structured = self.json_schema_ok and request.json_schema is not None
            try:
                async with self._limiter:
                    reply = await self._send(self._kwargs(request, model, structured), request)
                return ChatReply(
                    reply.content,
                    reply.tool_calls,
                    reply.finish_reason,
                    reply.prompt_tokens,
                    reply.completion_tokens,
                    structured,
                    attempt + 1,
                )
            except openai.APIStatusError as exc:
                status = exc.status_code
                if structured and status in (400, 415, 422, 501):
                    self.json_schema_ok = False  # no structured output here (or not this schema): ask plainly from now on
                    continue
                if status in (401, 403):
                    raise _Fatal(
                        f"the model server refused the key (HTTP {status}): set the key's variable (--api-key-env)"
                    ) from None
                if status == 404:
                    raise _Fatal(
                        f"HTTP 404 from {self.config.base_url}: is the URL the server's .../v1 and {model!r} served there?"
                    ) from None
                if status not in (408, 429) and status < 500:
                    raise LlmError(f"the model server rejected the request: HTTP {status}: {_one_line(exc)}") from None
                last_error = f"HTTP {status}: {_one_line(exc)}"
            except openai.APITimeoutError:
                last_error = f"no answer within {self.config.request_timeout_s:g} s"
            except openai.APIConnectionError as exc:
                last_error = f"cannot reach {self.config.base_url or 'OpenAI'}: {_one_line(exc)}"
                if attempt >= self.config.retries:
                    raise _Fatal(f"the model server failed {attempt + 1} times: {last_error}") from None
            except (openai.APIResponseValidationError, ValueError, KeyError, TypeError, AttributeError) as exc:
                last_error = f"malformed answer: {_one_line(exc)}"
            if attempt >= self.config.retries:
                raise LlmError(f"the model server failed {attempt + 1} times: {last_error}")
            await anyio.sleep(min(self.config.backoff_cap_s, self.config.backoff_s * 2**attempt))
            attempt += 1

    async def _send(self, kwargs: dict[str, Any], request: ChatRequest) -> ChatReply:
        client = self._openai()
        if kwargs.get("stream"):
            stream = await client.chat.completions.create(**kwargs)
            acc = _Accumulated()
            async for chunk in stream:
                _absorb(acc, chunk)
            calls = tuple(
                ToolCallRequest(c.get("id") or f"call_{i}", c.get("name", ""), c.get("arguments", ""))
                for i, c in sorted(acc.calls.items())
            )
            content = "".join(acc.content) or None
            prompt, completion = acc.usage or (_prompt_estimate(kwargs), _estimate_tokens((content or "") + str(calls)))
            return ChatReply(content, calls, acc.finish, prompt, completion)
        completion_obj = await client.chat.completions.create(**kwargs)
        choices = getattr(completion_obj, "choices", None)
        if not choices:
            raise ValueError("the answer has no choices")
        message = choices[0].message
        tool_calls = tuple(
            ToolCallRequest(str(c.id or f"call_{i}"), str(c.function.name or ""), str(c.function.arguments or ""))
            for i, c in enumerate(message.tool_calls or [])
            if getattr(c, "function", None) is not None
        )
        usage = completion_obj.usage
        content = message.content if isinstance(message.content, str) else None
        if usage is not None:
            prompt, completion = int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0)
        else:
            prompt, completion = _prompt_estimate(kwargs), _estimate_tokens((content or "") + str(tool_calls))
        return ChatReply(content, tool_calls, choices[0].finish_reason, prompt, completion)


def _redacted(reply: ChatReply) -> ChatReply:
    """What the model said, secrets redacted (it may echo one): every later reader gets it so."""
    calls = tuple(dataclasses.replace(c, arguments=redact_text(c.arguments)) for c in reply.tool_calls)
    content = redact_text(reply.content) if reply.content is not None else None
    return dataclasses.replace(reply, content=content, tool_calls=calls)


class _Fatal(LlmError):
    """An endpoint error that retrying cannot fix, for this request or any later one."""


def _absorb(acc: _Accumulated, chunk: Any) -> None:
    usage = getattr(chunk, "usage", None)
    if usage is not None:
        acc.usage = (int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0))
    for choice in getattr(chunk, "choices", None) or []:
        delta = choice.delta
        if delta is not None and isinstance(delta.content, str):
            acc.content.append(delta.content)
        for piece in (delta.tool_calls if delta is not None else None) or []:
            slot = acc.calls.setdefault(int(piece.index or 0), {})
            if piece.id:
                slot["id"] = piece.id
            function = piece.function
            if function is not None:
                if function.name:
                    slot["name"] = slot.get("name", "") + function.name
                if function.arguments:
                    slot["arguments"] = slot.get("arguments", "") + function.arguments
        if choice.finish_reason:
            acc.finish = choice.finish_reason


def _prompt_estimate(kwargs: dict[str, Any]) -> int:
    return _estimate_tokens(json.dumps(kwargs.get("messages", []), default=str))


def _one_line(exc: BaseException) -> str:
    text = str(getattr(exc, "message", "") or exc).strip().splitlines()
    return (text[0] if text else exc.__class__.__name__)[:300]


def describe_endpoint(config: LlmConfig) -> str:
    """``model at URL`` for messages (never the key)."""
    return f"{config.model or 'the server’s only model'} at {config.base_url or 'OpenAI'}"
