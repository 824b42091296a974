"""The P2P measurements through torch: CUDA events on dedicated streams, warm-up, median of iterations.

torch runs a cross-device ``copy_`` as ``cudaMemcpyPeerAsync`` on the *source* device's current
stream, with a barrier against the destination device's current stream before and after. So each
copy direction gets its own stream on its source device, and the destination side's current stream
is a second, otherwise idle stream: the barriers then cost nothing and never serialise the two
directions of a bidirectional copy.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rigaudit.tools.bench.errors import BenchUnavailable
from rigaudit.tools.bench.gpu import check_gpus
from rigaudit.tools.bench.links import bus_id_from_uuid
from rigaudit.tools.bench.p2p_measure import GpuInfo, PairMeasurement, Progress, time_each_pair

_SEED = 0x1F2E3D4C


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:  # pick_backend checked; a broken install still says one line
        raise BenchUnavailable(f"torch cannot be imported: {exc}") from None
    if not torch.cuda.is_available():
        raise BenchUnavailable("torch sees no CUDA GPU (CPU-only build, no driver, or CUDA_VISIBLE_DEVICES empty)")
    return torch


def _bus_id(props: Any) -> str | None:
    """From torch's device properties (PCI fields, else the UUID through NVML)."""
    bus = getattr(props, "pci_bus_id", None)
    if bus is not None:
        return f"{int(getattr(props, 'pci_domain_id', 0)):04x}:{int(bus):02x}:{int(getattr(props, 'pci_device_id', 0)):02x}.0"
    uuid = getattr(props, "uuid", None)
    return bus_id_from_uuid(str(uuid)) if uuid is not None else None


def gpu_infos(torch: Any, gpus: Sequence[int]) -> list[GpuInfo]:
    infos = []
    for index in gpus:
        props = torch.cuda.get_device_properties(index)
        infos.append(GpuInfo(index, str(props.name), _bus_id(props), int(props.major)))
    return infos


@contextmanager
def _current(torch: Any, *streams: Any) -> Iterator[None]:
    """Make each stream the current one of its device, restoring the previous streams and device after."""
    device = torch.cuda.current_device()
    previous = [torch.cuda.current_stream(s.device) for s in streams]
    try:
        for stream in streams:
            torch.cuda.set_stream(stream)
        yield
    finally:
        for stream in previous:
            torch.cuda.set_stream(stream)
        torch.cuda.set_device(device)


def _pattern(torch: Any, count: int, device: int, source: int) -> Any:
    seed = (_SEED + source * 0x01010101) & 0x7FFFFFFF
    return torch.bitwise_xor(torch.arange(count, dtype=torch.int32, device=device), seed)


def _check(torch: Any, received: Any, count: int, device: int, source: int) -> str | None:
    expected = _pattern(torch, count, device, source)
    if torch.equal(received, expected):
        return None
    wrong = received != expected
    bad = int(wrong.sum().item())
    first = int(wrong.nonzero()[0].item())
    return f"{bad} of {count} words differ, first at byte {first * 4}"


