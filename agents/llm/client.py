"""The chat model an agent talks to: a small protocol, and its implementation over ``openai.AsyncOpenAI``.

Real servers (vLLM, SGLang, Ollama, llama.cpp, TGI, LiteLLM, OpenAI) differ and fail; every request
this client sends is paid for first (``ChatRequest.book``: the budget is checked once a request slot
is granted, failed and retried requests included), and:

- 429/5xx, timeouts, malformed answers and error events in a stream are retried by our own bounded loop (honouring
  ``retry-after``; the openai client's hidden retries are off, so every try is counted); a 429 holds
  every agent's requests back at one shared pace (:mod:`~rigaudit.agents.llm.rate`);
- a refused ``response_format`` (400, 415, 422, 500, 501) falls back for that request only:
  ``json_schema``, then ``json_object``, then plain JSON asked in words;
- ``finish_reason: length`` is retried once with twice the room;
- reasoning (``<think>`` blocks, ``reasoning_content``) is cut, tool calls written as text
  (``<tool_call>``, ``<|python_tag|>``, ``[TOOL_CALLS]``, bare JSON) are parsed into tool calls,
  arguments sent as objects become JSON text, content sent as a list of parts is joined
  (:mod:`~rigaudit.agents.llm.wire`);
- a server that counts far fewer prompt tokens than were sent (Ollama truncating to ``num_ctx``) is
  reported; a server that asks for ``max_completion_tokens`` instead of ``max_tokens`` is asked so;
- streamed tool calls are told apart by ``index``, else by id (Gemini's compatibility layer sends none);
- each distinct endpoint problem is recorded once in :attr:`OpenAIChatModel.problems`.

What cannot be fixed by retrying ends with one clear line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.lowlevel

from rigaudit.agents.llm.clock import paused
from rigaudit.agents.llm.config import LlmConfig
from rigaudit.agents.llm.errors import BudgetExhausted, LlmError, PromptTooLong
from rigaudit.agents.llm.guard import ensure_allowed
from rigaudit.agents.llm.problems import Problems
from rigaudit.agents.llm.rate import RateGate, retry_after
from rigaudit.agents.llm.usage import Ticket, UsageBook
from rigaudit.agents.llm.wire import arguments_text, content_text, strip_reasoning, text_tool_calls
from rigaudit.tools.core import record
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.redact import digest_ids, redact_json, redact_text

if TYPE_CHECKING:
    import openai

Message = dict[str, Any]
CONTEXT_REFUSALS = (
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "prompt is too long",
    "input is too long",
    "too many tokens",
    "exceeds the context",
    "exceeds the available context size",
    "exceed_context_size",
    "inputs tokens + max_new_tokens must be",
    "inputs must have less than",
)
"""How servers word a refusal (400, 413, 422) of a prompt longer than their context: vLLM, SGLang, OpenAI,
llama.cpp ("the request exceeds the available context size"), TGI ("Input validation error: `inputs`
tokens + `max_new_tokens` must be <= N", backquotes left out)."""


def is_context_refusal(message: str) -> bool:
    """Whether a server's error message refuses a prompt longer than its context."""
    text = message.lower().replace("`", "")
    return any(w in text for w in CONTEXT_REFUSALS)


RATE_LIMITED_TRIES = 10
"""429s one request may wait out at the shared pace before they count as its retries."""
RATE_LIMITED = (
    "the server limited the rate (HTTP 429): every request waited as long as it asked (retry-after), "
    "then went on at a slower pace"
)
FORMAT_REFUSALS = (400, 415, 422, 500, 501)
"""Statuses with which servers refuse a ``response_format`` (old llama.cpp answers 500)."""
STREAM_REFUSALS = (400, 415, 422, 501)
"""Statuses with which servers refuse ``stream`` (their message names it: "streaming is not supported")."""


def refuses_streaming(message: str) -> bool:
    """Whether a server's error message refuses a streamed request (it names ``stream`` or ``stream_options``)."""
    return "stream" in message.lower()


class ToolCallRequest(Record):
    """A tool call as the model wrote it; ``arguments`` is its raw text (maybe not JSON)."""

    id: str
    name: str
    arguments: str


class ChatRequest(Record):
    messages: Sequence[Message]
    tools: Sequence[dict[str, Any]] = ()
    json_schema: dict[str, Any] | None = None
    """``{"name": ..., "schema": {...}}``: structured output for the answer, when the server supports it."""
    max_tokens: int = 2048
    agent: str = ""
    """Who asks (an area, ``chat``, ``preflight``): usage and problems are booked under it."""
    book: UsageBook | None = None
    """Where every try of this request is paid for before it is sent; ``None``: not metered."""
    retries: int | None = None
    """Retries of a failed try (``None``: the settings'); the endpoint check asks for few."""
    on_text: Callable[[str], None] | None = None
    """Streams the answer (whatever ``stream`` says): called with its content so far at each piece, and with
    ``""`` as each try starts (the chat shows the model's text as it comes)."""


class ChatReply(Record):
    content: str | None
    tool_calls: tuple[ToolCallRequest, ...] = ()
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    structured: bool = False
    """Whether the answer came with ``response_format`` json_schema."""
    attempts: int = 1
    """Requests sent for this reply (retries, fallbacks and the length retry included)."""
    response_format: str | None = None
    """The format the answer came with: ``json_schema``, ``json_object`` or ``None`` (asked in words)."""
    usage_reported: bool = True
    """Whether the server counted the tokens (else they are estimated from characters)."""
    reasoning: bool = False
    """Whether a reasoning block was cut from the content."""
    text_calls: bool = False
    """Whether the tool calls were parsed from text in the content (see :func:`~rigaudit.agents.llm.wire.text_tool_calls`)."""
    text_form: str = ""
    """How those calls were written (``<tool_call>``, ``<|python_tag|>``, ``[TOOL_CALLS]``...)."""
    request_id: str = ""
    """The server's id of the answer (its ``x-request-id``, else the completion's ``id``): what its logs know."""
    model: str = ""
    """The model the request was sent to (its agent's: ``--llm-model AREA=NAME``, else the default)."""


class ChatModel(Protocol):
    """Anything that answers a chat request: the real client, or a scripted model in tests."""

    async def complete(self, request: ChatRequest) -> ChatReply: ...


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def sent_chars(body: dict[str, Any]) -> int:
    """What a request sends as prompt, in characters: messages, tool schemas and response format as JSON."""
    sent = {k: body[k] for k in ("messages", "tools", "response_format") if k in body}
    return len(json.dumps(sent, separators=(",", ":"), ensure_ascii=False, default=str))


def request_chars(request: ChatRequest) -> int:
    """What ``request`` sends as prompt at best (json_schema asked), in characters."""
    sent: dict[str, Any] = {"messages": list(request.messages)}
    if request.tools:
        sent["tools"] = list(request.tools)
    if request.json_schema is not None:
        sent["response_format"] = {"type": "json_schema", "json_schema": request.json_schema}
    return sent_chars(sent)


def normalized(reply: ChatReply) -> ChatReply:
    """Reasoning cut, tool calls written as text turned into tool calls (see :mod:`~rigaudit.agents.llm.wire`)."""
    content, reasoning = strip_reasoning(reply.content)
    calls = reply.tool_calls
    from_text = False
    form = ""
    if not calls:
        content, parsed = text_tool_calls(content)
        if parsed:
            calls = tuple(ToolCallRequest(f"text_call_{i}", c.name, c.arguments) for i, c in enumerate(parsed))
            from_text, form = True, parsed[0].form
    if not reasoning and not from_text:
        return reply
    finish = "tool_calls" if from_text and reply.finish_reason in (None, "stop") else reply.finish_reason
    return record.replace(
        reply,
        content=content,
        tool_calls=calls,
        finish_reason=finish,
        reasoning=reasoning,
        text_calls=from_text,
        text_form=form,
    )


WINDOWS = (2048, 4096, 8192, 16384, 32768)
"""The context windows servers cut prompts to (Ollama's ``num_ctx``: 2,048 in older releases, then 4,096...)."""
SPARSEST = 4.5
"""Characters a token at most, for text a model is sent; nothing denser than 2.5 is plausible either."""


def looks_truncated(prompt_chars: int, prompt_tokens: int, completion_tokens: int, *, chars_per_token: float = 0.0) -> bool:
    """Whether the server counted far fewer prompt tokens than ``prompt_chars`` hold.

    Text runs at 2.5 to 4.5 characters a token, so it is cut when the server counts fewer than one
    token per 7 characters; or counts a prompt that fills a context window exactly (Ollama's runner
    keeps ``num_ctx`` tokens of a longer prompt), or a prompt plus completion that does, while the
    characters could hold more (2.5 a token); or counts under 60% of what this server's own counts
    of uncut prompts (``chars_per_token``) give for these characters.
    """
    if prompt_chars < 2000 or prompt_tokens <= 0:
        return False
    if prompt_tokens * 7 < prompt_chars:
        return True
    full = any(prompt_tokens == w or prompt_tokens + completion_tokens == w for w in WINDOWS)
    if full and prompt_tokens * 2.5 < prompt_chars:
        return True
    return chars_per_token > 0 and prompt_tokens < 0.6 * prompt_chars / min(chars_per_token, SPARSEST)


class _Accumulated(Record, frozen=False):
    content: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    moved: dict[int, int] = field(default_factory=dict)
    """A server's index reused by a new call, and the slot that call went to."""
    finish: str | None = None
    usage: tuple[int, int] | None = None


class _Tries(Record, frozen=False):
    """Where one request's tries stand: the model, the answer format and completion limit, what was retried."""

    model: str
    formats: list[str | None]
    """The answer formats to try, best first (:meth:`OpenAIChatModel._formats`); ``level`` is the one in use."""
    max_tokens: int
    retries: int
    level: int = 0
    sent: int = 0
    """Requests sent (fallbacks and the length retry included)."""
    attempt: int = 0
    """Failed tries retried so far."""
    limited: int = 0
    """429s waited out at the shared pace."""
    length_retried: bool = False
    token_switched: bool = False
    cut: ChatReply | None = None
    """The answer cut at the limit, kept while it is asked again with twice the room."""
    last_error: str = ""


class OpenAIChatModel:
    """Chat completions with tool calling over any OpenAI-compatible endpoint."""

    def __init__(self, config: LlmConfig) -> None:
        ensure_allowed(config.base_url)
        self.config = config
        self.model = config.model
        self.json_schema_ok = config.json_schema
        self.token_field = _token_field(config)
        self._client: Any = None
        self._loop: object = None
        self._limiter = anyio.CapacityLimiter(max(1, config.max_parallel))
        self.gate = RateGate()
        """The pace of every agent's requests: after a 429 all wait (:mod:`~rigaudit.agents.llm.rate`)."""
        self._model_lock: anyio.Lock | None = None
        self.broken: str | None = None
        """Why this endpoint cannot work (unreachable, key refused, wrong URL): later requests fail at once."""
        self._chars_per_token = 0.0
        """The most characters a token this server counted for a prompt it did not cut (0: none seen yet)."""
        self.problems = Problems()
        """Each distinct endpoint problem once (format refusals, truncated prompts, cut answers, rate limits...)."""
        self.streams_refused = False
        """The server refused a streamed request: every later one is sent whole."""

    # -- the client -------------------------------------------------------------------------

    def _openai(self) -> Any:
        """One AsyncOpenAI per event loop (its connection pool belongs to the loop); its own retries off."""
        loop = anyio.lowlevel.current_token().native_token
        if self._client is None or self._loop is not loop:
            import openai

            ensure_allowed(self.config.base_url)
            self._client = openai.AsyncOpenAI(
                base_url=self.config.base_url,
                api_key=self.config.api_key or "not-needed",
                timeout=self.config.request_timeout_s,
                max_retries=0,
            )
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    async def served_models(self) -> list[str]:
        """``GET /models``: the names the server serves."""
        listing = await self._openai().models.list()
        return [str(m.id) for m in listing.data]

    async def _model_name(self) -> str:
        if self.model:
            return self.model
        if self._model_lock is None:
            self._model_lock = anyio.Lock()
        async with self._model_lock:
            if not self.model:
                try:
                    names = await self.served_models()
                except Exception as exc:
                    raise _Fatal(f"no --model given and the server's models cannot be listed: {_one_line(exc)}") from None
                if len(names) != 1:
                    raise _Fatal(
                        f"no --model given and the server serves {len(names)} models ({', '.join(names[:5])}): choose one"
                    )
                self.model = names[0]
        return self.model

    # -- one request ------------------------------------------------------------------------

    def _formats(self, request: ChatRequest) -> list[str | None]:
        """The answer formats to try, best first; the last is always plain (JSON asked for in words)."""
        if request.json_schema is None:
            return [None]
        return ["json_schema", "json_object", None] if self.json_schema_ok else ["json_object", None]

    def _streamed(self, request: ChatRequest) -> bool:
        """Whether ``request`` streams: as ``stream`` says; unset, when its text is shown as it comes (the chat)."""
        if self.streams_refused:
            return False
        return self.config.stream if self.config.stream is not None else request.on_text is not None

    def _kwargs(self, request: ChatRequest, model: str, answer_format: str | None, max_tokens: int) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": model, "messages": redact_json(list(request.messages), ids=True)}
        kwargs[self.token_field] = max_tokens
        if request.tools:
            kwargs["tools"] = list(request.tools)
        if answer_format == "json_schema":
            kwargs["response_format"] = {"type": "json_schema", "json_schema": request.json_schema}
        elif answer_format == "json_object":
            kwargs["response_format"] = {"type": "json_object"}
        if self.config.temperature is not None:
            kwargs["temperature"] = self.config.temperature
        if self._streamed(request):
            kwargs["stream"] = True
            kwargs["stream_options"] = {"include_usage": True}
        return kwargs

    async def complete(self, request: ChatRequest) -> ChatReply:
        if self.broken is not None:
            raise LlmError(self.broken)
        try:
            return _redacted(await self._complete(request))
        except _Fatal as exc:
            self.broken = str(exc)
            raise LlmError(self.broken) from None

    async def _complete(self, request: ChatRequest) -> ChatReply:
        """Try until an answer comes: a refused format falls back, a cut answer gets twice the room, failures are
        retried with backoff (a 429 at the shared pace), what retrying cannot fix ends with one line."""
        import openai

        configured = max(0, self.config.retries) + max(0, self.config.client_retries)
        tries = _Tries(
            model=dict(self.config.area_models).get(request.agent) or await self._model_name(),
            formats=self._formats(request),
            max_tokens=request.max_tokens,
            retries=configured if request.retries is None else request.retries,
        )
        while True:
            wait: float | None = None
            try:
                done = await self._try(request, tries)
                if done is not None:
                    return done
                continue  # cut at the limit: asked again with twice the room
            except openai.APIStatusError as exc:
                if self._adapted(exc, request, tries):
                    continue
                wait = retry_after(exc)
                if exc.status_code == 429 and tries.limited < RATE_LIMITED_TRIES:
                    tries.limited += 1  # the shared gate holds every agent back (_metered): not a retry of its own
                    continue
            except (openai.APIError, ValueError, KeyError, TypeError, AttributeError) as exc:
                tries.last_error = self._trouble(exc, tries)
            if tries.attempt >= tries.retries:
                raise LlmError(f"the model server failed {tries.attempt + 1} times: {tries.last_error}")
            backoff = min(self.config.backoff_cap_s, self.config.backoff_s * 2**tries.attempt)
            await anyio.sleep(min(self.config.backoff_cap_s, wait) if wait is not None else backoff)
            tries.attempt += 1

    async def _try(self, request: ChatRequest, tries: _Tries) -> ChatReply | None:
        """One try at the current answer format and completion limit: its answer, or ``None`` when it was cut
        at the limit and is to be asked again with twice the room."""
        answer_format = tries.formats[tries.level]
        kwargs = self._kwargs(request, tries.model, answer_format, tries.max_tokens)
        chars = sent_chars(kwargs)
        tries.sent += 1
        try:
            reply = await self._metered(request, kwargs, chars, tries.model)
        except BudgetExhausted:
            if tries.cut is not None:  # no room left to retry: the cut answer is what there is
                return tries.cut
            raise
        reply = normalized(reply)
        self._observe(reply, chars, request.agent)
        done = record.replace(
            reply,
            structured=answer_format == "json_schema",
            response_format=answer_format,
            attempts=tries.sent,
            model=tries.model,
        )
        if reply.finish_reason != "length" or tries.length_retried:
            return done
        tries.length_retried, tries.cut = True, done
        self.problems.note(
            "length",
            f"answers were cut at the completion limit (finish_reason length; {tries.max_tokens:,} tokens): "
            "retried once with twice the room (raise max_completion_tokens for a reasoning model)",
            agent=request.agent,
        )
        if request.book is not None and not request.book.affordable(chars, tries.max_tokens + 1):
            return done  # the budget has no more room than this answer had
        tries.max_tokens *= 2
        return None

    def _stream_refused(self, status: int, said: str, request: ChatRequest) -> bool:
        """A streamed request the server refused for streaming: sent whole from then on (so at most once), told once."""
        if status not in STREAM_REFUSALS or not self._streamed(request) or not refuses_streaming(said):
            return False
        self.streams_refused = True
        self.problems.note(
            "stream",
            f"the server refused a streamed request (HTTP {status}: {said}): sent whole from then on (set stream to false)",
            agent=request.agent,
        )
        return True

    def _adapted(self, exc: openai.APIStatusError, request: ChatRequest, tries: _Tries) -> bool:
        """A refusal the next try can meet (another answer format, the other completion-limit field): ``True``;
        one no retry can meet raises; else ``False``, the reason in ``tries.last_error``, to retry."""
        status, said, agent = exc.status_code, _server_message(exc), request.agent
        answer_format = tries.formats[tries.level]
        if status in (400, 413, 422) and is_context_refusal(said):
            self.problems.note(
                "context",
                f"the server refused a prompt longer than its context (HTTP {status}: {said}): resent once shorter "
                "(tool results summarised, half the completion limit)",
                agent=agent,
            )
            raise PromptTooLong(f"the prompt is longer than the server's context: HTTP {status}: {said}") from None
        if self._stream_refused(status, said, request):
            return True
        if answer_format is not None and status in FORMAT_REFUSALS and tries.level + 1 < len(tries.formats):
            tries.level += 1
            then = tries.formats[tries.level] or "plain JSON asked for in words"
            self.problems.note(
                f"format:{answer_format}:{status}",
                f"the server refused response_format {answer_format} (HTTP {status}): those requests fell back to {then}",
                agent=agent,
            )
            return True
        if status == 400 and not tries.token_switched and _wants_other_token_field(exc, self.token_field):
            tries.token_switched = True
            self.token_field = _other(self.token_field)
            self.problems.note(
                "token-field",
                f"the server asked for {self.token_field} instead of {_other(self.token_field)}: sent so from then on "
                f"(set token_field to {self.token_field})",
                agent=agent,
            )
            return True
        if status in (401, 403):
            raise _Fatal(f"the model server refused the key (HTTP {status}): set the key's variable (--api-key-env)") from None
        if status == 404:
            raise _Fatal(
                f"HTTP 404 from {self.config.base_url}: is the URL the server's .../v1 and {tries.model!r} served there?"
            ) from None
        if status not in (408, 409, 429) and status < 500:
            raise LlmError(f"the model server rejected the request: HTTP {status}: {said}") from None
        tries.last_error = f"HTTP {status}: {said}"
        return False

    def _trouble(self, exc: BaseException, tries: _Tries) -> str:
        """Why a try got no answer (to retry), in one line; an unreachable server after the last retry is fatal."""
        import openai

        if isinstance(exc, openai.APITimeoutError):
            return f"no answer within {self.config.request_timeout_s:g} s"
        if isinstance(exc, openai.APIConnectionError):
            error = f"cannot reach {self.config.base_url or 'OpenAI'}: {_one_line(exc)}"
            if tries.attempt >= tries.retries:
                raise _Fatal(f"the model server failed {tries.attempt + 1} times: {error}") from None
            return error
        if isinstance(exc, openai.APIResponseValidationError) or not isinstance(exc, openai.APIError):
            return f"malformed answer: {_one_line(exc)}"
        return f"the stream broke: {_one_line(exc)}"  # an error event in a stream (OpenRouter: the provider failed)

    async def _metered(self, request: ChatRequest, kwargs: dict[str, Any], chars: int, model: str) -> ChatReply:
        """One try: a request slot (the wait not counted against the agent's time), then the budget pays
        for it, then it is sent and settled."""
        with paused():
            await self._limiter.acquire()
        try:
            with paused():
                started = await self.gate.wait()
            ticket: Ticket | None = None
            if request.book is not None:
                ticket = request.book.reserve(request.agent or "?", chars, int(kwargs[self.token_field]), model=model)
                kwargs[self.token_field] = ticket.max_tokens
            try:
                reply = await self._send(kwargs, request.on_text)
            except BaseException as exc:
                if ticket is not None:
                    ticket.fail()
                if getattr(exc, "status_code", None) == 429:
                    self.gate.limited(started, retry_after(exc))
                    self.problems.note("rate", RATE_LIMITED, agent=request.agent)
                raise
            self.gate.passed()
            if ticket is not None:
                ticket.settle(reply.prompt_tokens if reply.usage_reported else None, reply.completion_tokens)
            return reply
        finally:
            self._limiter.release()

    def _observe(self, reply: ChatReply, chars: int, agent: str) -> None:
        """Note what the server did that a person should know (once per kind)."""
        cut = reply.usage_reported and looks_truncated(
            chars, reply.prompt_tokens, reply.completion_tokens, chars_per_token=self._chars_per_token
        )
        if reply.usage_reported and not cut and chars >= 2000 and reply.prompt_tokens > 0:
            self._chars_per_token = max(self._chars_per_token, chars / reply.prompt_tokens)  # the sparsest uncut count
        if cut:
            self.problems.note(
                "truncated",
                f"the server counted {reply.prompt_tokens:,} prompt tokens for {chars:,} characters sent: it cut the prompt "
                "(Ollama's num_ctx; raise the context window), the model did not see all it was given",
                agent=agent,
                degrading=True,
            )
        if reply.text_calls:
            self.problems.note(
                "text-calls",
                f"the server returned tool calls as {reply.text_form} text in the content (no tool-call parser on the "
                "server): parsed as tool calls",
                agent=agent,
            )
        if reply.reasoning:
            self.problems.note("reasoning", "answers began with a <think> block: cut before parsing", agent=agent)
        if not reply.usage_reported:
            self.problems.note("no-usage", "the server reported no token usage: tokens estimated from characters")

    async def _send(self, kwargs: dict[str, Any], on_text: Callable[[str], None] | None = None) -> ChatReply:
        client = self._openai()
        if kwargs.get("stream"):
            stream = await client.chat.completions.create(**kwargs)
            acc = _Accumulated()
            rid = ""
            if on_text is not None:
                on_text("")
            async for chunk in stream:
                rid = rid or _request_id(chunk)
                pieces = len(acc.content)
                _absorb(acc, chunk)
                if on_text is not None and len(acc.content) > pieces:
                    on_text("".join(acc.content))
            calls = tuple(
                ToolCallRequest(c.get("id") or f"call_{i}", c.get("name", ""), c.get("arguments", ""))
                for i, c in sorted(acc.calls.items())
            )
            content = "".join(acc.content) or None
            if acc.usage is not None:
                return ChatReply(content, calls, acc.finish, *acc.usage, request_id=rid)
            completion = _estimate_tokens((content or "") + str(calls))
            return ChatReply(
                content, calls, acc.finish, _prompt_estimate(kwargs), completion, usage_reported=False, request_id=rid
            )
        completion_obj = await client.chat.completions.create(**kwargs)
        return record.replace(self._reply_of(completion_obj, kwargs), request_id=_request_id(completion_obj))

    @staticmethod
    def _reply_of(completion_obj: Any, kwargs: dict[str, Any]) -> ChatReply:
        choices = getattr(completion_obj, "choices", None)
        if not choices:
            raise ValueError("the answer has no choices")
        message = choices[0].message
        tool_calls = tuple(
            ToolCallRequest(str(c.id or f"call_{i}"), str(c.function.name or ""), arguments_text(c.function.arguments))
            for i, c in enumerate(message.tool_calls or [])
            if getattr(c, "function", None) is not None
        )
        usage = completion_obj.usage
        content = content_text(message.content)
        if usage is not None and usage.prompt_tokens:
            prompt, completion = int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0)
            return ChatReply(content, tool_calls, choices[0].finish_reason, prompt, completion)
        completion = _estimate_tokens((content or "") + str(tool_calls))
        return ChatReply(
            content, tool_calls, choices[0].finish_reason, _prompt_estimate(kwargs), completion, usage_reported=False
        )


