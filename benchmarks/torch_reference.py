"""Plain-torch reference timings, to check rigaudit's benchmarks against in the same run.

  peer       dst.copy_(src) between every ordered GPU pair on the default streams, timed with
             time.perf_counter() around N copies and a synchronize: "a plain torch peer copy".
  allreduce  torch.distributed all_reduce over NCCL, one process per GPU, timed the way a
             torch.distributed user would: perf_counter() around N calls and a synchronize.

Usage: python benchmarks/torch_reference.py peer --size-mib 256 --iters 20 --json ref_peer.json
       python benchmarks/torch_reference.py allreduce --sizes 1M,16M,256M,1G --iters 20 --json ref_nccl.json
NCCL_NVLS_ENABLE=0 is forced, as in rigaudit.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def peer(size_mib: int, iters: int, warmup: int) -> list[dict[str, Any]]:
    import torch

    count = torch.cuda.device_count()
    nbytes = size_mib * 2**20
    rows = []
    for s in range(count):
        for d in range(count):
            if s == d:
                continue
            src = torch.randint(0, 2**31 - 1, (nbytes // 4,), dtype=torch.int32, device=s)
            dst = torch.empty_like(src, device=d)
            for _ in range(warmup):
                dst.copy_(src)
            torch.cuda.synchronize(s)
            torch.cuda.synchronize(d)
            start = time.perf_counter()
            for _ in range(iters):
                dst.copy_(src)
            torch.cuda.synchronize(s)
            torch.cuda.synchronize(d)
            seconds = (time.perf_counter() - start) / iters
            rows.append({"src": s, "dst": d, "gbps": nbytes / seconds / 1e9, "data_ok": bool(torch.equal(dst.cpu(), src.cpu()))})
            del src, dst
    return rows


def _allreduce_worker(rank: int, world: int, port: int, sizes: list[int], iters: int, warmup: int, out: str) -> None:
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    rows = []
    for size in sizes:
        x = torch.zeros(size // 4, dtype=torch.float32, device="cuda")
        for _ in range(warmup):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        dist.barrier()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        seconds = (time.perf_counter() - start) / iters
        algbw = size / seconds / 1e9
        rows.append({"bytes": size, "time_us": seconds * 1e6, "algbw_gbps": algbw, "busbw_gbps": algbw * 2 * (world - 1) / world})
    if rank == 0:
        Path(out).write_text(json.dumps(rows))
    dist.destroy_process_group()


def allreduce(sizes: list[int], iters: int, warmup: int) -> list[dict[str, Any]]:
    import torch
    import torch.multiprocessing as mp

    world = torch.cuda.device_count()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "rows.json")
        mp.spawn(_allreduce_worker, args=(world, port, sizes, iters, warmup, out), nprocs=world, join=True)
        rows: list[dict[str, Any]] = json.loads(Path(out).read_text())
    return rows


def main() -> int:
    from rigaudit.tools.bench.nccl_parse import human_size, parse_sizes

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=("peer", "allreduce"))
    parser.add_argument("--size-mib", type=int, default=256)
    parser.add_argument("--sizes", default="1M,16M,256M,1G")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.kind == "peer":
        rows = peer(args.size_mib, args.iters, args.warmup)
        for row in rows:
            data = "ok" if row["data_ok"] else "BAD"
            print(f"plain torch peer copy GPU{row['src']}→GPU{row['dst']}: {row['gbps']:.1f} GB/s (data {data})")
    else:
        rows = allreduce(parse_sizes(args.sizes), args.iters, args.warmup)
        for row in rows:
            print(
                f"plain torch.distributed all_reduce {human_size(row['bytes'])}: {row['time_us']:.1f} µs, "
                f"algbw {row['algbw_gbps']:.2f} GB/s, busbw {row['busbw_gbps']:.2f} GB/s"
            )
    if args.json:
        args.json.write_text(json.dumps({"kind": args.kind, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
