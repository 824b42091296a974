"""Sampling the serving GPUs through NVML at a fixed rate while a benchmark runs.

Every ``interval_s`` each GPU is asked, through the Host's NVML facade (read-only functions only),
for its utilisation (the share of NVML's last sample period in which a kernel ran, and in which
memory was read or written), SM and memory clocks, power, memory used and its NVLink byte counters
(all links, ``nvmlDeviceGetFieldValues``); every second (the call takes about 20 ms on a real GPU)
for its PCIe throughput. A function a GPU does not support is asked once and
then left out for that GPU. Timestamps are seconds on the clock the caller passes (the same one
that times the benchmark's windows), and the sampler waits for its next tick on that clock with the
``sleep`` it is given (:class:`~rigaudit.tools.bench.loadgen.Load`: the real clock and ``anyio.sleep``
unless a test scripts both). NVML unavailable: no samples, and :attr:`Sampler.error` says why.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import anyio
from pydantic import BaseModel, ConfigDict, Field

from rigaudit.tools.bench.loadgen import Sleep
from rigaudit.tools.hosts.base import Host, NvmlResult

CLOCK_SM, CLOCK_MEM = 1, 2
PCIE_TX, PCIE_RX = 0, 1
NVLINK_TX, NVLINK_RX = 138, 139
"""``NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX``: KiB of data sent/received, cumulative."""
ALL_LINKS = 0xFFFFFFFF
"""A field value's scope for the sum over every link."""
SLOW_EVERY_S = 1.0
MAX_SAMPLES = 2_000_000
"""About 69 hours of 8 GPUs at the default 100 ms: a profile file stays readable."""
_GIVE_UP = frozenset({"NOT_SUPPORTED", "FUNCTION_NOT_FOUND", "NOT_RECORDED", "NO_PERMISSION", "INVALID_ARGUMENT"})


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", allow_inf_nan=False)


class GpuInfo(_Model):
    """What does not change while sampling."""

    index: int = Field(ge=0, le=4096)
    name: str = Field(default="", max_length=200)
    max_sm_mhz: float | None = None
    max_mem_mhz: float | None = None
    power_limit_w: float | None = None
    memory_total_bytes: float | None = None
    processes: int = 0


class GpuSample(_Model):
    """One GPU at one moment; None where the GPU did not say."""

    gpu: int = Field(ge=0, le=4096)
    t: float
    """Seconds on the caller's clock, when the answers came."""
    util: float | None = Field(default=None, ge=0, le=100)
    mem_util: float | None = Field(default=None, ge=0, le=100)
    sm_mhz: float | None = None
    mem_mhz: float | None = None
    power_w: float | None = None
    mem_used_bytes: float | None = None
    pcie_tx_gbs: float | None = None
    pcie_rx_gbs: float | None = None
    nvlink_tx_kib: float | None = None
    """A cumulative counter: rates come from differences."""
    nvlink_rx_kib: float | None = None


