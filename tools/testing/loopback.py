"""What rigaudit's loopback test servers share: a background thread, JSON replies and SSE streams.

The fake inference server (:mod:`rigaudit.tools.bench.fake_server`) and the scripted model server
(:mod:`rigaudit.agents.llm.testing.server`) both speak OpenAI's HTTP: HTTP/1.1 with keep-alive,
JSON bodies, and ``text/event-stream`` replies sent as chunked ``data:`` events ending in
``[DONE]``. Standard library only.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

__all__ = ["BackgroundServer", "LoopbackHTTPServer", "LoopbackHandler"]

_S = TypeVar("_S", bound="BackgroundServer")


class LoopbackHTTPServer(ThreadingHTTPServer):
    """A threading server whose client that gave up (a timeout test) is not an error worth a traceback."""

    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class LoopbackHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 without Nagle's delay, quiet logs, and the two kinds of reply an OpenAI server sends."""

    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        del format, args

    def send_body(self, status: int, data: bytes, headers: Mapping[str, str] | None = None) -> None:
        """A whole JSON reply of ``data`` bytes."""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def send_json(self, status: int, payload: object, headers: Mapping[str, str] | None = None) -> None:
        self.send_body(status, json.dumps(payload).encode(), headers)

    def send_models(self, *models: str) -> None:
        """``GET /v1/models``: the models this server serves."""
        data = [{"id": model, "object": "model", "owned_by": "rigaudit"} for model in models]
        self.send_json(200, {"object": "list", "data": data})

    def start_events(self) -> None:
        """Begin a ``text/event-stream`` reply (chunked)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, payload: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))

    def event(self, obj: dict[str, Any] | str) -> None:
        """One ``data:`` event: a JSON object, or a bare word such as ``[DONE]``."""
        text = obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":"))
        self.chunk(f"data: {text}\n\n".encode())

    def end_events(self) -> None:
        """``[DONE]`` and the last, empty chunk."""
        self.event("[DONE]")
        self.chunk(b"")


class BackgroundServer:
    """Owns ``self._server`` (set by the subclass) and serves it on a thread between start() and stop()."""

    _server: ThreadingHTTPServer

    def _serve_in_background(self, server: ThreadingHTTPServer, name: str) -> None:
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, args=(0.02,), name=name, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The ``.../v1`` URL, as OpenAI clients expect it."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self: _S) -> _S:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def serve_forever(self) -> None:
        """Serve on the calling thread (a standalone server process)."""
        self._server.serve_forever()

    def __enter__(self: _S) -> _S:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
