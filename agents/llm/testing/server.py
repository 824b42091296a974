"""A loopback OpenAI-compatible server that replays scripted chat completions (stdlib only).

It drives the real ``openai`` client end to end: tool calls, plain or JSON content, streaming
(SSE with tool-call deltas and a usage chunk), structured output (``response_format`` json_schema,
or a 400 as servers without it answer), HTTP errors (429 with ``retry-after-ms``, 500), slow
answers (client timeouts) and malformed bodies.

Replies are scripted per *conversation key*: by default the first word of the system prompt's
title line (``# pcie investigator`` -> ``pcie``, ``# chat coordinator`` -> ``chat``), so agents that
run concurrently each get their own script. A key without a script (or whose script ran out) gets
``default``; with no default that is an unexpected request: answered 500 and reported by
:meth:`ScriptedOpenAIServer.assert_complete`.

    with ScriptedOpenAIServer({"pcie": [call("read_file", path="/proc/cmdline"), final({"findings": []})]},
                              default=final({"findings": []})) as server:
        ...  # point a client at server.base_url
        server.assert_complete()
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rigaudit.tools.core import record
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.testing.loopback import BackgroundServer, LoopbackHandler, LoopbackHTTPServer

__all__ = [
    "FAMILIES",
    "Quirks",
    "Recorded",
    "Reply",
    "Responder",
    "ScriptedOpenAIServer",
    "ToolCallSpec",
    "call",
    "calls",
    "fail",
    "final",
    "garbage",
    "prompt_chars",
    "route_by_system_prompt",
    "say",
    "slow",
]

_TITLE = re.compile(r"\s*#\s*([\w.-]+)")
HOLD_S = 60.0
"""How long a held stream (``Reply.hold``) waits for its test."""


class ToolCallSpec(Record):
    name: str
    arguments: str
    """The arguments as the model writes them: JSON text, or anything (malformed calls)."""


class Reply(Record):
    """One scripted answer: content and/or tool calls, or an HTTP error, or a raw body."""

    content: str | None = None
    tool_calls: tuple[ToolCallSpec, ...] = ()
    status: int = 200
    error: str = ""
    retry_after_ms: int | None = None
    delay_s: float = 0.0
    """Wait this long before answering (to trip a client's timeout)."""
    raw_body: str | None = None
    """Send exactly this as the 200 body (a malformed response)."""
    usage: tuple[int, int] | None = None
    """(prompt_tokens, completion_tokens); default: estimated from characters / 4."""
    reasoning: str = ""
    """The model's thinking: a ``<think>`` block before the content, or ``reasoning_content`` (see :class:`Quirks`)."""
    hold: threading.Event | None = None
    """Streamed: the rest of the answer waits after its first piece until this is set (a test has seen that piece
    shown); not set within :data:`HOLD_S`, the stream breaks with an error event."""


class Quirks(Record):
    """How a server family answers, played faithfully (see :data:`FAMILIES`)."""

    formats: frozenset[str] = frozenset({"json_schema", "json_object"})
    """The ``response_format`` types it accepts; others are refused with ``format_refusal``."""
    format_refusal: int = 400
    tool_calls_as_text: bool = False
    """Tool calls written as Hermes/Qwen ``<tool_call>`` text in the content (no tool parser on the server)."""
    arguments_as_object: bool = False
    """A call's ``arguments`` as a JSON object, not JSON text (llama.cpp, older TGI)."""
    reasoning_field: bool = False
    """Reasoning in ``reasoning_content`` (a reasoning parser), else as a ``<think>`` block in the content."""
    num_ctx: int | None = None
    """A context window that silently cuts longer prompts, counting only what it kept (Ollama)."""
    token_field: str | None = None
    """The one completion-limit field accepted; the other is refused with 400 as OpenAI words it."""
    report_usage: bool = True
    stream_refused: bool = False
    """Streamed requests refused with 400 ``streaming is not supported`` (a gateway or server built without SSE)."""
    tools_refused: bool = False
    """Requests with ``tools`` refused with 400, as vLLM started without a tool-call parser answers."""
    context: int | None = None
    """A context window that refuses a prompt whose tokens plus ``max_tokens`` exceed it (vLLM's ``max_model_len``)."""
    context_refusal: str = "vllm"
    """How ``context`` refuses: ``vllm`` (400 "maximum context length"), ``tgi`` (422 "Input validation error: ...
    must be <= N") or ``llama.cpp`` (400 "the request exceeds the available context size")."""
    text_call_form: str = "hermes"
    """How ``tool_calls_as_text`` writes calls: one of :data:`TEXT_CALL_FORMS`."""
    stream_error_every: int = 0
    """Every Nth streamed answer of each conversation breaks after some content with a ``data: {"error": ...}``
    event (OpenRouter)."""
    content_parts: bool = False
    """Content as a list of parts (``[{"type": "text", "text": ...}]``), not a string."""
    stream_without_index: bool = False
    """Streamed tool calls without ``index``: each call whole in one delta, with its id (Gemini's compatibility layer)."""
    num_ctx_counts: str = "window"
    """What a ``num_ctx`` cut reports: ``window`` (prompt plus completion fill it) or ``prompt`` (the prompt
    counts the whole window, as Ollama's runner keeps ``num_ctx`` tokens of it)."""
    chars_per_token: float = 4.0
    """How many characters the server's tokenizer reads as one token (JSON-heavy prompts run near 3)."""


FAMILIES: dict[str, Quirks] = {
    "vllm": Quirks(reasoning_field=True),
    "sglang": Quirks(reasoning_field=True),
    "llama.cpp": Quirks(arguments_as_object=True),
    "llama.cpp-old": Quirks(formats=frozenset({"json_object"}), format_refusal=500, arguments_as_object=True),
    "ollama": Quirks(num_ctx=2048),
    "tgi-old": Quirks(formats=frozenset(), format_refusal=422, arguments_as_object=True),
    "litellm": Quirks(formats=frozenset({"json_object"}), format_refusal=400),
    "openai-reasoning": Quirks(token_field="max_completion_tokens", reasoning_field=True),
    "hermes-text": Quirks(tool_calls_as_text=True),
    "vllm-no-tool-parser": Quirks(tools_refused=True),
    "no-stream": Quirks(stream_refused=True),
    "vllm-short-context": Quirks(reasoning_field=True, context=2500),
    "tgi-short-context": Quirks(formats=frozenset(), format_refusal=422, context=2500, context_refusal="tgi"),
    "llama.cpp-short-context": Quirks(arguments_as_object=True, context=2500, context_refusal="llama.cpp"),
    "ollama-runner": Quirks(num_ctx=2048, num_ctx_counts="prompt", chars_per_token=3.0),
    "llama3-python-tag": Quirks(tool_calls_as_text=True, text_call_form="python_tag"),
    "llama3-json": Quirks(tool_calls_as_text=True, text_call_form="llama_json"),
    "llama3-function-tag": Quirks(tool_calls_as_text=True, text_call_form="function_tag"),
    "mistral": Quirks(tool_calls_as_text=True, text_call_form="mistral"),
    "mistral-v11": Quirks(tool_calls_as_text=True, text_call_form="mistral_v11"),
    "openrouter": Quirks(stream_error_every=2),
    "content-parts": Quirks(content_parts=True),
    "gemini": Quirks(stream_without_index=True, formats=frozenset({"json_schema"})),
}
"""Server families as the scripted server plays them (what each does is in docs/llm.md's compatibility table)."""


TEXT_CALL_FORMS = ("hermes", "python_tag", "llama_json", "function_tag", "mistral", "mistral_v11")
"""Tool calls as models write them in the content: Hermes/Qwen ``<tool_call>{...}</tool_call>``, Llama 3
``<|python_tag|>{"name": ..., "parameters": ...}``, a bare JSON object, ``<function=NAME>{...}</function>``, Mistral
``[TOOL_CALLS] [{"name": ..., "arguments": ...}]`` and its later ``[TOOL_CALLS]NAME[ARGS]{...}``."""


def text_calls(calls: Sequence[ToolCallSpec], form: str) -> str:
    """``calls`` written as text in the content, in ``form`` (one of :data:`TEXT_CALL_FORMS`)."""
    items = [(c.name, _json_or_text(c.arguments)) for c in calls]
    if form == "python_tag":
        return "<|python_tag|>" + "; ".join(json.dumps({"name": n, "parameters": a}) for n, a in items)
    if form == "llama_json":
        return "\n".join(json.dumps({"name": n, "parameters": a}) for n, a in items)
    if form == "function_tag":
        return "".join(f"<function={n}>{json.dumps(a)}</function>" for n, a in items)
    if form == "mistral":
        return "[TOOL_CALLS] " + json.dumps([{"name": n, "arguments": a} for n, a in items])
    if form == "mistral_v11":
        return "".join(f"[TOOL_CALLS]{n}[ARGS]{json.dumps(a)}" for n, a in items)
    return "".join(f"<tool_call>\n{json.dumps({'name': n, 'arguments': a})}\n</tool_call>\n" for n, a in items)


Responder = Callable[[dict[str, Any]], Reply]
"""A dynamic script: builds the reply from the request body."""


def say(text: str) -> Reply:
    """A plain text answer."""
    return Reply(content=text)


def final(payload: Any) -> Reply:
    """A JSON answer (``payload`` dumped)."""
    return Reply(content=json.dumps(payload))


def call(name: str, arguments: str | None = None, /, **kwargs: Any) -> Reply:
    """One tool call; ``arguments`` given as text is sent verbatim (malformed JSON on purpose)."""
    return Reply(tool_calls=(ToolCallSpec(name, arguments if arguments is not None else json.dumps(kwargs)),))


def calls(*items: tuple[str, dict[str, Any] | str]) -> Reply:
    """Several tool calls in one answer."""
    return Reply(tool_calls=tuple(ToolCallSpec(n, a if isinstance(a, str) else json.dumps(a)) for n, a in items))


def fail(status: int, message: str = "scripted failure", *, retry_after_ms: int | None = 1) -> Reply:
    """An HTTP error answer (429, 500, 400...)."""
    return Reply(status=status, error=message, retry_after_ms=retry_after_ms)


def garbage(body: str = '{"id": "x", "choices": [{"message": ') -> Reply:
    """A 200 whose body is not a chat completion."""
    return Reply(raw_body=body)


def slow(seconds: float, reply: Reply) -> Reply:
    """``reply``, after ``seconds``."""
    return record.replace(reply, delay_s=seconds)


def route_by_system_prompt(body: Mapping[str, Any]) -> str:
    """The conversation key: the first word of the system prompt's ``# title`` line, else ``""``."""
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "system":
            match = _TITLE.match(str(message.get("content") or ""))
            return match.group(1) if match else ""
    return ""


def prompt_chars(body: Mapping[str, Any]) -> int:
    """What a request sends as prompt, in characters: its messages, tool schemas and response format as JSON."""
    sent = {k: body[k] for k in ("messages", "tools", "response_format") if k in body}
    return len(json.dumps(sent, separators=(",", ":"), ensure_ascii=False))


class Recorded(Record):
    """One request as it arrived, and what it was answered."""

    key: str
    body: dict[str, Any]
    reply: Reply | None
    status: int

    @property
    def prompt_chars(self) -> int:
        return prompt_chars(self.body)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])