def _number(value: object, key: str | None = None) -> float | None:
    if key is not None:
        value = value.get(key) if isinstance(value, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None


def _field_values(value: object) -> list[float | None]:
    """``nvmlDeviceGetFieldValues``'s structs -> each value (unsigned long long), None where it failed."""
    out: list[float | None] = []
    for item in value if isinstance(value, list) else []:
        ok = isinstance(item, dict) and item.get("nvmlReturn") in (0, None)
        out.append(_number(item.get("value"), "ullVal") if ok and isinstance(item, dict) else None)
    return out


class Sampler:
    """Samples ``gpus`` of ``host`` every ``interval_s`` between :meth:`run` and :meth:`stop`."""

    def __init__(
        self,
        host: Host,
        gpus: Sequence[int],
        interval_s: float,
        clock: Callable[[], float] = time.perf_counter,
        sleep: Sleep = anyio.sleep,
    ) -> None:
        self.host = host
        self.gpus = list(gpus)
        self.interval_s = interval_s
        self.clock = clock
        self.sleep = sleep
        self.samples: list[GpuSample] = []
        self.unsupported: dict[tuple[int, str], str] = {}
        """(GPU, function) -> the error that made the sampler stop asking."""
        self.rounds = 0
        self.late_rounds = 0
        self.max_samples = MAX_SAMPLES
        self.full = False
        """Sampling stopped at ``max_samples`` (the rest of the run is not covered)."""
        self._stop = anyio.Event()
        self._pause: anyio.CancelScope | None = None

    async def _ask(self, gpu: int, fn: str, *args: int) -> NvmlResult | None:
        if (gpu, fn) in self.unsupported:
            return None
        result = await self.host.nvml(fn, gpu, *args)
        if result.error in _GIVE_UP:
            self.unsupported[(gpu, fn)] = result.error or ""
        return result if result.ok else None

    async def _value(self, gpu: int, fn: str, *args: int, key: str | None = None, scale: float = 1.0) -> float | None:
        result = await self._ask(gpu, fn, *args)
        number = _number(result.value, key) if result is not None else None
        return number * scale if number is not None else None

    async def describe(self) -> list[GpuInfo]:
        infos = []
        for gpu in self.gpus:
            name = await self.host.nvml("nvmlDeviceGetName", gpu)
            processes = await self.host.nvml("nvmlDeviceGetComputeRunningProcesses", gpu)
            infos.append(
                GpuInfo(
                    index=gpu,
                    name=str(name.value)[:200] if name.ok and name.value is not None else "",
                    max_sm_mhz=await self._value(gpu, "nvmlDeviceGetMaxClockInfo", CLOCK_SM),
                    max_mem_mhz=await self._value(gpu, "nvmlDeviceGetMaxClockInfo", CLOCK_MEM),
                    power_limit_w=await self._value(gpu, "nvmlDeviceGetEnforcedPowerLimit", scale=1e-3),
                    memory_total_bytes=await self._value(gpu, "nvmlDeviceGetMemoryInfo", key="total"),
                    processes=len(processes.value) if processes.ok and isinstance(processes.value, list) else 0,
                )
            )
        return infos

    async def sample(self, gpu: int, slow: bool) -> GpuSample:
        util = await self._ask(gpu, "nvmlDeviceGetUtilizationRates")
        fields: dict[str, float | None] = {
            "util": _number(util.value, "gpu") if util is not None else None,
            "mem_util": _number(util.value, "memory") if util is not None else None,
            "sm_mhz": await self._value(gpu, "nvmlDeviceGetClockInfo", CLOCK_SM),
            "mem_mhz": await self._value(gpu, "nvmlDeviceGetClockInfo", CLOCK_MEM),
            "power_w": await self._value(gpu, "nvmlDeviceGetPowerUsage", scale=1e-3),
            "mem_used_bytes": await self._value(gpu, "nvmlDeviceGetMemoryInfo", key="used"),
        }
        links = await self._ask(gpu, "nvmlDeviceGetFieldValues", NVLINK_TX, ALL_LINKS, NVLINK_RX, ALL_LINKS)
        values = _field_values(links.value) if links is not None else []
        if len(values) == 2 and values[0] is None and values[1] is None:
            self.unsupported[(gpu, "nvmlDeviceGetFieldValues")] = "NOT_SUPPORTED"
        elif len(values) == 2:
            fields["nvlink_tx_kib"], fields["nvlink_rx_kib"] = values
        if slow:  # KB/s -> GB/s
            fields["pcie_tx_gbs"] = await self._value(gpu, "nvmlDeviceGetPcieThroughput", PCIE_TX, scale=1e-6)
            fields["pcie_rx_gbs"] = await self._value(gpu, "nvmlDeviceGetPcieThroughput", PCIE_RX, scale=1e-6)
        return GpuSample(gpu=gpu, t=self.clock(), **fields)

    async def run(self) -> None:
        """Sample until :meth:`stop`; a round that takes longer than the interval skips the ticks it overran."""
        slow_every = max(1, round(SLOW_EVERY_S / self.interval_s))
        start = self.clock()
        tick = 0
        while not self._stop.is_set():
            if len(self.samples) + len(self.gpus) > self.max_samples:
                self.full = True
                await self._stop.wait()
                break
            slow = tick % slow_every == 0
            for gpu in self.gpus:
                self.samples.append(await self.sample(gpu, slow))
            self.rounds += 1
            now = self.clock()
            next_tick = math.floor((now - start) / self.interval_s) + 1
            if next_tick > tick + 1:
                self.late_rounds += 1
            tick = next_tick
            await self._wait(max(0.0, start + tick * self.interval_s - self.clock()))

    async def _wait(self, seconds: float) -> None:
        """``seconds`` on the clock (:attr:`sleep`), cut short by :meth:`stop`."""
        with anyio.CancelScope() as scope:
            self._pause = scope
            if not self._stop.is_set():
                await self.sleep(seconds)
        self._pause = None

    def stop(self) -> None:
        self._stop.set()
        if self._pause is not None:
            self._pause.cancel()

    def unsupported_lines(self) -> list[str]:
        grouped: dict[tuple[str, str], list[int]] = {}
        for (gpu, fn), error in sorted(self.unsupported.items()):
            grouped.setdefault((fn, error), []).append(gpu)
        return [f"{fn}: {error} on GPU {', '.join(map(str, gpus))}" for (fn, error), gpus in grouped.items()]


async def serving_gpus(host: Host, wanted: Sequence[int] | None) -> tuple[list[int], str]:
    """(the GPUs to sample, how they were chosen); ([], why) when NVML cannot count GPUs here."""
    count = await host.nvml("nvmlDeviceGetCount")
    if not count.ok or not isinstance(count.value, int):
        return [], f"NVML unavailable ({count.error or 'no GPU count'})"
    if wanted:
        missing = [g for g in wanted if not 0 <= g < count.value]
        if missing:
            return [], f"GPU {', '.join(map(str, missing))} not present (NVML sees {count.value})"
        return list(wanted), "as given (--gpus)"
    busy = []
    for gpu in range(count.value):
        procs = await host.nvml("nvmlDeviceGetComputeRunningProcesses", gpu)
        if procs.ok and isinstance(procs.value, list) and procs.value:
            busy.append(gpu)
    if busy:
        return busy, "the GPUs with compute processes (--gpus to choose)"
    return list(
        range(count.value)
    ), "every GPU: none shows a compute process (in a container they may be hidden; --gpus to choose)"
