"""A streaming load generator for OpenAI-compatible servers (chat and completions).

For each concurrency level (and each repeat), ``requests`` requests are sent with at most
``concurrency`` in flight. Each request records its time to first token, the gaps between streamed
token events and its output tokens (from the final usage chunk, else the events counted). A
level's output tokens/s is its total output tokens over its wall time. A failed request (HTTP
error, error event, cut stream, timeout) is recorded with its error, never raised.

Warm-up requests go first and are excluded from every figure. The (level, repeat) runs follow a
balanced order (a Williams Latin square, :mod:`rigaudit.tools.bench.schedule`), so that a drift
over the session is not mistaken for a difference between levels; each run records its position
and start time, from which ``compare`` detects such a drift.
"""

from __future__ import annotations

import itertools
import json
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timezone
from typing import Any, Literal
from urllib.parse import urlsplit

import anyio

from rigaudit.tools.bench._http import HttpError, StreamingClient
from rigaudit.tools.bench.machine import this_container, this_machine
from rigaudit.tools.bench.provenance import gpus_at_start, samples_digest, server_version
from rigaudit.tools.bench.results import BenchResult, GpuAtStart, Run, Sample, host_name, summarize, tool_version
from rigaudit.tools.bench.schedule import Order, visit_order
from rigaudit.tools.core.record import Record, field

Api = Literal["chat", "completions"]
Progress = Callable[[str, int, int], None]
"""``progress(label, done, total)``: called after every request of a phase (warm-up, a level)."""

_WORD_TEXT = (
    "the of and to in is was for that with as on by at from his an were are which this be or had not but "
    "first one their its new after who they have her she two been other when there all during into school "
    "time may years more most only over city some world would where later up such used many can state "
    "about national out known university united then made system while part under film three team both "
    "since between long each being well called second including him several area three house around game "
    "life "
)
_WORDS = tuple(_WORD_TEXT.split())


class LoadSpec(Record):
    base_url: str
    model: str
    api: Api = "chat"
    concurrency: tuple[int, ...] = (1, 4, 16)
    requests: int | None = None
    """Requests per level and repeat; None: four per concurrent slot, at least 8."""
    max_tokens: int = 128
    prompt_tokens: int = 128
    repeat: int = 1
    warmup: int = 1
    ignore_eos: bool = True
    """Ask the server to ignore end-of-sequence (vLLM, SGLang), so every request yields max_tokens."""
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 600.0
    seed: int = 0
    order: Order = "balanced"
    slo: Mapping[str, float] = field(default_factory=dict)
    """Service-level objectives for goodput: ``{"ttft_ms": 200.0, "tpot_ms": 50.0}``."""

    def requests_for(self, concurrency: int) -> int:
        return self.requests if self.requests else max(8, 4 * concurrency)

    def total_requests(self, rounds: int) -> int:
        """Requests sent by ``rounds`` rounds of every level, warm-up included."""
        return sum(self.requests_for(c) for c in self.concurrency) * rounds + self.warmup

    def result(
        self, runs: list[Run], started_at: str, gpus: list[GpuAtStart] | None = None, server_version: str | None = None
    ) -> BenchResult:
        """The ``rigaudit.bench/1`` result of these runs, with the workload that produced them, the GPUs read at
        the start (``gpus``), the server's version and the digest of its samples."""
        return BenchResult(
            base_url=self.base_url,
            model=self.model,
            api=self.api,
            started_at=started_at,
            max_tokens=self.max_tokens,
            prompt_tokens=self.prompt_tokens,
            tool=tool_version(),
            host=host_name(),
            host_id=this_machine() or None,
            container=this_container(),
            ignore_eos=self.ignore_eos,
            warmup=self.warmup,
            order=self.order,
            slo=dict(self.slo),
            gpus=gpus,
            server_version=server_version,
            samples_digest=samples_digest(runs),
            runs=runs,
        )


def endpoint(base_url: str, api: Api) -> str:
    """``http://h:p`` or ``http://h:p/v1`` → the full URL of the chat or completions endpoint."""
    base = base_url.rstrip("/")
    if not base.endswith("/v1"):
        base += "/v1"
    return f"{base}/chat/completions" if api == "chat" else f"{base}/completions"


def url_path(url: str) -> str:
    """The path (and query) of a URL: what a request names to its origin."""
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def make_prompt(tokens: int, index: int, seed: int = 0) -> str:
    """About ``tokens`` tokens of common words, different for each request (no prefix-cache hits)."""
    rng = random.Random(seed * 1_000_003 + index)
    return " ".join(rng.choice(_WORDS) for _ in range(max(1, tokens)))


