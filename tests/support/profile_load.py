"""A scripted load for the profile's tests: a client whose tokens keep a fake GPU busy, all on one scripted clock.

:class:`GpuClient` stands for the load's HTTP client (:class:`~rigaudit.tools.bench.loadgen.Load`'s ``connect``):
each request streams its first token after ``ttft_s`` and the others ``itl_s`` apart, and the fake GPU runs a
kernel for the last ``busy_s`` of every gap, as :func:`~rigaudit.tools.bench.profile_fake.busy_generator` does in
the loopback server. The clock moves only as the tokens stream; the sampler's ``sleep`` waits on it
(:func:`scripted_sleep`), and :class:`InLoopHost` answers NVML in the event loop, so a sample is taken between
two tokens, never while one streams: the same figures on an idle machine and a busy one.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import anyio.lowlevel

from rigaudit.tools.bench.loadgen import Load
from rigaudit.tools.hosts.base import NvmlResult
from rigaudit.tools.hosts.fake_nvml import FakeGpu, fake_pynvml
from rigaudit.tools.hosts.local import LocalHost
from rigaudit.tools.hosts.nvml_local import NvmlFacade
from tests.support.bench_ab import ScriptedClock, SelfClient


def _event(text: str) -> bytes:
    return b"data: " + json.dumps({"choices": [{"delta": {"content": text}}]}).encode() + b"\n\n"


@dataclass
class _Stream:
    client: GpuClient
    tokens: int
    status: int = 200

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        c = self.client
        for index in range(self.tokens):
            gap = c.ttft_s if index == 0 else c.itl_s
            c.clock.now += gap - c.busy_s
            await anyio.lowlevel.checkpoint()  # the sampler may read the GPU idle here
            with c.gpu.kernel():
                c.clock.now += c.busy_s
            yield _event(f" tok{index}")
        yield b"data: [DONE]\n\n"

    async def aread(self) -> bytes:
        return b""


@dataclass
class GpuClient(SelfClient):
    """The server and its GPU, scripted: what a request streams, and when the GPU is busy, on ``clock``."""

    gpu: FakeGpu
    ttft_s: float
    itl_s: float
    busy_s: float
    clock: ScriptedClock = field(default_factory=ScriptedClock)
    requests: int = 0

    @contextlib.asynccontextmanager
    async def post(self, path: str, body: bytes) -> AsyncIterator[_Stream]:
        del path
        self.requests += 1
        yield _Stream(self, int(json.loads(body)["max_tokens"]))

    def load(self) -> Load:
        """The seam: this client, its clock, and a sleep on that clock."""
        return Load(self.connect, self.clock, scripted_sleep(self.clock))


def scripted_sleep(clock: ScriptedClock) -> Callable[[float], Awaitable[None]]:
    """Waits until ``clock`` has moved that far (the load moves it), letting the other tasks run meanwhile."""

    async def sleep(seconds: float) -> None:
        until = clock.now + seconds
        while clock.now < until:
            await anyio.lowlevel.checkpoint()

    return sleep


class InLoopHost(LocalHost):
    """This host, with NVML answered by fake GPUs in the event loop (the fakes answer at once: no worker thread
    that the load could overtake)."""

    def __init__(self, gpus: list[FakeGpu]) -> None:
        self._fake = NvmlFacade(module=fake_pynvml(gpus))
        super().__init__(nvml=self._fake)

    async def nvml(self, fn: str, *args: int) -> NvmlResult:
        return self._fake._call_sync(fn, tuple(args))
