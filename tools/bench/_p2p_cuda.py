"""The P2P measurements through NVIDIA's cuda-bindings (driver API), for hosts without torch.

The same three measurements as the torch backend: ``cuMemcpyPeerAsync`` on a stream of the source
GPU timed with events (one way; both ways on two streams), and the same bytes staged through a
pinned host buffer; then the destination is copied back and compared byte for byte with the
pattern the source was filled with (a distinct 32-bit counter per word and per source GPU).
"""

from __future__ import annotations

import ctypes
import statistics
from array import array
from collections.abc import Sequence
from typing import Any

from rigaudit.tools.bench.errors import BenchFailed, BenchUnavailable
from rigaudit.tools.bench.gpu import check_gpus
from rigaudit.tools.bench.p2p_measure import GpuInfo, PairMeasurement, Progress, time_each_pair


def _driver() -> Any:
    try:
        from cuda.bindings import driver  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        raise BenchUnavailable(f"cuda-bindings cannot be imported: {exc}") from None
    try:
        (err,) = driver.cuInit(0)
    except Exception as exc:  # the driver library itself is missing
        raise BenchUnavailable(f"the CUDA driver cannot be loaded: {exc}") from None
    if err != driver.CUresult.CUDA_SUCCESS:
        raise BenchUnavailable(f"cuInit failed: {err}")
    return driver


class _Api:
    """Calls that raise BenchFailed on any CUresult other than success."""

    def __init__(self, driver: Any) -> None:
        self.d = driver

    def __call__(self, name: str, *args: Any) -> Any:
        result = getattr(self.d, name)(*args)
        err, values = result[0], result[1:]
        if err != self.d.CUresult.CUDA_SUCCESS:
            raise BenchFailed(f"{name} failed: {err}")
        return values[0] if len(values) == 1 else values


def _pattern(source: int, count: int) -> bytes:
    base = (source & 0xF) << 28
    return array("I", range(base, base + count)).tobytes()


