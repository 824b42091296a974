"""Helpers for the bench ab tests: a tiny snapshot, a plan of sysctl steps, a fake server whose speed the copy decides.

Both fakes read ``vm.swappiness`` from the snapshot copy that ``bench ab`` switches, at every request:
10 (the fix) streams a token every 3 ms, anything else every 9 ms. So the fix's effect is real
(it follows the file the switch writes) and known (ITL a third, output tok/s about 2.5x).

:func:`speed_client` is what the verdicts are asserted on: an in-process client on a scripted
clock (the clock moves by each token's gap, whichever stream it serves; each request's pace is off
by a jitter of at most 5% drawn from its number), so a busy machine changes no figure.
:func:`speed_server` serves the same over loopback HTTP, with real sleeps, for what does not
depend on speed (the order of requests, a server that stops answering, Ctrl-C).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import anyio.lowlevel

from rigaudit.tools.bench.fake_server import FakeTiming, Generation, OpenAIStreamServer, paced_generator
from rigaudit.tools.bench.loadgen import LoadSpec
from rigaudit.tools.hosts.base import HostWriteError
from rigaudit.tools.hosts.snapshot import SnapshotHost

SWAPPINESS = "/proc/sys/vm/swappiness"
NUMA = "/proc/sys/kernel/numa_balancing"


def make_snapshot(root: Path) -> Path:
    """A snapshot with just the two sysctls the plan switches (60 and 1)."""
    root.mkdir(parents=True)
    manifest = {"format": "rigaudit.snapshot/1", "hostname": "ab-host", "taken_at": "2026-01-01T00:00:00Z", "taken_by": "test"}
    (root / "snapshot.json").write_text(json.dumps(manifest))
    for path, value in ((SWAPPINESS, "60\n"), (NUMA, "1\n")):
        target = root / "files" / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(value)
    return root


def _step(step_id: str, key: str, value: str, kind: str = "runtime") -> dict[str, Any]:
    return {
        "id": step_id,
        "check": f"kernel.{step_id}",
        "priority": "P2",
        "kind": kind,
        "where": "host",
        "title": f"set {key} to {value}",
        "actions": [{"type": "sysctl", "key": key, "value": value}],
        "risk": "low",
    }


def make_plan(path: Path) -> Path:
    steps = [
        _step("vm.swappiness", "vm.swappiness", "10"),
        _step("numa.balancing", "kernel.numa_balancing", "0"),
        _step("reboot.step", "kernel.panic", "1", kind="reboot"),
    ]
    path.write_text(json.dumps({"steps": steps}))
    return path


def tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for folder, _, names in sorted(os.walk(root)):
        for name in sorted(names):
            full = Path(folder) / name
            digest.update(str(full.relative_to(root)).encode() + b"\0" + full.read_bytes())
    return digest.hexdigest()


def value(copy: Path, path: str) -> str:
    return (copy / "files" / path.lstrip("/")).read_text().strip()


FAST, SLOW = FakeTiming(0.005, 0.003), FakeTiming(0.005, 0.009)
"""The pace with the fix in place (``vm.swappiness`` 10) and without."""
JITTER = 0.05


def _state(copy: Path) -> str:
    target = copy / "files" / SWAPPINESS.lstrip("/")
    return target.read_text().strip() if target.exists() else "absent"


class ScriptedClock:
    """A clock that moves only when a scripted response says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _event(text: str) -> bytes:
    return b"data: " + json.dumps({"choices": [{"delta": {"content": text}}]}).encode() + b"\n\n"


@dataclass
class _Stream:
    clock: ScriptedClock
    pieces: list[tuple[float, bytes]]
    status: int = 200

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        for later, piece in self.pieces:
            self.clock.now += later
            await anyio.lowlevel.checkpoint()  # the other streams in flight take their turn
            yield piece

    async def aread(self) -> bytes:
        return b""


class SelfClient:
    """A scripted stand-in for the load's HTTP client: it is its own connection and its own context (no socket)."""

    def connect(self, spec: LoadSpec) -> Self:
        del spec
        return self

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


@dataclass
class SpeedClient(SelfClient):
    """Stands for the load's HTTP client: what the server saw (the copy's swappiness at every request), on ``clock``."""

    copy: Path
    clock: ScriptedClock = field(default_factory=ScriptedClock)
    seen: list[str] = field(default_factory=list)

    @contextlib.asynccontextmanager
    async def post(self, path: str, body: bytes) -> AsyncIterator[_Stream]:
        del path
        state = _state(self.copy)
        self.seen.append(state)
        timing = FAST if state == "10" else SLOW
        pace = 1.0 + random.Random(len(self.seen)).uniform(-JITTER, JITTER)
        tokens = int(json.loads(body)["max_tokens"])
        gaps = [timing.ttft_s * pace] + [timing.itl_s * pace] * (tokens - 1)
        pieces = [(gap, _event(f" tok{i}")) for i, gap in enumerate(gaps)]
        yield _Stream(self.clock, [*pieces, (0.0, b"data: [DONE]\n\n")])


@dataclass
class SpeedServer:
    """What the fake saw: the copy's swappiness at every request, and a hook called before each one."""

    server: OpenAIStreamServer
    seen: list[str] = field(default_factory=list)
    on_request: Callable[[int, str], None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return self.server.base_url


@contextmanager
def speed_server(copy: Path) -> Iterator[SpeedServer]:
    fast, slow = paced_generator(FAST), paced_generator(SLOW)
    holder: list[SpeedServer] = []

    def generate(body: dict[str, Any], prompt: str, max_tokens: int, number: int) -> Generation:
        state = _state(copy)
        speed = holder[0]
        with speed.lock:
            speed.seen.append(state)
        if speed.on_request is not None:
            speed.on_request(number, state)
        return (fast if state == "10" else slow)(body, prompt, max_tokens, number)

    with OpenAIStreamServer(generate) as server:
        holder.append(SpeedServer(server))
        yield holder[0]


class FailingHost(SnapshotHost):
    """A writable snapshot host whose ``fail_at``-th write (counted from 1, over every instance) is refused."""

    writes = 0

    def __init__(self, root: Path, fail_at: int) -> None:
        super().__init__(root, writable=True)
        self.fail_at = fail_at

    async def write(self, path: str, data: bytes, *, offset: int | None = None) -> None:
        FailingHost.writes += 1
        if FailingHost.writes == self.fail_at:
            raise HostWriteError(f"{path}: injected failure")
        await super().write(path, data, offset=offset)
