"""Probe: an investigator's view of a host.

Every read is memoized (investigators share one cache, so a fact is read once per audit),
recorded as :class:`~tools.schema.Evidence`, throttled by a host-wide limiter, and every
command passes the policy first: the audit phase is provably read-only.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import anyio

from rigaudit.tools.core.record import Record, field
from rigaudit.tools.hosts.base import CommandResult, DirResult, FileResult, Host, NvmlResult, answers_at_once
from rigaudit.tools.policy import Verdict, vet_argv
from rigaudit.tools.schema.evidence import Evidence

_T = TypeVar("_T")
_RAW_LIMIT = 4000

HostOpResult = FileResult | DirResult | CommandResult | NvmlResult | tuple[str, str | None] | tuple[str, bool]
"""What one host operation returned; readlink is ``(path, target)``, exists ``(path, bool)``."""

Observer = Callable[[str, HostOpResult], None]
"""Called once for each operation that reached the host (not for cache hits)."""


def file_ref(path: str) -> str:
    return f"file:{path}"


def dir_ref(path: str) -> str:
    return f"dir:{path}"


def command_ref(argv: Sequence[str]) -> str:
    return "cmd:" + " ".join(argv)


def nvml_ref(fn: str, args: Sequence[int]) -> str:
    return f"nvml:{fn}({', '.join(str(a) for a in args)})"


def _raw_text(data: bytes) -> str:
    if b"\x00" in data[:512]:
        return f"<{len(data)} bytes binary>"
    text = data.decode("utf-8", errors="replace")
    return text if len(text) <= _RAW_LIMIT else text[:_RAW_LIMIT] + f"... [{len(text) - _RAW_LIMIT} more chars]"


AUTO_FLOOR = 8
"""Host operations in flight at first when the limit follows the host (``concurrency=None``)."""
AUTO_CEILING = 64
PER_TOKEN_S = 100e-6
"""One more operation in flight per 100 µs of a host operation's latency: a local read (tens of µs) keeps the
floor; 5 ms per read (SSH, the node server, a replay with latency) opens 50 at once. Chains of dependent reads
(29 at most on the seed) then bound the audit, not the limit."""
_SMOOTHING = 0.2


class _Shared(Record, frozen=False):
    host: Host
    limiter: anyio.CapacityLimiter
    policy: Callable[[Sequence[str]], Verdict]
    observer: Observer | None
    adaptive: bool = False
    at_once: bool = False
    """The host answers without waiting (:func:`~tools.hosts.base.answers_at_once`): reads run one after another."""
    latency_s: float | None = None
    """The smoothed wall time of one host operation (``adaptive`` only)."""
    cache: dict[str, object] = field(default_factory=dict)
    pending: dict[str, anyio.Event] = field(default_factory=dict)
    evidence: dict[str, Evidence] = field(default_factory=dict)
    derived: dict[str, tuple[object, tuple[str, ...]]] = field(default_factory=dict)
    """Facts derived from reads (:meth:`Probe.derived`), by name: each with the refs it read."""
    deriving: dict[str, anyio.Event] = field(default_factory=dict)


def _follow_latency(shared: _Shared, took_s: float) -> None:
    """Fold one operation's wall time into the smoothed latency and set the limit from it."""
    latency = took_s if shared.latency_s is None else shared.latency_s + _SMOOTHING * (took_s - shared.latency_s)
    shared.latency_s = latency
    tokens = min(AUTO_CEILING, max(AUTO_FLOOR, math.ceil(latency / PER_TOKEN_S)))
    if tokens != shared.limiter.total_tokens:
        shared.limiter.total_tokens = tokens