def request_body(spec: LoadSpec, prompt: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": spec.model,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": spec.max_tokens,
        "temperature": 0.0,
    }
    if spec.api == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    if spec.ignore_eos:
        body["ignore_eos"] = True
    return body


def _event_text(event: dict[str, Any]) -> str:
    choices = event.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        return ""
    choice = choices[0]
    delta = choice.get("delta")
    text = delta.get("content") or delta.get("reasoning_content") or "" if isinstance(delta, dict) else choice.get("text") or ""
    return text if isinstance(text, str) else ""


Clock = Callable[[], float]
"""Seconds on a monotonic clock (``time.perf_counter``; tests pass their own)."""


class _Stream:
    """What a streamed response said so far: when each token event came, the usage's token count, whether it ended
    with ``[DONE]``, and its last error."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self.usage_tokens: int | None = None
        self.done = False
        self.error: str | None = None

    def line(self, raw: bytes, now: float) -> None:
        """One server-sent event line, arrived at ``now``."""
        line = raw.strip()
        if not line.startswith(b"data:"):
            return
        data = line[5:].strip()
        if data == b"[DONE]":
            self.done = True
            return
        try:
            event = json.loads(data)
        except (json.JSONDecodeError, RecursionError):  # a server's event nested past the parser's stack
            self.error = f"bad event: {data[:80].decode(errors='replace')}"
            return
        if not isinstance(event, dict):
            return
        if event.get("error"):
            err = event["error"]
            self.error = f"error event: {err.get('message', err) if isinstance(err, dict) else err}"
        usage = event.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            self.usage_tokens = usage["completion_tokens"]
        if _event_text(event):
            self.arrivals.append(now)

    def sample(self, start: float, end: float) -> Sample:
        """The request's timings; a stream without ``[DONE]`` or without tokens failed."""
        error = self.error
        if error is None and not self.done:
            error = "stream ended before [DONE]"
        if error is None and not self.arrivals:
            error = "no tokens streamed"
        arrivals = self.arrivals
        return Sample(
            ttft_ms=(arrivals[0] - start) * 1000.0 if arrivals else None,
            itl_ms=[(b - a) * 1000.0 for a, b in itertools.pairwise(arrivals)],
            output_tokens=self.usage_tokens if self.usage_tokens is not None else len(arrivals),
            latency_ms=(end - start) * 1000.0,
            ok=error is None,
            error=error,
        )


async def one_request(
    client: StreamingClient, path: str, body: dict[str, Any], timeout_s: float = 600.0, clock: Clock = time.perf_counter
) -> Sample:
    """Send one streaming request and time its token events on ``clock``; never raises for a failed request."""
    stream = _Stream()
    payload = json.dumps(body).encode()
    start = clock()
    try:
        with anyio.fail_after(timeout_s):
            async with client.post(path, payload) as response:
                if response.status != 200:
                    text = (await response.aread())[:300].decode(errors="replace")
                    return Sample(
                        ok=False,
                        error=f"HTTP {response.status}: {' '.join(text.split())}",
                        latency_ms=(clock() - start) * 1000.0,
                    )
                buffer = b""
                async for chunk in response.aiter_bytes():
                    now = clock()
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for raw in lines:
                        stream.line(raw, now)
    except HttpError as exc:
        stream.error = str(exc)
    except TimeoutError:
        stream.error = f"timed out after {timeout_s:g} s"
    return stream.sample(start, clock())


