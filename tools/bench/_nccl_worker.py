"""One rank of the torch.distributed all-reduce benchmark (imported in a spawned process: stdlib + torch only)."""

from __future__ import annotations

import json
import os
from typing import Any

FORCED_ENV = {
    "NCCL_NVLS_ENABLE": "0",  # NVLink SHARP / multicast stays off, always
    "NCCL_DEBUG": "INFO",
    "NCCL_DEBUG_SUBSYS": "INIT,P2P,SHM,NET",
}


def worker_env(log_dir: str, port: int, world: int, rank: int) -> dict[str, str]:
    return {
        **FORCED_ENV,
        "NCCL_DEBUG_FILE": os.path.join(log_dir, "nccl.%h.%p.log"),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "WORLD_SIZE": str(world),
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),
    }


def _time_size(torch: Any, dist: Any, size: int, iters: int, warmup: int, rank: int, world: int) -> dict[str, Any]:
    count = max(1, size // 4)
    data = torch.zeros(count, dtype=torch.float32, device="cuda")
    for _ in range(warmup):
        dist.all_reduce(data)
    torch.cuda.synchronize()
    dist.barrier()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        dist.all_reduce(data)
    end.record()
    end.synchronize()
    seconds = torch.tensor([start.elapsed_time(end) / 1000.0 / iters], dtype=torch.float64, device="cuda")
    dist.all_reduce(seconds, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
    data.fill_(float(rank + 1))
    dist.all_reduce(data)
    ok = torch.tensor([int(bool((data == world * (world + 1) / 2).all()))], dtype=torch.int32, device="cuda")
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    del data
    return {"bytes": count * 4, "seconds": float(seconds.item()), "data_ok": bool(ok.item())}


def worker(rank: int, world: int, port: int, sizes: list[int], iters: int, warmup: int, out_path: str, log_dir: str) -> None:
    """Entry point for ``torch.multiprocessing.spawn``: rank 0 writes the timings to ``out_path``."""
    os.environ.update(worker_env(log_dir, port, world, rank))
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group(
        "nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, device_id=torch.device("cuda", rank)
    )
    try:
        rows = [_time_size(torch, dist, size, iters, warmup, rank, world) for size in sizes]
        if rank == 0:
            version = torch.cuda.nccl.version()
            info = {
                "torch": torch.__version__,
                "rows": rows,
                "gpus": [torch.cuda.get_device_name(i) for i in range(world)],
                "nccl": ".".join(map(str, version)) if isinstance(version, tuple) else str(version),
            }
            with open(out_path, "w", encoding="utf-8") as handle:
                json.dump(info, handle)
    finally:
        dist.destroy_process_group()
