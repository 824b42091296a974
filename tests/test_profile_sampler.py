"""The NVML sampler: what it reads through the Host's facade, what it leaves out, and which GPUs it picks."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from rigaudit.tools.bench.profile_sampler import ALL_LINKS, NVLINK_RX, NVLINK_TX, Sampler, serving_gpus
from rigaudit.tools.hosts.base import NvmlResult
from rigaudit.tools.hosts.fake_nvml import FakeGpu, fake_pynvml
from rigaudit.tools.hosts.local import LocalHost
from rigaudit.tools.hosts.nvml_local import NvmlFacade
from tests.support.bench_ab import ScriptedClock


def _host(gpus: list[FakeGpu], **kwargs: Any) -> LocalHost:
    return LocalHost(nvml=NvmlFacade(module=fake_pynvml(gpus, **kwargs)))


class Counting:
    """A host that counts NVML calls per function and sets ``reached`` after ``limit`` utilisation reads."""

    def __init__(self, host: LocalHost, limit: int = 0) -> None:
        self.inner = host
        self.calls: dict[str, int] = {}
        self.limit = limit
        self.reached = anyio.Event()
        self.name = host.name

    async def nvml(self, fn: str, *args: int) -> NvmlResult:
        self.calls[fn] = self.calls.get(fn, 0) + 1
        if fn == "nvmlDeviceGetUtilizationRates" and self.calls[fn] >= self.limit > 0:
            self.reached.set()
        return await self.inner.nvml(fn, *args)


def test_describe_and_one_sample_read_every_metric() -> None:
    clock = ScriptedClock()
    busy = FakeGpu(nvlink_gbs=50.0, pids=[7, 8], pcie_kbs=3_000_000, clock=clock)
    host = _host([busy, FakeGpu(clock=clock)])

    async def go() -> tuple[Any, Any, Any]:
        sampler = Sampler(host, [0, 1], 0.05, clock)
        infos = await sampler.describe()
        with busy.kernel():  # a kernel running for the whole averaging period: 100% busy
            clock.now += busy.period_s * 1.2
            sample = await sampler.sample(0, slow=True)
        idle = await sampler.sample(1, slow=True)
        return infos, sample, idle

    infos, sample, idle = anyio.run(go)
    assert [i.name for i in infos] == ["NVIDIA H200", "NVIDIA H200"] and [i.processes for i in infos] == [2, 0]
    assert infos[0].max_sm_mhz == 1980 and infos[0].power_limit_w == 700 and infos[0].memory_total_bytes == 150 * 2**30
    assert sample.util == 100 and sample.mem_util == 50 and sample.power_w == pytest.approx(450, abs=1)
    assert sample.sm_mhz == 1980 and sample.mem_mhz == 3201 and sample.mem_used_bytes == 20 * 2**30
    assert sample.pcie_tx_gbs == pytest.approx(3.0, rel=0.01) and sample.pcie_rx_gbs == pytest.approx(3.0, rel=0.01)
    assert sample.nvlink_tx_kib is not None and sample.nvlink_tx_kib > 0  # a cumulative counter, all links
    assert idle.util == 0 and idle.nvlink_tx_kib is None


def test_unsupported_functions_are_asked_once_per_gpu() -> None:
    host = Counting(_host([FakeGpu(pcie_supported=False)]))

    async def go() -> Sampler:
        sampler = Sampler(host, [0], 0.05)  # type: ignore[arg-type]
        for _ in range(3):
            await sampler.sample(0, slow=True)
        return sampler

    sampler = anyio.run(go)
    assert host.calls["nvmlDeviceGetPcieThroughput"] == 1 and host.calls["nvmlDeviceGetFieldValues"] == 1
    assert host.calls["nvmlDeviceGetUtilizationRates"] == 3
    assert all(s.pcie_tx_gbs is None and s.nvlink_rx_kib is None for s in sampler.samples)
    lines = sampler.unsupported_lines()
    assert any("nvmlDeviceGetPcieThroughput: NOT_SUPPORTED on GPU 0" in line for line in lines)
    assert any("nvmlDeviceGetFieldValues" in line for line in lines)


def test_run_samples_at_the_interval_until_stopped() -> None:
    host = Counting(_host([FakeGpu(), FakeGpu()]), limit=8)

    async def go() -> Sampler:
        sampler = Sampler(host, [0, 1], 0.01)  # type: ignore[arg-type]
        async with anyio.create_task_group() as group:
            group.start_soon(sampler.run)
            await host.reached.wait()
            sampler.stop()
        return sampler

    sampler = anyio.run(go)
    assert sampler.rounds >= 4 and len(sampler.samples) == 2 * sampler.rounds
    times = [s.t for s in sampler.samples if s.gpu == 0]
    assert times == sorted(times)
    # PCIe throughput (about 20 ms a call on a real GPU) once a second: only the first round here
    assert host.calls["nvmlDeviceGetPcieThroughput"] == 2 * 2


class SlowNvml(Counting):
    """NVML on a scripted clock: every call takes ``call_s`` of it."""

    def __init__(self, host: LocalHost, clock: ScriptedClock, call_s: float) -> None:
        super().__init__(host)
        self.clock, self.call_s = clock, call_s

    async def nvml(self, fn: str, *args: int) -> NvmlResult:
        self.clock.now += self.call_s
        return await super().nvml(fn, *args)


def _scripted_run(call_s: float, interval_s: float, rounds: int) -> tuple[Sampler, list[float]]:
    """Sample one GPU on a scripted clock until ``rounds`` rounds ran; the sampler's sleeps move the clock."""
    clock = ScriptedClock()
    host = SlowNvml(_host([FakeGpu(clock=clock)]), clock, call_s)
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.now += seconds
        await anyio.lowlevel.checkpoint()

    async def go() -> Sampler:
        sampler = Sampler(host, [0], interval_s, clock, sleep)  # type: ignore[arg-type]
        async with anyio.create_task_group() as group:
            group.start_soon(sampler.run)
            while sampler.rounds < rounds:
                await anyio.lowlevel.checkpoint()
            sampler.stop()
        return sampler

    return anyio.run(go), slept


