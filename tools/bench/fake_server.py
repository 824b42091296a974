"""The fake inference server: a loopback OpenAI-compatible streaming server (stdlib only), for the bench tests.

``fake_server(FakeTiming(ttft_s=0.02, itl_s=0.01))`` serves ``/v1/chat/completions`` and
``/v1/completions`` (streaming SSE with a usage chunk, or plain JSON) and ``/v1/models``, emitting
one token every ``itl_s`` on an absolute schedule, so a client's measurements can be checked against
known timing. It can inject failures: HTTP 500 on every Nth request, or a stream cut mid-way.

The HTTP part, :class:`OpenAIStreamServer`, takes any token generator: ``benchmarks/tiny_openai_server.py``
plugs a real (tiny, random) transformers model into it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from rigaudit.tools.core.errors import OperationError
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.testing.loopback import BackgroundServer, LoopbackHandler, LoopbackHTTPServer

__all__ = ["FakeTiming", "Generation", "Generator", "InjectedError", "OpenAIStreamServer", "fake_server", "paced_generator"]


class InjectedError(OperationError):
    """Raised by a generator before its first token: the server answers with ``status``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class DropStream(OperationError):
    """Raised by a generator mid-stream: the server cuts the connection without ending the stream."""


class Generation(Record, frozen=False):
    prompt_tokens: int
    tokens: Iterator[str]
    """Token texts; iterating blocks for as long as producing each token takes."""


Generator = Callable[[dict[str, Any], str, int, int], Generation]
"""``generator(request_body, prompt, max_tokens, request_number) -> Generation``."""


class FakeTiming(Record):
    """The known behaviour of the fake: when tokens come, and which requests fail."""

    ttft_s: float = 0.02
    itl_s: float = 0.01
    fail_every: int = 0
    """Every Nth request (1-based) answers HTTP 500; 0: never."""
    drop_every: int = 0
    """Every Nth request has its stream cut after half of its tokens; 0: never."""
    slow_first: int = 0
    """The first N requests wait ``slow_extra_s`` more before their first token (a cold server)."""
    slow_extra_s: float = 0.0


def paced_generator(timing: FakeTiming) -> Generator:
    """Tokens ``tok0 tok1 ...`` on the absolute schedule ttft, ttft + itl, ttft + 2 itl, ..."""

    def generate(body: dict[str, Any], prompt: str, max_tokens: int, number: int) -> Generation:
        del body
        if timing.fail_every and number % timing.fail_every == 0:
            raise InjectedError(500, "injected failure")
        drop_after = max_tokens // 2 if timing.drop_every and number % timing.drop_every == 0 else -1
        extra = timing.slow_extra_s if number <= timing.slow_first else 0.0

        def tokens() -> Iterator[str]:
            start = time.perf_counter() + timing.ttft_s + extra
            for index in range(max_tokens):
                if index == drop_after:
                    raise DropStream
                delay = start + index * timing.itl_s - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                yield f" tok{index}"

        return Generation(prompt_tokens=max(1, len(prompt.split())), tokens=tokens())

    return generate


def _prompt(body: dict[str, Any]) -> str:
    if "messages" in body:
        parts = [m.get("content") for m in body.get("messages") or [] if isinstance(m, dict)]
        return " ".join(p for p in parts if isinstance(p, str))
    prompt = body.get("prompt", "")
    return prompt if isinstance(prompt, str) else " ".join(str(p) for p in prompt)


class _Stats(Record, frozen=False):
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    counter: Iterator[int] = field(default_factory=lambda: itertools.count(1))