class _Rig:
    def __init__(self, api: _Api, gpus: Sequence[int], size_bytes: int) -> None:
        self.api = api
        self.count = min(size_bytes // 4, 1 << 28)
        self.bytes = self.count * 4
        self.dev = {g: api("cuDeviceGet", g) for g in gpus}
        self.ctx = {g: api("cuDevicePrimaryCtxRetain", self.dev[g]) for g in gpus}
        self.src: dict[int, Any] = {}
        self.recv: dict[int, Any] = {}
        self.stream: dict[int, Any] = {}
        self.expected = {g: _pattern(g, self.count) for g in gpus}
        self.host = 0
        for g in gpus:
            self.use(g)
            if not self.host:
                self.host = int(api("cuMemAllocHost", self.bytes))
            self.src[g] = api("cuMemAlloc", self.bytes)
            self.recv[g] = api("cuMemAlloc", self.bytes)
            self.stream[g] = api("cuStreamCreate", 1)  # CU_STREAM_NON_BLOCKING
            ctypes.memmove(self.host, self.expected[g], self.bytes)
            api("cuMemcpyHtoD", self.src[g], self.host, self.bytes)

    def use(self, g: int) -> None:
        self.api("cuCtxSetCurrent", self.ctx[g])

    def enable_peer(self, s: int, d: int) -> bool:
        if not self.api("cuDeviceCanAccessPeer", self.dev[s], self.dev[d]):
            return False
        self.use(s)
        (err,) = self.api.d.cuCtxEnablePeerAccess(self.ctx[d], 0)
        return bool(err in (self.api.d.CUresult.CUDA_SUCCESS, self.api.d.CUresult.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED))

    def _event(self, g: int) -> Any:
        self.use(g)
        return self.api("cuEventCreate", 0)

    def _peer(self, s: int, d: int, stream: Any) -> None:
        self.api("cuMemcpyPeerAsync", self.recv[d], self.ctx[d], self.src[s], self.ctx[s], self.bytes, stream)

    def _elapsed(self, start: Any, end: Any) -> float:
        self.api("cuEventSynchronize", end)
        return float(self.api("cuEventElapsedTime", start, end)) / 1000.0

    def check(self, s: int, d: int) -> str | None:
        self.use(d)
        self.api("cuCtxSynchronize")
        self.api("cuMemcpyDtoH", self.host, self.recv[d], self.bytes)
        got = ctypes.string_at(self.host, self.bytes)
        if got == self.expected[s]:
            return None
        want, block = self.expected[s], 1 << 20
        start = next(i for i in range(0, self.bytes, block) if got[i : i + block] != want[i : i + block])
        first = next(i for i in range(start, start + block, 4) if got[i : i + 4] != want[i : i + 4])
        return f"destination differs from source, first at byte {first}"

    def clear(self, g: int) -> None:
        self.use(g)
        self.api("cuMemsetD32", self.recv[g], 0xFFFFFFFF, self.count)
        self.api("cuCtxSynchronize")

    def unidir(self, s: int, d: int, iters: int, warmup: int) -> tuple[float, str | None]:
        self.clear(d)
        for _ in range(warmup):
            self._peer(s, d, self.stream[s])
        times = []
        for _ in range(iters):
            start, end = self._event(s), self._event(s)
            self.api("cuEventRecord", start, self.stream[s])
            self._peer(s, d, self.stream[s])
            self.api("cuEventRecord", end, self.stream[s])
            times.append(self._elapsed(start, end))
        return self.bytes / statistics.median(times) / 1e9, self.check(s, d)

    def bidir(self, s: int, d: int, iters: int, warmup: int) -> tuple[float, str | None]:
        self.clear(d)
        self.clear(s)
        a, b = self.stream[s], self.stream[d]
        times = []
        for i in range(warmup + iters):
            start, b_done, end = self._event(s), self._event(d), self._event(s)
            self.api("cuEventRecord", start, a)
            self.api("cuStreamWaitEvent", b, start, 0)
            self._peer(s, d, a)
            self._peer(d, s, b)
            self.api("cuEventRecord", b_done, b)
            self.api("cuStreamWaitEvent", a, b_done, 0)
            self.api("cuEventRecord", end, a)
            elapsed = self._elapsed(start, end)
            if i >= warmup:
                times.append(elapsed)
        error = self.check(s, d) or self.check(d, s)
        return 2 * self.bytes / statistics.median(times) / 1e9, error

    def staged(self, s: int, d: int, iters: int, warmup: int) -> tuple[float, str | None]:
        self.clear(d)
        a, b = self.stream[s], self.stream[d]
        times = []
        for i in range(warmup + iters):
            start, middle, b_done, end = self._event(s), self._event(s), self._event(d), self._event(s)
            self.use(s)
            self.api("cuEventRecord", start, a)
            self.api("cuMemcpyDtoHAsync", self.host, self.src[s], self.bytes, a)
            self.api("cuEventRecord", middle, a)
            self.api("cuStreamWaitEvent", b, middle, 0)
            self.use(d)
            self.api("cuMemcpyHtoDAsync", self.recv[d], self.host, self.bytes, b)
            self.api("cuEventRecord", b_done, b)
            self.api("cuStreamWaitEvent", a, b_done, 0)
            self.api("cuEventRecord", end, a)
            elapsed = self._elapsed(start, end)
            if i >= warmup:
                times.append(elapsed)
        return self.bytes / statistics.median(times) / 1e9, self.check(s, d)


def _info(api: _Api, index: int) -> GpuInfo:
    device = api("cuDeviceGet", index)
    name = api("cuDeviceGetName", 256, device)
    bus = api("cuDeviceGetPCIBusId", 64, device)
    major = api("cuDeviceGetAttribute", api.d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device)

    def text(raw: Any) -> str:
        return (raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)).split("\x00")[0].strip()

    return GpuInfo(index, text(name), text(bus).lower() or None, int(major))


def measure_pairs(
    gpus: Sequence[int] | None, size_bytes: int, *, iters: int, warmup: int, progress: Progress | None = None
) -> tuple[list[GpuInfo], list[PairMeasurement]]:
    api = _Api(_driver())
    chosen = check_gpus(gpus, int(api("cuDeviceGetCount")), at_least=2, what="the P2P benchmark")
    infos = [_info(api, g) for g in chosen]
    rig = _Rig(api, chosen, size_bytes)
    pairs = [(s, d) for s in chosen for d in chosen if s != d]
    access_of = {(s, d): rig.enable_peer(s, d) for s, d in pairs}  # both directions before any bidirectional copy
    return infos, time_each_pair(rig, pairs, lambda s, d: access_of[(s, d)], iters, warmup, progress)