class Probe:
    """Read-only, memoizing, evidence-recording access to a :class:`Host`."""

    def __init__(
        self,
        host: Host,
        *,
        concurrency: int | None = 8,
        policy: Callable[[Sequence[str]], Verdict] = vet_argv,
        observer: Observer | None = None,
        on_activity: Callable[[str], None] | None = None,
    ) -> None:
        """``concurrency``: host operations in flight at once; ``None``: chosen from the host's measured latency
        (:data:`AUTO_FLOOR` to :data:`AUTO_CEILING`, one per :data:`PER_TOKEN_S` of latency)."""
        tokens = AUTO_FLOOR if concurrency is None else max(1, concurrency)
        self._shared = _Shared(
            host, anyio.CapacityLimiter(tokens), policy, observer, adaptive=concurrency is None, at_once=answers_at_once(host)
        )
        self._on_activity = on_activity
        self._seen: set[str] = set()
        self.refs: list[str] = []

    def scoped(self, on_activity: Callable[[str], None] | None = None) -> Probe:
        """A probe sharing this one's host, cache and limiter, with its own list of refs."""
        child = Probe.__new__(Probe)
        child._shared = self._shared
        child._on_activity = on_activity
        child._seen = set()
        child.refs = []
        return child

    @property
    def host(self) -> Host:
        return self._shared.host

    @property
    def evidence(self) -> dict[str, Evidence]:
        """Every piece of evidence read through this probe family, by ref."""
        return self._shared.evidence

    def evidence_for(self, refs: Sequence[str]) -> list[Evidence]:
        return [self._shared.evidence[r] for r in refs if r in self._shared.evidence]

    async def _once(self, ref: str, fetch: Callable[[], Awaitable[_T]], record: Callable[[_T], Evidence]) -> _T:
        shared = self._shared
        if ref not in self._seen:
            self._seen.add(ref)
            self.refs.append(ref)
        if shared.at_once:
            return await self._fetch(ref, fetch, record)
        while True:
            if ref in shared.cache:
                return shared.cache[ref]  # type: ignore[return-value]
            waiter = shared.pending.get(ref)
            if waiter is None:
                break
            await waiter.wait()
        event = anyio.Event()
        shared.pending[ref] = event
        try:
            async with shared.limiter:
                return await self._fetch(ref, fetch, record)
        finally:
            del shared.pending[ref]
            event.set()

    async def _fetch(self, ref: str, fetch: Callable[[], Awaitable[_T]], record: Callable[[_T], Evidence]) -> _T:
        """One operation on the host (a cache hit when an earlier one read ``ref``), cached and recorded."""
        shared = self._shared
        if ref in shared.cache:
            return shared.cache[ref]  # type: ignore[return-value]
        if self._on_activity is not None and not shared.at_once:  # a read that ends at once is never seen in flight
            self._on_activity(ref)
        if shared.adaptive:
            started = time.perf_counter()
            result = await fetch()
            _follow_latency(shared, time.perf_counter() - started)
        else:
            result = await fetch()
        shared.cache[ref] = result
        shared.evidence[ref] = record(result)
        if shared.observer is not None:
            shared.observer(ref, result)  # type: ignore[arg-type]
        return result

    def _saw(self, refs: Sequence[str]) -> None:
        for ref in refs:
            if ref not in self._seen:
                self._seen.add(ref)
                self.refs.append(ref)

    async def derived(self, name: str, derive: Callable[[Probe], Awaitable[_T]]) -> _T:
        """``derive(probe)``, once per probe family: a fact several investigators derive from the same reads (the
        GPU inventory, the platform) is derived once; every caller's refs then list the reads it rests on, as if it
        had read them itself. A derivation that fails is not kept (the next caller derives it again)."""
        shared = self._shared
        while name not in shared.derived:
            waiter = shared.deriving.get(name)
            if waiter is None:
                shared.deriving[name] = event = anyio.Event()
                child = self.scoped(self._on_activity)
                try:
                    shared.derived[name] = (await derive(child), tuple(child.refs))
                finally:
                    del shared.deriving[name]
                    event.set()
                break
            await waiter.wait()
        found, refs = shared.derived[name]
        self._saw(refs)
        return found  # type: ignore[return-value]

    async def read(self, path: str) -> FileResult:
        def record(r: FileResult) -> Evidence:
            raw = _raw_text(r.data) if r.data is not None else ""
            return Evidence(ref=file_ref(path), kind="file", source=path, ok=r.ok, raw=raw, error=r.error)

        return await self._once(file_ref(path), lambda: self.host.read(path), record)

    async def text(self, path: str) -> str | None:
        """The file's text, or ``None`` when it cannot be read."""
        return (await self.read(path)).text()

    async def list_dir(self, path: str) -> DirResult:
        def record(r: DirResult) -> Evidence:
            raw = "\n".join(r.entries) if r.entries is not None else ""
            return Evidence(ref=dir_ref(path), kind="dir", source=path, ok=r.ok, raw=_raw_text(raw.encode()), error=r.error)

        return await self._once(dir_ref(path), lambda: self.host.list_dir(path), record)

    async def readlink(self, path: str) -> str | None:
        ref = f"link:{path}"

        async def fetch() -> tuple[str, str | None]:
            return (path, await self.host.readlink(path))

        def record(r: tuple[str, str | None]) -> Evidence:
            return Evidence(
                ref=ref, kind="link", source=path, ok=r[1] is not None, raw=r[1] or "", error=None if r[1] else "not a link"
            )

        return (await self._once(ref, fetch, record))[1]

    async def exists(self, path: str) -> bool:
        ref = f"exists:{path}"

        async def fetch() -> tuple[str, bool]:
            return (path, await self.host.exists(path))

        def record(r: tuple[str, bool]) -> Evidence:
            return Evidence(ref=ref, kind="file", source=path, ok=True, raw="exists" if r[1] else "absent")

        return (await self._once(ref, fetch, record))[1]

    async def run(self, argv: Sequence[str], *, timeout_s: float = 10.0) -> CommandResult:
        """Run a command if the policy allows it; otherwise a ``denied`` result, nothing run."""
        argv = tuple(argv)
        ref = command_ref(argv)

        async def fetch() -> CommandResult:
            verdict = self._shared.policy(argv)
            if verdict.decision != "allow":
                return CommandResult(argv, error="denied", stderr=f"policy: {verdict.decision}: {verdict.reason}")
            return await self.host.run(argv, timeout_s=timeout_s)

        def record(r: CommandResult) -> Evidence:
            raw = r.stdout if r.ok else (r.stdout + r.stderr)
            error = r.error or (None if r.exit_code == 0 else f"exit status {r.exit_code}")
            return Evidence(ref=ref, kind="command", source=" ".join(argv), ok=r.ok, raw=_raw_text(raw.encode()), error=error)

        return await self._once(ref, fetch, record)

    async def nvml(self, fn: str, *args: int) -> NvmlResult:
        ref = nvml_ref(fn, args)

        def record(r: NvmlResult) -> Evidence:
            raw = "" if r.error else json.dumps(r.value, default=str)
            return Evidence(ref=ref, kind="nvml", source=ref[5:], ok=r.ok, raw=_raw_text(raw.encode()), error=r.error)

        return await self._once(ref, lambda: self.host.nvml(fn, *args), record)

    async def gather(self, *calls: Callable[[], Awaitable[_T]]) -> list[_T]:
        """Run independent reads concurrently (bounded by the host-wide limiter); one after another on a host
        that answers at once."""
        if self._shared.at_once:
            return [await call() for call in calls]
        results: list[_T | None] = [None] * len(calls)

        async def one(index: int, call: Callable[[], Awaitable[_T]]) -> None:
            results[index] = await call()

        async with anyio.create_task_group() as group:
            for index, call in enumerate(calls):
                group.start_soon(one, index, call)
        return results  # type: ignore[return-value]