def _refusal(quirks: Quirks, body: Mapping[str, Any]) -> str:
    """Why this server refuses ``body`` outright with 400 (streaming, tools), or ``""``."""
    if quirks.stream_refused and body.get("stream"):
        return "streaming is not supported by this server (stream must be false)"
    if quirks.tools_refused and body.get("tools"):
        return '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
    return ""


class _State(Record, frozen=False):
    scripts: dict[str, list[Reply | Responder]]
    default: Reply | Responder | None
    route: Callable[[Mapping[str, Any]], str]
    json_schema: bool
    model: str
    quirks: Quirks = field(default_factory=Quirks)
    served: tuple[str, ...] = ()
    """What ``GET /v1/models`` lists (``model`` first)."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: list[Recorded] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    streams: dict[str, int] = field(default_factory=dict)
    """Streamed answers so far, by conversation key."""

    def next_reply(self, body: dict[str, Any]) -> tuple[str, Reply | None]:
        key = self.route(body)
        with self.lock:
            queue = self.scripts.get(key)
            item = queue.pop(0) if queue else self.default
            if item is None:
                self.unexpected.append(key)
                return key, None
        return key, item(body) if callable(item) else item

    def record(self, key: str, body: dict[str, Any], reply: Reply | None, status: int) -> None:
        with self.lock:
            self.requests.append(Recorded(key, body, reply, status))


def _estimate(text: str, chars_per_token: float = 4.0) -> int:
    return max(1, int(len(text) / chars_per_token))


class _Handler(LoopbackHandler):
    server: _Server

    def _error(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        kind = {400: "invalid_request_error", 404: "not_found", 429: "rate_limit_exceeded"}.get(status, "server_error")
        self.send_body(status, json.dumps({"error": {"message": message, "type": kind, "code": status}}).encode(), headers)

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            self.send_models(*(self.server.state.served or (self.server.state.model,)))
        else:
            self._error(404, f"no route {self.path}")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._error(400, "body is not JSON")
            return
        if self.path.rstrip("/") != "/v1/chat/completions" or not isinstance(body, dict):
            self._error(404, f"no route {self.path}")
            return
        state = self.server.state
        quirks = state.quirks
        response_format = body.get("response_format") or {}
        kind = response_format.get("type") if isinstance(response_format, dict) else None
        accepted = quirks.formats if state.json_schema else quirks.formats - {"json_schema"}
        if kind not in (None, "text") and kind not in accepted:
            status = quirks.format_refusal if state.json_schema else 400
            state.record(route_by_system_prompt(body), body, None, status)
            self._error(status, f"response_format type must be one of {sorted(accepted) or ['text']}, but got: {kind}")
            return
        refused = _refusal(quirks, body)
        if refused:
            state.record(route_by_system_prompt(body), body, None, 400)
            self._error(400, refused)
            return
        if quirks.context is not None:
            asked = _estimate(json.dumps(body.get("messages") or []), quirks.chars_per_token)
            room = int(body.get("max_completion_tokens", body.get("max_tokens")) or 0)
            if asked + room > quirks.context:
                status, refusal = _context_refusal(quirks.context_refusal, quirks.context, asked, room)
                state.record(route_by_system_prompt(body), body, None, status)
                self.send_json(status, refusal)
                return
        if quirks.token_field is not None:
            other = "max_tokens" if quirks.token_field == "max_completion_tokens" else "max_completion_tokens"
            if other in body:
                state.record(route_by_system_prompt(body), body, None, 400)
                self._error(
                    400, f"Unsupported parameter: '{other}' is not supported with this model. Use '{quirks.token_field}' instead."
                )
                return
        key, reply = state.next_reply(body)
        if reply is None:
            state.record(key, body, None, 500)
            self._error(500, f"no scripted reply left for conversation {key!r}")
            return
        state.record(key, body, reply, reply.status)
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.status != 200:
            headers = {"retry-after-ms": str(reply.retry_after_ms)} if reply.retry_after_ms is not None else {}
            self._error(reply.status, reply.error or "scripted failure", headers)
            return
        if reply.raw_body is not None:
            self.send_body(200, reply.raw_body.encode())
            return
        if body.get("stream"):
            self._stream(body, reply)
        else:
            self._whole(body, reply)

    # -- answers --------------------------------------------------------------------------

    def _render(self, body: dict[str, Any], reply: Reply) -> _Rendered:
        """The reply as this server family sends it: reasoning, text tool calls, the completion limit, usage."""
        quirks = self.server.state.quirks
        content, reasoning, calls = reply.content, reply.reasoning, list(reply.tool_calls)
        if reasoning and not quirks.reasoning_field:
            content, reasoning = f"<think>{reasoning}</think>\n{content or ''}", ""
        if calls and quirks.tool_calls_as_text:
            content, calls = (content or "") + text_calls(calls, quirks.text_call_form), []
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        spent = _estimate(reasoning + (content or "") + "".join(c.arguments for c in calls))
        finish = "tool_calls" if calls else "stop"
        if isinstance(limit, int) and spent > limit:  # cut where the limit falls: thinking first, then the answer
            room = limit * 4
            reasoning, room = reasoning[:room], max(0, room - len(reasoning))
            content, room = (content or "")[:room] or None, max(0, room - len(content or ""))
            cut: list[ToolCallSpec] = []
            for c in calls:
                if room > 0:
                    cut.append(ToolCallSpec(c.name, c.arguments[:room]))
                    room -= len(c.arguments)
            calls, finish, spent = cut, "length", limit
        usage: dict[str, int] | None = None
        if quirks.report_usage:
            if reply.usage is not None:
                prompt, completion = reply.usage
            else:
                prompt, completion = max(1, int(prompt_chars(body) / quirks.chars_per_token)), spent  # the tools count too
            if quirks.num_ctx is not None and prompt + completion > quirks.num_ctx:
                # what it kept of the prompt, silently: the whole window (Ollama's runner) or what the answer left
                kept = quirks.num_ctx if quirks.num_ctx_counts == "prompt" else quirks.num_ctx - completion
                prompt = max(1, min(prompt, kept))
            usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        return _Rendered(content, reasoning, calls, finish, usage)

    @staticmethod
    def _call_id(index: int) -> str:
        return f"call_{uuid.uuid4().hex[:10]}_{index}"

    def _whole(self, body: dict[str, Any], reply: Reply) -> None:
        out = self._render(body, reply)
        as_object = self.server.state.quirks.arguments_as_object
        content: Any = out.content
        if self.server.state.quirks.content_parts and content is not None:
            content = _parts(content)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if out.reasoning:
            message["reasoning_content"] = out.reasoning
        if out.calls:
            message["tool_calls"] = [
                {
                    "id": self._call_id(i),
                    "type": "function",
                    "function": {"name": c.name, "arguments": _json_or_text(c.arguments) if as_object else c.arguments},
                }
                for i, c in enumerate(out.calls)
            ]
        payload: dict[str, Any] = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.server.state.model,
            "choices": [{"index": 0, "message": message, "finish_reason": out.finish}],
        }
        if out.usage is not None:
            payload["usage"] = out.usage
        self.send_body(200, json.dumps(payload).encode())

    def _stream(self, body: dict[str, Any], reply: Reply) -> None:
        """The reply as server-sent events: the content in three pieces, then each tool call, then usage."""
        out = self._render(body, reply)
        chunks = _Chunks(f"chatcmpl-{uuid.uuid4().hex[:12]}", int(time.time()), body.get("model") or self.server.state.model)
        quirks, state = self.server.state.quirks, self.server.state
        with state.lock:
            key = state.route(body)
            state.streams[key] = n = state.streams.get(key, 0) + 1
            broken = quirks.stream_error_every > 0 and n % quirks.stream_error_every == 0
        self.start_events()
        self.event(chunks.delta({"role": "assistant", "content": ""}))
        if out.reasoning:
            self.event(chunks.delta({"reasoning_content": out.reasoning}))
        if not self._stream_content(chunks, out.content or "", broken=broken, hold=reply.hold):
            self.event({"error": {"message": "Provider returned error", "code": 502}, "id": chunks.ident})
            self.end_events()
            return
        self._stream_calls(chunks, out.calls)
        self.event(chunks.delta({}, out.finish))
        options = body.get("stream_options") or {}
        if isinstance(options, dict) and options.get("include_usage") and out.usage is not None:
            self.event({**chunks.delta({}), "choices": [], "usage": out.usage})
        self.end_events()

    def _stream_content(self, chunks: _Chunks, text: str, *, broken: bool, hold: threading.Event | None = None) -> bool:
        """The content in three pieces, the rest after ``hold`` is set; ``False`` where the stream breaks after the
        first (OpenRouter: the provider failed after the answer began; a hold never released)."""
        parts = self.server.state.quirks.content_parts
        step = max(1, len(text) // 3)
        for start in range(0, len(text), step):
            piece = text[start : start + step]
            self.event(chunks.delta({"content": _parts(piece) if parts else piece}))
            if broken or (hold is not None and start == 0 and not hold.wait(HOLD_S)):
                return False
        return not broken

    def _stream_calls(self, chunks: _Chunks, calls: Sequence[ToolCallSpec]) -> None:
        """Each tool call: its head (index, id, name) then its arguments in two pieces; without ``index``, each whole
        in one delta with its id (Gemini's compatibility layer)."""
        if self.server.state.quirks.stream_without_index:
            for index, spec in enumerate(calls):
                whole = {
                    "id": self._call_id(index),
                    "type": "function",
                    "function": {"name": spec.name, "arguments": spec.arguments},
                }
                self.event(chunks.delta({"tool_calls": [whole]}))
            return
        for index, spec in enumerate(calls):
            head = {
                "index": index,
                "id": self._call_id(index),
                "type": "function",
                "function": {"name": spec.name, "arguments": ""},
            }
            self.event(chunks.delta({"tool_calls": [head]}))
            half = len(spec.arguments) // 2
            for piece in (spec.arguments[:half], spec.arguments[half:]):
                if piece:
                    self.event(chunks.delta({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))


class _Chunks(Record):
    """The frame of one streamed answer's chunks: its id, time and model."""

    ident: str
    created: int
    model: str

    def delta(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": self.ident,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }


def _context_refusal(style: str, context: int, asked: int, room: int) -> tuple[int, dict[str, Any]]:
    """The status and body with which a server family refuses a prompt longer than its context."""
    if style == "tgi":
        text = (
            f"Input validation error: `inputs` tokens + `max_new_tokens` must be <= {context}. "
            f"Given: {asked} `inputs` tokens and {room} `max_new_tokens`"
        )
        return 422, {"error": text, "error_type": "validation"}
    if style == "llama.cpp":
        text = "the request exceeds the available context size, try increasing it"
        error = {"code": 400, "message": text, "type": "exceed_context_size_error", "n_prompt_tokens": asked, "n_ctx": context}
        return 400, {"error": error}
    text = (
        f"This model's maximum context length is {context} tokens. However, you requested "
        f"{asked + room} tokens ({asked} in the messages, {room} in the completion)."
    )
    return 400, {"error": {"message": text, "type": "invalid_request_error", "code": 400}}


class _Rendered(Record):
    content: str | None
    reasoning: str
    calls: list[ToolCallSpec]
    finish: str
    usage: dict[str, int] | None


def _parts(text: str) -> list[dict[str, str]]:
    """Content as a list of parts, as some gateways send it."""
    return [{"type": "text", "text": text}]


def _json_or_text(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except json.JSONDecodeError:
        return arguments


class _Server(LoopbackHTTPServer):
    def __init__(self, address: tuple[str, int], state: _State) -> None:
        super().__init__(address, _Handler)
        self.state = state


class ScriptedOpenAIServer(BackgroundServer):
    """The scripted server on a background thread; a context manager."""

    _server: _Server

    def __init__(
        self,
        scripts: Mapping[str, Sequence[Reply | Responder]] | Sequence[Reply | Responder] = (),
        *,
        default: Reply | Responder | None = None,
        route: Callable[[Mapping[str, Any]], str] | None = None,
        json_schema: bool = True,
        quirks: Quirks | str | None = None,
        model: str = "scripted",
        models: Sequence[str] = (),
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        """``scripts`` is a list (one conversation, whatever the key) or replies by conversation key;
        ``json_schema=False`` answers 400 to structured-output requests, as servers without it do; ``quirks``
        (or a family's name in :data:`FAMILIES`) plays a server family's habits; ``models`` are served beside ``model``."""
        if isinstance(scripts, Mapping):
            table = {key: list(items) for key, items in scripts.items()}
            router = route or route_by_system_prompt
        else:
            table = {"": list(scripts)}
            router = route or (lambda body: "")
        played = FAMILIES[quirks] if isinstance(quirks, str) else quirks or Quirks()
        self._state = _State(table, default, router, json_schema, model, played, served=(model, *models))
        self._serve_in_background(_Server((host, port), self._state), "scripted-openai")

    @property
    def requests(self) -> list[Recorded]:
        """Every chat completion request, in arrival order."""
        with self._state.lock:
            return list(self._state.requests)

    def requests_for(self, key: str) -> list[Recorded]:
        return [r for r in self.requests if r.key == key]

    def remaining(self) -> dict[str, int]:
        """Scripted replies not yet used, by key."""
        with self._state.lock:
            return {key: len(items) for key, items in self._state.scripts.items() if items}

    def assert_complete(self) -> None:
        """Every scripted reply was used, and no request went unanswered."""
        left, unexpected = self.remaining(), list(self._state.unexpected)
        assert not left, f"scripted replies never requested: {left}"
        assert not unexpected, f"requests with no scripted reply: {unexpected}"


def reply_from_json(spec: Mapping[str, Any]) -> Reply:
    """A reply written as JSON: ``{"content": ...}``, ``{"tool_calls": [{"name": ..., "arguments": {...}}]}``,
    ``{"status": 429, "error": ...}``; any of them with ``"delay_s": 30`` (a stalled server), ``"usage": [100, 5]``
    (the prompt and completion tokens counted) or ``"reasoning": ...``."""
    tool_calls = tuple(
        ToolCallSpec(
            str(c["name"]), c["arguments"] if isinstance(c.get("arguments"), str) else json.dumps(c.get("arguments") or {})
        )
        for c in spec.get("tool_calls") or []
    )
    usage = spec.get("usage")
    return Reply(
        content=spec.get("content"),
        tool_calls=tool_calls,
        status=int(spec.get("status", 200)),
        error=str(spec.get("error", "")),
        retry_after_ms=spec.get("retry_after_ms", 1 if spec.get("status") else None),
        delay_s=float(spec.get("delay_s", 0.0)),
        usage=(int(usage[0]), int(usage[1])) if isinstance(usage, list) and len(usage) == 2 else None,
        reasoning=str(spec.get("reasoning", "")),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rigaudit.agents.llm.testing SCRIPT.json [--port N] [--family NAME]``: serve a script by hand,
    as a server family answers (:data:`FAMILIES`: ``no-stream``, ``ollama``, ``tgi-old``...).

    SCRIPT.json: ``{"scripts": {"chat": [reply, ...], "pcie": [...]}, "default": reply}`` (see :func:`reply_from_json`).
    """
    import argparse

    parser = argparse.ArgumentParser(prog="python -m rigaudit.agents.llm.testing", description=main.__doc__)
    parser.add_argument("script", help="the JSON script")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--family", choices=sorted(FAMILIES), help="answer as this server family does")
    args = parser.parse_args(argv)
    with open(args.script, encoding="utf-8") as handle:
        data = json.load(handle)
    scripts = {key: [reply_from_json(r) for r in replies] for key, replies in (data.get("scripts") or {}).items()}
    default = reply_from_json(data["default"]) if data.get("default") else None
    server = ScriptedOpenAIServer(scripts, default=default, port=args.port, quirks=args.family)
    family = f", answering as {args.family}" if args.family else ""
    sys.stderr.write(f"scripted OpenAI-compatible server at {server.base_url}{family} (Ctrl-C stops it)\n")
    sys.stderr.flush()
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    left = server.remaining()
    sys.stderr.write(f"replies never requested: {left}\n" if left else "every scripted reply was used\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