class _Handler(LoopbackHandler):
    server: _Server

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            self.send_models(self.server.model)
        else:
            self.send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self.send_json(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return
        route = self.path.rstrip("/")
        if route not in ("/v1/chat/completions", "/v1/completions") or not isinstance(body, dict):
            self.send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        chat = route.endswith("chat/completions")
        with self.server.stats.lock:
            number = next(self.server.stats.counter)
            self.server.stats.requests += 1
        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        try:
            generation = self.server.generator(body, _prompt(body), max_tokens, number)
        except InjectedError as exc:
            self.send_json(exc.status, {"error": {"message": str(exc), "type": "server_error"}})
            return
        if body.get("stream"):
            self._stream(body, generation, chat)
        else:
            self._whole(generation, chat)

    def _stream(self, body: dict[str, Any], generation: Generation, chat: bool) -> None:
        ident, created, model = f"cmpl-{uuid.uuid4().hex[:12]}", int(time.time()), self.server.model
        kind = "chat.completion.chunk" if chat else "text_completion"

        def choice(text: str | None, finish: str | None) -> dict[str, Any]:
            if chat:
                delta = {} if text is None else {"content": text}
                return {"index": 0, "delta": delta, "finish_reason": finish}
            return {"index": 0, "text": text or "", "finish_reason": finish}

        self.start_events()
        count = 0
        try:
            if chat:
                self.event(
                    {
                        "id": ident,
                        "object": kind,
                        "created": created,
                        "model": model,
                        "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
                    }
                )
            for text in generation.tokens:
                count += 1
                self.event({"id": ident, "object": kind, "created": created, "model": model, "choices": [choice(text, None)]})
        except DropStream:
            self.close_connection = True
            self.request.shutdown(socket.SHUT_RDWR)
            return
        except Exception as exc:  # a real generator failed mid-stream: say so in-band, as servers do
            self.event({"error": {"message": f"{type(exc).__name__}: {exc}", "type": "server_error"}})
            self.end_events()
            return
        self.event({"id": ident, "object": kind, "created": created, "model": model, "choices": [choice(None, "length")]})
        options = body.get("stream_options") or {}
        if isinstance(options, dict) and options.get("include_usage"):
            usage = {
                "prompt_tokens": generation.prompt_tokens,
                "completion_tokens": count,
                "total_tokens": generation.prompt_tokens + count,
            }
            self.event({"id": ident, "object": kind, "created": created, "model": model, "choices": [], "usage": usage})
        self.end_events()

    def _whole(self, generation: Generation, chat: bool) -> None:
        try:
            texts = list(generation.tokens)
        except DropStream:
            self.close_connection = True
            self.request.shutdown(socket.SHUT_RDWR)
            return
        text = "".join(texts)
        choice: dict[str, Any] = (
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}
            if chat
            else {"index": 0, "text": text, "finish_reason": "length"}
        )
        usage = {
            "prompt_tokens": generation.prompt_tokens,
            "completion_tokens": len(texts),
            "total_tokens": generation.prompt_tokens + len(texts),
        }
        self.send_json(
            200,
            {
                "id": f"cmpl-{uuid.uuid4().hex[:12]}",
                "object": "chat.completion" if chat else "text_completion",
                "created": int(time.time()),
                "model": self.server.model,
                "choices": [choice],
                "usage": usage,
            },
        )


class _Server(LoopbackHTTPServer):
    def __init__(self, address: tuple[str, int], generator: Generator, model: str) -> None:
        super().__init__(address, _Handler)
        self.generator = generator
        self.model = model
        self.stats = _Stats()


class OpenAIStreamServer(BackgroundServer):
    """An OpenAI-compatible HTTP/1.1 server on a background thread; a context manager."""

    _server: _Server

    def __init__(self, generator: Generator, *, model: str = "fake-model", host: str = "127.0.0.1", port: int = 0) -> None:
        self._serve_in_background(_Server((host, port), generator, model), "fake-openai")

    @property
    def requests(self) -> int:
        """How many completion requests arrived."""
        return self._server.stats.requests


def fake_server(timing: FakeTiming | None = None, *, model: str = "fake-model") -> OpenAIStreamServer:
    """A paced fake (not yet started: use it as a context manager)."""
    return OpenAIStreamServer(paced_generator(timing or FakeTiming()), model=model)


def _main(argv: list[str] | None = None) -> int:
    """``python -m rigaudit.tools.bench.fake_server --port 8000 --ttft-ms 20 --itl-ms 10``: serve the fake until killed."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m rigaudit.tools.bench.fake_server", description=_main.__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--ttft-ms", type=float, default=20.0)
    parser.add_argument("--itl-ms", type=float, default=10.0)
    parser.add_argument("--fail-every", type=int, default=0)
    parser.add_argument("--drop-every", type=int, default=0)
    parser.add_argument("--model", default="fake-model")
    args = parser.parse_args(argv)
    timing = FakeTiming(args.ttft_ms / 1000.0, args.itl_ms / 1000.0, args.fail_every, args.drop_every)
    server = OpenAIStreamServer(paced_generator(timing), model=args.model, port=args.port)
    sys.stdout.write(f"listening on {server.base_url}\n")
    sys.stdout.flush()
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
