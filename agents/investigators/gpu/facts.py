"""gpu facts: per-GPU NVML health reads (temperatures, clock event reasons, memory errors), the kernel log, the
application clocks and retired pages; plus the helpers the gpu rules share."""

from __future__ import annotations

from rigaudit.agents.facts.gpus import GpuInventory, collect_gpus
from rigaudit.agents.facts.kernel_log import read_kernel_log
from rigaudit.agents.facts.nvidia_driver import PROC_VERSION
from rigaudit.agents.facts.nvml_reads import GpuReads, read_per_gpu
from rigaudit.agents.facts.platform import Platform, detect_platform
from rigaudit.agents.investigators.gpu.app_clocks import AppClockFacts, collect_app_clocks
from rigaudit.agents.investigators.gpu.retired import RetiredFacts, collect_retired
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import CommandResult
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.schema.finding import Area

AREA: Area = "gpu"
SLOWDOWN, GPU_MAX = 1, 3
"""nvmlTemperatureThresholds_t: 0 shutdown, 1 slowdown, 2 memory max, 3 GPU max operating."""


class GpuHealthFacts(Record):
    inventory: GpuInventory
    platform: Platform
    temperature: GpuReads
    slowdown: GpuReads
    gpu_max: GpuReads
    reasons: GpuReads
    throttle: GpuReads
    remapped: GpuReads
    volatile_uncorrected: GpuReads
    retired_pending: GpuReads
    dmesg: CommandResult
    app_clocks: AppClockFacts
    retired: RetiredFacts
    proc_version: str | None


async def collect(probe: Probe) -> GpuHealthFacts:
    inventory = await collect_gpus(probe)
    platform = await detect_platform(probe)
    calls: list[tuple[str, tuple[int, ...]]] = [
        ("nvmlDeviceGetTemperature", (0,)),
        ("nvmlDeviceGetTemperatureThreshold", (SLOWDOWN,)),
        ("nvmlDeviceGetTemperatureThreshold", (GPU_MAX,)),
        ("nvmlDeviceGetCurrentClocksEventReasons", ()),
        ("nvmlDeviceGetCurrentClocksThrottleReasons", ()),
        ("nvmlDeviceGetRemappedRows", ()),
        ("nvmlDeviceGetTotalEccErrors", (1, 0)),
        ("nvmlDeviceGetRetiredPagesPendingStatus", ()),
    ]
    temp, slow, gmax, reasons, throttle, remapped, uncorrected, pending = await probe.gather(
        *[lambda fn=fn, extra=extra: read_per_gpu(probe, inventory, fn, *extra) for fn, extra in calls]
    )
    dmesg = await read_kernel_log(probe)
    app_clocks = await collect_app_clocks(probe, inventory, platform)
    retired = await collect_retired(probe, inventory, platform)
    proc_version = await probe.text(PROC_VERSION)
    return GpuHealthFacts(
        inventory,
        platform,
        temp,
        slow,
        gmax,
        reasons,
        throttle,
        remapped,
        uncorrected,
        pending,
        dmesg,
        app_clocks,
        retired,
        proc_version,
    )


def int_values(reads: GpuReads) -> dict[int, int]:
    """GPU index -> integer value, for the GPUs whose read gave one."""
    return {i: v for i in reads.results if isinstance(v := reads.value(i), int) and not isinstance(v, bool)}
