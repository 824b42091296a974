"""Measured memory bandwidth of each GPU: a device-to-device copy, or a matrix-vector product (how decode reads weights)."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from rigaudit.tools.bench.errors import BenchUnavailable

READ_HOW = "measured: a BF16 matrix-vector product streaming 1 GiB of weights (decode's access pattern)"
COPY_HOW = "measured: device-to-device copy, read + write"


def _torch(gpus: Sequence[int]) -> Any:
    try:
        import torch
    except ImportError:
        raise BenchUnavailable("measuring bandwidth needs torch (`pip install 'rigaudit[bench]'`)") from None
    if not torch.cuda.is_available() or not gpus or torch.cuda.device_count() <= max(gpus):
        visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
        raise BenchUnavailable(f"measuring bandwidth needs GPU(s) {', '.join(map(str, gpus))}; {visible} visible to torch")
    return torch


def _median_seconds(torch: Any, gpu: int, work: Callable[[], object], iters: int, warmup: int) -> float:
    stream = torch.cuda.current_stream(gpu)
    for _ in range(warmup):
        work()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for start, end in events:
        start.record(stream)
        work()
        end.record(stream)
    torch.cuda.synchronize(gpu)
    return float(statistics.median(start.elapsed_time(end) / 1000.0 for start, end in events))


def _copy(src: Any, dst: Any) -> Callable[[], object]:
    return lambda: dst.copy_(src)


def _mv(torch: Any, matrix: Any, vector: Any) -> Callable[[], object]:
    return lambda: torch.mv(matrix, vector)


def measure_copy_bandwidth(gpus: Sequence[int], *, size_mib: int = 1024, iters: int = 20, warmup: int = 3) -> list[float]:
    """GB/s per GPU: 2 x bytes / time of ``dst.copy_(src)`` (median of iterations, CUDA events)."""
    torch = _torch(gpus)
    results = []
    nbytes = size_mib * 2**20
    for gpu in gpus:
        with torch.cuda.device(gpu):
            src = torch.empty(nbytes, dtype=torch.uint8, device=gpu)
            work = _copy(src, torch.empty_like(src))
            results.append(2 * nbytes / _median_seconds(torch, gpu, work, iters, warmup) / 1e9)
            del src, work
    return results


def measure_read_bandwidth(gpus: Sequence[int], *, size_mib: int = 1024, iters: int = 20, warmup: int = 3) -> list[float]:
    """GB/s per GPU: the matrix's bytes / time of ``torch.mv`` on a BF16 matrix of ``size_mib`` (median, CUDA events)."""
    torch = _torch(gpus)
    results = []
    cols = 16384
    rows = max(1, size_mib * 2**20 // (2 * cols))
    for gpu in gpus:
        with torch.cuda.device(gpu):
            matrix = torch.randn(rows, cols, dtype=torch.bfloat16, device=gpu)
            work = _mv(torch, matrix, torch.randn(cols, dtype=torch.bfloat16, device=gpu))
            results.append(rows * cols * 2 / _median_seconds(torch, gpu, work, iters, warmup) / 1e9)
            del matrix, work
    return results
