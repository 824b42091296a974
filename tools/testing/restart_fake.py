"""A server that arm commands restart, in process and on a scripted clock: for ``bench ab --arm`` tests and validation.

The arms' commands are real shell commands that append the arm's name to a state file
(``echo fix >> STATE``); the fake reads that file at every request: its last line is the
configuration the server runs, its line count the server session (each restart a new one). The
model (every draw seeded):
- each arm has a pace, seconds per token (``paces``);
- each server session runs at its own factor exp(N(0, ``session_cv``)), drawn from its number: what a
  restart changes besides the arm (memory layout, clocks, the allocator's state);
- each request at a factor exp(N(0, ``request_cv``)) drawn from its number;
- an empty state file is a server that is down (HTTP 503), a line ``down`` too.
The clock moves by each token's gap, whichever stream it serves, so a busy machine changes no figure.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import anyio.lowlevel

from rigaudit.tools.bench.loadgen import Connect, Load, LoadSpec


class Clock:
    """A clock that moves only when a scripted response (or a sleep) says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += max(0.0, seconds)
        await anyio.lowlevel.checkpoint()


def _event(text: str) -> bytes:
    return b"data: " + json.dumps({"choices": [{"delta": {"content": text}}]}).encode() + b"\n\n"


@dataclass
class _Stream:
    clock: Clock
    pieces: list[tuple[float, bytes]]
    status: int = 200

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        for later, piece in self.pieces:
            self.clock.now += later
            await anyio.lowlevel.checkpoint()
            yield piece

    async def aread(self) -> bytes:
        return b"down"


@dataclass
class RestartedServer:
    """Stands for the load's HTTP client; the state file says which arm runs and which session it is."""

    state: Path
    paces: Mapping[str, float]
    session_cv: float = 0.0
    request_cv: float = 0.0
    seed: int = 0
    clock: Clock = field(default_factory=Clock)
    requests: int = 0
    on_request: Callable[[int, str], None] | None = None
    """Called before each request with its number and the arm that serves it (a test's Ctrl-C)."""

    def connect(self, spec: LoadSpec) -> RestartedServer:
        del spec
        return self

    async def __aenter__(self) -> RestartedServer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    def load(self) -> Load:
        return Load(connect=cast(Connect, self.connect), clock=self.clock, sleep=self.clock.sleep)

    def lines(self) -> list[str]:
        try:
            return self.state.read_text().split()
        except FileNotFoundError:
            return []

    @contextlib.asynccontextmanager
    async def post(self, path: str, body: bytes) -> AsyncIterator[_Stream]:
        del path
        self.requests += 1
        lines = self.lines()
        arm = lines[-1] if lines else "down"
        if self.on_request is not None:
            self.on_request(self.requests, arm)
        if arm not in self.paces:
            yield _Stream(self.clock, [], status=503)
            return
        session = math.exp(random.Random(self.seed * 1_000_003 + len(lines)).gauss(0.0, self.session_cv))
        jitter = math.exp(random.Random(self.seed * 7_919 + self.requests).gauss(0.0, self.request_cv))
        gap = self.paces[arm] * session * jitter
        tokens = int(json.loads(body)["max_tokens"])
        pieces = [(gap, _event(f" t{i}")) for i in range(tokens)]
        yield _Stream(self.clock, [*pieces, (0.0, b"data: [DONE]\n\n")])
