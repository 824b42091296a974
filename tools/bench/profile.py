"""The profiled load: rigaudit's own load generator, each timed run's window recorded, NVML sampled alongside.

The load is :func:`rigaudit.tools.bench.loadgen.run_load`'s (warm-up, then every level ``repeat``
times in the spec's order); the only difference is that each timed run's start and end are taken
on the sampler's clock (the requests too), so the attribution can read exactly the samples of that level.
"""

from __future__ import annotations

import time

import anyio

from rigaudit.tools.bench.loadgen import Clock, Connect, LoadSession, LoadSpec, Progress, client_for, now_utc
from rigaudit.tools.bench.profile_attribution import Window
from rigaudit.tools.bench.profile_sampler import Sampler
from rigaudit.tools.bench.results import BenchResult, Run
from rigaudit.tools.bench.schedule import visit_order


async def windowed_load(
    spec: LoadSpec, progress: Progress | None = None, clock: Clock = time.perf_counter, connect: Connect = client_for
) -> tuple[BenchResult, list[Window]]:
    """Warm up, then every level ``repeat`` times; the result and each timed run's window, both timed on ``clock``,
    the requests sent through ``connect``'s client."""
    started = now_utc()
    runs: list[Run] = []
    windows: list[Window] = []
    async with connect(spec) as client:
        session = LoadSession(client, spec, progress, clock)
        await session.warm_up(spec.warmup)
        for repeat, concurrency in visit_order(list(spec.concurrency), spec.repeat, spec.order):
            label = f"c={concurrency}" + (f" repeat {repeat + 1}/{spec.repeat}" if spec.repeat > 1 else "")
            begin = clock()
            runs.append(await session.run(concurrency, repeat, label))
            windows.append(Window(concurrency=concurrency, repeat=repeat, start_s=begin, end_s=clock()))
    return spec.result(runs, started), windows


async def profiled_load(
    spec: LoadSpec, sampler: Sampler, progress: Progress | None = None, connect: Connect = client_for
) -> tuple[BenchResult, list[Window]]:
    """The load with ``sampler`` running beside it, from before the warm-up until the last run ends, on its clock."""
    async with anyio.create_task_group() as group:
        group.start_soon(sampler.run)
        try:
            done = await windowed_load(spec, progress, sampler.clock, connect)
        finally:
            sampler.stop()
    return done
