"""The NCCL all-reduce benchmark: torch.distributed (one process per GPU) or nccl-tests' all_reduce_perf.

algbw = bytes / time; busbw = algbw x 2(n-1)/n. NCCL's chosen transport is read from its INFO log.
NCCL_NVLS_ENABLE=0 is forced in every worker. Results are ``rigaudit.nccl/1``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from rigaudit.tools.bench.errors import BenchFailed, BenchUnavailable
from rigaudit.tools.bench.nccl_parse import Transports, bus_factor, human_size, parse_nccl_tests, parse_transports
from rigaudit.tools.core.record import Record, as_dict, field

NCCL_SCHEMA = "rigaudit.nccl/1"
Tool = Literal["auto", "torch", "nccl-tests"]
Progress = Callable[[str, int, int], None]


class NcclRow(Record):
    bytes: int
    time_us: float
    algbw_gbps: float
    busbw_gbps: float
    data_ok: bool | None


class NcclReport(Record):
    taken_at: str
    host: str
    tool: str
    world_size: int
    rows: list[NcclRow]
    transports: dict[str, int]
    transport: str | None
    nccl_version: str | None = None
    gpus: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    schema: str = NCCL_SCHEMA

    def to_json(self) -> str:
        data = as_dict(self)
        return json.dumps({"schema": data.pop("schema"), **data}, indent=2)


def row_from_time(size: int, seconds: float, world: int, data_ok: bool | None) -> NcclRow:
    algbw = size / seconds / 1e9 if seconds > 0 else 0.0
    return NcclRow(size, seconds * 1e6, algbw, algbw * bus_factor(world), data_ok)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _read_logs(log_dir: Path) -> Transports:
    lines: list[str] = []
    for path in sorted(log_dir.glob("nccl.*.log")):
        lines += path.read_text(encoding="utf-8", errors="replace").splitlines()
    return parse_transports(lines)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def run_torch(
    world: int | None, sizes: Sequence[int], *, iters: int, warmup: int, progress: Progress | None = None
) -> NcclReport:
    """Spawn one process per GPU, all-reduce each size, and read NCCL's transports from its log files."""
    try:
        import torch
        import torch.multiprocessing as mp
    except ImportError:
        raise BenchUnavailable(
            "torch is not installed here (`pip install 'rigaudit[bench]'`), nor is all_reduce_perf on PATH"
        ) from None
    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if visible < 2:
        raise BenchUnavailable(f"the NCCL all-reduce benchmark needs at least 2 GPUs; {visible} visible to this process")
    world = world or visible
    if world < 2 or world > visible:
        raise BenchUnavailable(f"--gpus {world}: between 2 and {visible} GPUs are visible here")
    if not torch.distributed.is_available() or not torch.distributed.is_nccl_available():
        raise BenchUnavailable("this torch build has no NCCL backend")
    from rigaudit.tools.bench._nccl_worker import FORCED_ENV, worker

    with tempfile.TemporaryDirectory(prefix="rigaudit-nccl-") as tmp:
        out = Path(tmp) / "result.json"
        if progress is not None:
            progress("all-reduce", 0, 1)
        try:
            mp.spawn(worker, args=(world, free_port(), list(sizes), iters, warmup, str(out), tmp), nprocs=world, join=True)
        except Exception as exc:
            last = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            raise BenchFailed(f"an all-reduce worker failed: {last}") from None
        if not out.exists():
            raise BenchFailed("the all-reduce workers ended without writing a result")
        info = json.loads(out.read_text(encoding="utf-8"))
        transports = _read_logs(Path(tmp))
    if progress is not None:
        progress("all-reduce", 1, 1)
    rows = [row_from_time(r["bytes"], r["seconds"], world, r["data_ok"]) for r in info["rows"]]
    return NcclReport(
        _now(),
        socket.gethostname(),
        f"torch {info['torch']}",
        world,
        rows,
        transports.counts,
        transports.main,
        transports.version or info.get("nccl"),
        info.get("gpus", []),
        dict(FORCED_ENV),
    )


def run_nccl_tests(
    binary: str, world: int | None, sizes: Sequence[int], *, iters: int, warmup: int, progress: Progress | None = None
) -> NcclReport:
    """Run all_reduce_perf once per size (``-b S -e S``) and parse its table and INFO lines."""
    from rigaudit.tools.bench._nccl_worker import FORCED_ENV

    env = {**os.environ, **FORCED_ENV}
    gpus = world or int(os.environ.get("RIGAUDIT_NCCL_GPUS", "0")) or _count_gpus()
    if gpus < 2:
        raise BenchUnavailable(f"the NCCL all-reduce benchmark needs at least 2 GPUs; {gpus} found")
    rows: list[NcclRow] = []
    lines: list[str] = []
    for done, size in enumerate(sizes, start=1):
        argv = [binary, "-b", str(size), "-e", str(size), "-g", str(gpus), "-n", str(iters), "-w", str(warmup), "-c", "1"]
        try:
            proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BenchFailed(f"{binary} failed to run: {exc}") from None
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise BenchFailed(f"{binary} exited {proc.returncode}: {tail[0]}")
        lines += proc.stdout.splitlines()
        parsed = [r for r in parse_nccl_tests(proc.stdout) if r.size == size] or parse_nccl_tests(proc.stdout)[-1:]
        if not parsed:
            raise BenchFailed(f"no result row for {human_size(size)} in {binary}'s output")
        row = parsed[0]
        ok = None if row.wrong is None else row.wrong == 0
        rows.append(NcclRow(row.size, row.time_us, row.algbw_gbps, row.busbw_gbps, ok))
        if progress is not None:
            progress(human_size(size), done, len(sizes))
    transports = parse_transports(lines)
    return NcclReport(
        _now(),
        socket.gethostname(),
        "nccl-tests all_reduce_perf",
        gpus,
        rows,
        transports.counts,
        transports.main,
        transports.version,
        [],
        dict(FORCED_ENV),
    )


def _count_gpus() -> int:
    try:
        proc = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in proc.stdout.splitlines() if line.startswith("GPU "))


def run_allreduce(
    tool: Tool, world: int | None, sizes: Sequence[int], *, iters: int, warmup: int, progress: Progress | None = None
) -> NcclReport:
    """``auto``: nccl-tests' all_reduce_perf when on PATH, else torch.distributed."""
    binary = shutil.which("all_reduce_perf")
    if tool == "nccl-tests" and binary is None:
        raise BenchUnavailable("all_reduce_perf (nccl-tests) is not on PATH")
    if tool == "nccl-tests" or (tool == "auto" and binary is not None):
        assert binary is not None
        return run_nccl_tests(binary, world, sizes, iters=iters, warmup=warmup, progress=progress)
    return run_torch(world, sizes, iters=iters, warmup=warmup, progress=progress)
