"""Measured memory bandwidth of each GPU: a device-to-device copy, counting the bytes read and written."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from rigaudit.tools.bench.errors import BenchUnavailable


def measure_copy_bandwidth(gpus: Sequence[int], *, size_mib: int = 1024, iters: int = 20, warmup: int = 3) -> list[float]:
    """GB/s per GPU: 2 x bytes / time of ``dst.copy_(src)`` (median of iterations, CUDA events)."""
    try:
        import torch
    except ImportError:
        raise BenchUnavailable("--measure needs torch (`pip install 'rigaudit[bench]'`)") from None
    if not torch.cuda.is_available() or torch.cuda.device_count() < len(gpus) or not gpus:
        visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
        raise BenchUnavailable(f"--measure needs {len(gpus)} GPU(s); {visible} visible to torch")
    results = []
    nbytes = size_mib * 2**20
    for gpu in gpus:
        with torch.cuda.device(gpu):
            src = torch.empty(nbytes, dtype=torch.uint8, device=gpu)
            dst = torch.empty_like(src)
            stream = torch.cuda.current_stream(gpu)
            for _ in range(warmup):
                dst.copy_(src)
            events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
            for start, end in events:
                start.record(stream)
                dst.copy_(src)
                end.record(stream)
            torch.cuda.synchronize(gpu)
            seconds = statistics.median(start.elapsed_time(end) / 1000.0 for start, end in events)
            results.append(2 * nbytes / seconds / 1e9)
            del src, dst
    return results