class LoadSession:
    """One client, one clock and one request counter for a whole session: warm-up, then timed runs.

    Every prompt is different (no prefix-cache hits across the session); every timed run records
    its position in the session and its start time relative to the first timed run.
    """

    def __init__(
        self, client: StreamingClient, spec: LoadSpec, progress: Progress | None = None, clock: Clock = time.perf_counter
    ) -> None:
        self._client = client
        self._now = clock
        self._spec = spec
        self._progress = progress
        self._path = url_path(endpoint(spec.base_url, spec.api))
        self._offset = 0
        self._runs = 0
        self._clock: float | None = None

    def use(self, client: StreamingClient) -> None:
        """Send through ``client`` from now on (a restarted server: the old connections are gone)."""
        self._client = client

    async def requests(self, concurrency: int, count: int, label: str) -> tuple[list[Sample], float]:
        """Send ``count`` requests with at most ``concurrency`` in flight; (samples in order, wall time)."""
        spec = self._spec
        bodies = [request_body(spec, make_prompt(spec.prompt_tokens, self._offset + i, spec.seed)) for i in range(count)]
        self._offset += count
        samples: list[Sample | None] = [None] * count
        cursor = 0
        finished = 0

        async def worker() -> None:
            nonlocal cursor, finished
            while cursor < count:
                index = cursor
                cursor += 1
                samples[index] = await one_request(self._client, self._path, bodies[index], spec.timeout_s, self._now)
                finished += 1
                if self._progress is not None:
                    self._progress(label, finished, count)

        start = self._now()
        async with anyio.create_task_group() as group:
            for _ in range(min(concurrency, count)):
                group.start_soon(worker)
        return [s for s in samples if s is not None], self._now() - start

    async def warm_up(self, count: int, label: str = "warm-up") -> None:
        """Untimed requests (a cold server, a changed setting): excluded from every figure."""
        if count > 0:
            await self.requests(min(count, max(self._spec.concurrency)), count, label)

    async def run(self, concurrency: int, repeat: int, label: str) -> Run:
        """One timed run of one level."""
        now = self._now()
        if self._clock is None:
            self._clock = now
        started = now - self._clock
        samples, duration = await self.requests(concurrency, self._spec.requests_for(concurrency), label)
        run = summarize(
            samples,
            concurrency=concurrency,
            repeat=repeat,
            duration_s=duration,
            order=self._runs,
            started_s=started,
            slo=self._spec.slo,
        )
        self._runs += 1
        return run


Connect = Callable[[LoadSpec], StreamingClient]
"""The client for a spec (:func:`client_for`; tests pass one that streams a script)."""


def client_for(spec: LoadSpec) -> StreamingClient:
    headers = {"Authorization": f"Bearer {spec.api_key}"} if spec.api_key else {}
    return StreamingClient(endpoint(spec.base_url, spec.api), headers)


Sleep = Callable[[float], Awaitable[None]]
"""Waits that many seconds on a :data:`Clock` (``anyio.sleep`` for the real one)."""


class Load(Record):
    """How the load reaches the server and is timed: the client for a spec, the clock its figures are read on, and
    how what runs beside it (the profile's sampler) waits on that clock. The real ones unless a test says."""

    connect: Connect = client_for
    clock: Clock = time.perf_counter
    sleep: Sleep = anyio.sleep


async def reach(load: Load, spec: LoadSpec) -> str | None:
    """Before any load: the server answers (:func:`~rigaudit.tools.bench.endpoint.check_endpoint`: one request, a
    deadline; :class:`EndpointError` otherwise) and a warning when it lists other models. A scripted client (a
    test's ``load``) is not asked."""
    from rigaudit.tools.bench.endpoint import DEADLINE_S, check_endpoint

    if load.connect is not client_for:
        return None
    deadline = min(DEADLINE_S, spec.timeout_s)
    return await check_endpoint(spec.base_url, spec.model, api_key=spec.api_key, deadline_s=deadline)


REAL = Load()
"""The real client, clock and sleep."""


def now_utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


async def run_load(spec: LoadSpec, progress: Progress | None = None) -> BenchResult:
    """Warm up, then every level ``repeat`` times in the spec's order; returns the ``rigaudit.bench/1`` result."""
    started = now_utc()
    gpus = await anyio.to_thread.run_sync(gpus_at_start)
    version = await anyio.to_thread.run_sync(lambda: server_version(spec.base_url))
    runs: list[Run] = []
    order = visit_order(list(spec.concurrency), spec.repeat, spec.order)
    async with client_for(spec) as client:
        session = LoadSession(client, spec, progress)
        await session.warm_up(spec.warmup)
        for index, (repeat, concurrency) in enumerate(order):
            left = time_left(estimate_left(runs, [c for _, c in order[index:]]))
            label = f"c={concurrency}" + (f" repeat {repeat + 1}/{spec.repeat}" if spec.repeat > 1 else "") + left
            runs.append(await session.run(concurrency, repeat, label))
    return spec.result(runs, started, gpus, version)


def estimate_left(done: list[Run], levels: list[int]) -> float | None:
    """Seconds the runs of ``levels`` still take: each at its level's mean so far, else the mean of every run so far."""
    if not done:
        return None
    overall = sum(r.duration_s for r in done) / len(done)
    by_level: dict[int, list[float]] = {}
    for run in done:
        by_level.setdefault(run.concurrency, []).append(run.duration_s)
    return sum(sum(by_level[c]) / len(by_level[c]) if c in by_level else overall for c in levels)


def time_left(seconds: float | None) -> str:
    """`` (about 1m20s left)`` for a progress label; empty when nothing is known yet."""
    if seconds is None or seconds < 1:
        return ""
    whole = round(seconds)
    return f" (about {whole // 60}m{whole % 60:02d}s left)" if whole >= 60 else f" (about {whole} s left)"