class _Rig:
    """Buffers and streams for a set of GPUs: a source pattern and a receive buffer on each, one pinned host buffer."""

    def __init__(self, torch: Any, gpus: Sequence[int], size_bytes: int) -> None:
        self.t = torch
        self.count = size_bytes // 4
        self.bytes = self.count * 4
        self.src = {g: _pattern(torch, self.count, g, g) for g in gpus}
        self.recv = {g: torch.empty(self.count, dtype=torch.int32, device=g) for g in gpus}
        self.copy_stream = {g: torch.cuda.Stream(device=g) for g in gpus}
        self.idle_stream = {g: torch.cuda.Stream(device=g) for g in gpus}
        self.host = torch.empty(self.count, dtype=torch.int32, pin_memory=True)
        for g in gpus:
            torch.cuda.synchronize(g)

    def _event(self) -> Any:
        return self.t.cuda.Event(enable_timing=True)

    def _sync(self, *gpus: int) -> None:
        for g in gpus:
            self.t.cuda.synchronize(g)

    def unidir(self, s: int, d: int, iters: int, warmup: int) -> tuple[float, str | None]:
        """One-way s→d: median GB/s over iterations, and the data check of the last copy."""
        self.recv[d].fill_(-1)
        self._sync(d)
        a = self.copy_stream[s]
        times = []
        with _current(self.t, a, self.idle_stream[d]):
            for _ in range(warmup):
                self.recv[d].copy_(self.src[s], non_blocking=True)
            events = [(self._event(), self._event()) for _ in range(iters)]
            for start, end in events:
                start.record(a)
                self.recv[d].copy_(self.src[s], non_blocking=True)
                end.record(a)
        self._sync(s, d)
        times = [start.elapsed_time(end) / 1000.0 for start, end in events]
        return self.bytes / statistics.median(times) / 1e9, _check(self.t, self.recv[d], self.count, d, s)

    def bidir(self, s: int, d: int, iters: int, warmup: int) -> tuple[float, str | None]:
        """s→d and d→s at once: median total GB/s (both directions), and both data checks."""
        self.recv[d].fill_(-1)
        self.recv[s].fill_(-1)
        self._sync(s, d)
        a, b = self.copy_stream[s], self.copy_stream[d]

        def both() -> None:
            with _current(self.t, a, self.idle_stream[d]):
                self.recv[d].copy_(self.src[s], non_blocking=True)
            with _current(self.t, b, self.idle_stream[s]):
                self.recv[s].copy_(self.src[d], non_blocking=True)

        for _ in range(warmup):
            both()
        self._sync(s, d)
        rows = [(self._event(), self._event(), self._event()) for _ in range(iters)]
        for start, b_done, end in rows:
            start.record(a)
            b.wait_event(start)
            both()
            b_done.record(b)
            a.wait_event(b_done)
            end.record(a)
        self._sync(s, d)
        times = [start.elapsed_time(end) / 1000.0 for start, _, end in rows]
        error = _check(self.t, self.recv[d], self.count, d, s) or _check(self.t, self.recv[s], self.count, s, d)
        return 2 * self.bytes / statistics.median(times) / 1e9, error

    def staged(self, s: int, d: int, iters: int, warmup: int) -> tuple[float, str | None]:
        """s→pinned host→d, one after the other (not pipelined): median GB/s end to end."""
        self.recv[d].fill_(-1)
        self._sync(d)
        a, b = self.copy_stream[s], self.copy_stream[d]

        def hop(start: Any = None, middle: Any = None) -> None:
            with _current(self.t, a):
                if start is not None:
                    start.record(a)
                self.host.copy_(self.src[s], non_blocking=True)
                if middle is not None:
                    middle.record(a)
            b.wait_event(middle if middle is not None else a.record_event())
            with _current(self.t, b):
                self.recv[d].copy_(self.host, non_blocking=True)
            a.wait_event(b.record_event())  # the next D2H must not overwrite the host buffer early

        for _ in range(warmup):
            hop()
        self._sync(s, d)
        rows = [(self._event(), self._event(), self._event()) for _ in range(iters)]
        for start, middle, end in rows:
            hop(start, middle)
            end.record(a)
        self._sync(s, d)
        times = [start.elapsed_time(end) / 1000.0 for start, _, end in rows]
        return self.bytes / statistics.median(times) / 1e9, _check(self.t, self.recv[d], self.count, d, s)


def measure_pairs(
    gpus: Sequence[int] | None, size_bytes: int, *, iters: int, warmup: int, progress: Progress | None = None
) -> tuple[list[GpuInfo], list[PairMeasurement]]:
    torch = _torch()
    chosen = check_gpus(gpus, torch.cuda.device_count(), at_least=2, what="the P2P benchmark")
    infos = gpu_infos(torch, chosen)
    rig = _Rig(torch, chosen, size_bytes)
    pairs = [(s, d) for s in chosen for d in chosen if s != d]

    def access(s: int, d: int) -> bool:
        return bool(torch.cuda.can_device_access_peer(s, d))

    return infos, time_each_pair(rig, pairs, access, iters, warmup, progress)
