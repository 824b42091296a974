"""A crafted answer of the server under load: each is a failed request or no version, never a traceback."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import anyio
import pytest

from rigaudit.tools.bench._http import HttpError, StreamingClient
from rigaudit.tools.bench.endpoint import _served
from rigaudit.tools.bench.loadgen import _Stream
from rigaudit.tools.bench.provenance import server_version

DEEP = b"[" * 30_000 + b"]" * 30_000


@pytest.fixture
def answer() -> Iterator[tuple[list[bytes], str]]:
    """A server on loopback that answers every connection with the next of its bytes, once."""
    replies: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(replies.pop(0) if replies else b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=serve, daemon=True).start()
    yield replies, f"http://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()


def test_a_status_in_other_digits_is_a_bad_status_line(answer: tuple[list[bytes], str]) -> None:
    replies, url = answer
    replies.append(b"HTTP/1.1 \xb200 OK\r\nContent-Length: 2\r\n\r\n{}")

    async def send() -> None:
        async with StreamingClient(url) as client, client.get("/v1/models"):
            pass

    with pytest.raises(HttpError, match="bad status line"):
        anyio.run(send)


def test_a_version_answer_that_is_no_http_or_nested_past_the_parser_is_no_version(answer: tuple[list[bytes], str]) -> None:
    replies, url = answer
    replies += [b"HTTP/1.1 \xb200 OK\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 60000\r\n\r\n" + DEEP]
    replies.append(b'HTTP/1.1 200 OK\r\nContent-Length: 21\r\n\r\n{"version": "0.11.0"}')
    assert server_version(url) == "0.11.0 (/info)"


def test_models_and_events_nested_past_the_parser_are_not_read() -> None:
    assert _served(DEEP) == []
    stream = _Stream()
    stream.line(b"data: " + DEEP, 1.0)
    assert stream.error is not None and stream.error.startswith("bad event")