def test_run_keeps_to_its_ticks_on_the_clock_it_is_given() -> None:
    sampler, slept = _scripted_run(call_s=0.001, interval_s=0.05, rounds=6)
    start = 1000.0
    times = [s.t for s in sampler.samples]
    assert sampler.late_rounds == 0 and len(times) >= 6
    # each round starts on its tick: start + k x 50 ms, its answers after its calls (slow ones on the first round)
    firsts = [t - 0.001 * (8 if k == 0 else 6) for k, t in enumerate(times)]
    assert firsts == pytest.approx([start + k * 0.05 for k in range(len(times))])
    assert all(0 < s < 0.05 for s in slept)


def test_a_round_longer_than_the_interval_skips_the_ticks_it_overran_and_is_counted() -> None:
    sampler, slept = _scripted_run(call_s=0.02, interval_s=0.05, rounds=4)  # 6 to 8 calls: 120-160 ms a round
    assert sampler.late_rounds == sampler.rounds >= 4
    times = [x.t for x in sampler.samples]
    assert len(times) - 1 <= len(slept) <= len(times)  # after each round, to the next tick it has not overrun
    assert all(s == pytest.approx(0.05 - (t - 1000.0) % 0.05) for s, t in zip(slept, times, strict=False))


def test_stop_ends_a_sampler_waiting_for_a_distant_tick_at_once() -> None:
    """The real sleep: stop() cuts an hour's wait short (the run ends when the load does, never at the next tick)."""
    host = Counting(_host([FakeGpu()]), limit=1)

    async def go() -> Sampler:
        sampler = Sampler(host, [0], 3600.0)  # type: ignore[arg-type]
        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(sampler.run)
                await host.reached.wait()
                await anyio.wait_all_tasks_blocked()  # the sampler is asleep until its next tick
                sampler.stop()
        return sampler

    assert anyio.run(go).rounds == 1


def test_the_facade_passes_field_value_pairs_as_pynvml_wants() -> None:
    module = fake_pynvml([FakeGpu(nvlink_gbs=10.0)])
    seen: list[Any] = []
    inner = module.nvmlDeviceGetFieldValues
    module.nvmlDeviceGetFieldValues = lambda handle, ids: seen.append(ids) or inner(handle, ids)
    facade = NvmlFacade(module=module)
    result = anyio.run(lambda: facade.call("nvmlDeviceGetFieldValues", 0, NVLINK_TX, ALL_LINKS, NVLINK_RX, ALL_LINKS))
    assert seen == [[(NVLINK_TX, ALL_LINKS), (NVLINK_RX, ALL_LINKS)]]
    assert isinstance(result.value, list) and [v["fieldId"] for v in result.value] == [NVLINK_TX, NVLINK_RX]
    assert result.value[0]["nvmlReturn"] == 0 and "ullVal" in result.value[0]["value"]
    odd = anyio.run(lambda: facade.call("nvmlDeviceGetFieldValues", 0, NVLINK_TX))
    assert odd.error == "INVALID_ARGUMENT" and len(seen) == 1  # never reached the library


def test_serving_gpus_are_those_with_processes_else_all_else_as_given() -> None:
    host = _host([FakeGpu(), FakeGpu(pids=[42]), FakeGpu()])
    assert anyio.run(serving_gpus, host, None)[0] == [1]
    assert anyio.run(serving_gpus, _host([FakeGpu(), FakeGpu()]), None)[0] == [0, 1]
    assert anyio.run(serving_gpus, host, [0, 2]) == ([0, 2], "as given (--gpus)")
    gpus, why = anyio.run(serving_gpus, host, [5])
    assert gpus == [] and "GPU 5 not present" in why
    gpus, why = anyio.run(serving_gpus, _host([FakeGpu()], init_error="LIBRARY_NOT_FOUND"), None)
    assert gpus == [] and why == "NVML unavailable (LIBRARY_NOT_FOUND)"


def test_a_snapshot_host_samples_what_was_recorded_and_nothing_else() -> None:
    from pathlib import Path

    from rigaudit.tools.hosts.snapshot import SnapshotHost

    snap = SnapshotHost(Path(__file__).parent / "fixtures" / "h200x1-vm")

    async def go() -> Any:
        gpus, _ = await serving_gpus(snap, None)
        sampler = Sampler(snap, gpus, 0.05)
        return gpus, await sampler.describe(), await sampler.sample(gpus[0], slow=True), sampler

    gpus, infos, sample, sampler = anyio.run(go)
    assert gpus == [0] and infos[0].name == "NVIDIA H200"
    assert sample.util is not None or ("nvmlDeviceGetUtilizationRates" in " ".join(sampler.unsupported_lines()))


def test_sampling_stops_at_its_cap_and_says_so() -> None:
    host = Counting(_host([FakeGpu(), FakeGpu()]))

    async def go() -> Sampler:
        sampler = Sampler(host, [0, 1], 0.001)  # type: ignore[arg-type]
        sampler.max_samples = 7
        async with anyio.create_task_group() as group:
            group.start_soon(sampler.run)
            while not sampler.full:  # the loop parks itself once full; nothing to stop yet
                await anyio.wait_all_tasks_blocked()
            sampler.stop()
        return sampler

    sampler = anyio.run(go)
    assert sampler.full and len(sampler.samples) == 6  # whole rounds only, never past the cap
