"""A loopback HTTP server on a daemon thread, usable as a context manager (standard library only)."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from typing import TypeVar

_S = TypeVar("_S", bound="BackgroundServer")


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