def _request_id(answer: Any) -> str:
    """The id a server's logs know an answer by: its ``x-request-id`` header (the client keeps it), else its ``id``."""
    for name in ("_request_id", "id"):
        value = getattr(answer, name, None)
        if isinstance(value, str) and value:
            return value[:200]
    return ""


def _token_field(config: LlmConfig) -> str:
    if config.token_field in ("max_tokens", "max_completion_tokens"):
        return config.token_field
    return "max_tokens" if config.base_url and "api.openai.com" not in config.base_url else "max_completion_tokens"


def _other(token_field: str) -> str:
    return "max_tokens" if token_field == "max_completion_tokens" else "max_completion_tokens"


def _wants_other_token_field(exc: BaseException, token_field: str) -> bool:
    """Whether a 400 says the completion limit must be sent under the other name."""
    text = _one_line(exc).lower()
    return _other(token_field) in text or (token_field in text and ("unsupported" in text or "not supported" in text))


def _said(text: str) -> str:
    return digest_ids(redact_text(text))


def _redacted(reply: ChatReply) -> ChatReply:
    """What the model said, secrets redacted and identifiers digests (it may echo one): every later reader gets it so."""
    calls = tuple(record.replace(c, arguments=_said(c.arguments)) for c in reply.tool_calls)
    content = _said(reply.content) if reply.content is not None else None
    return record.replace(reply, content=content, tool_calls=calls)


class _Fatal(LlmError):
    """An endpoint error that retrying cannot fix, for this request or any later one."""


def _absorb(acc: _Accumulated, chunk: Any) -> None:
    usage = getattr(chunk, "usage", None)
    if usage is not None:
        acc.usage = (int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0))
    for choice in getattr(chunk, "choices", None) or []:
        delta = choice.delta
        text = content_text(delta.content) if delta is not None else None
        if text:
            acc.content.append(text)
        for piece in (delta.tool_calls if delta is not None else None) or []:
            slot = acc.calls.setdefault(_slot(acc, piece), {})
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


def _slot(acc: _Accumulated, piece: Any) -> int:
    """Which call a streamed tool-call delta belongs to.

    By its ``index``, as OpenAI sends it; an id not seen yet starts a new call even at a used index
    (servers that send every call at index 0); with no index (Gemini's compatibility layer) the id
    names the call, and a delta with neither continues the last one.
    """
    ident = piece.id or None
    if piece.index is not None:
        at = acc.moved.get(int(piece.index), int(piece.index))
        known = acc.calls.get(at, {}).get("id")
        if ident is None or known is None or known == ident:
            return at
    elif ident is None:
        return max(acc.calls, default=0)
    for at, call in acc.calls.items():
        if call.get("id") == ident:
            return at
    fresh = max(acc.calls, default=-1) + 1
    if piece.index is not None:
        acc.moved[int(piece.index)] = fresh
    return fresh


def _prompt_estimate(kwargs: dict[str, Any]) -> int:
    return _estimate_tokens(json.dumps(kwargs.get("messages", []), default=str))


def _server_message(exc: BaseException) -> str:
    """What the server said, in one line: the ``error`` of its body (TGI's is a string, OpenAI's an object
    with a ``message``), else the exception's own line."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        body = body.get("message") or body.get("error") or body.get("detail")
    if isinstance(body, str) and body.strip():
        return body.strip().splitlines()[0][:300]
    return _one_line(exc)


def _one_line(exc: BaseException) -> str:
    text = str(getattr(exc, "message", "") or exc).strip().splitlines()
    return (text[0] if text else exc.__class__.__name__)[:300]


def describe_endpoint(config: LlmConfig) -> str:
    """``model at URL`` for messages (never the key), each area's own model named: ``big (numa: small) at URL``."""
    own = "; ".join(f"{agent}: {name}" for agent, name in config.area_models)
    model = config.model or "the server’s only model"
    return f"{model}{f' ({own})' if own else ''} at {config.base_url or 'OpenAI'}"
