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
from rigaudit.agents.investigators.gpu.xid_after import (
    RECOVERY_FIELD,
    RECOVERY_SCOPE,
    XidProcess,
    collect_xid_processes,
    parse_xids,
)
from rigaudit.tools.core.record import Record, field
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
    recovery: GpuReads | None = None
    """nvmlDeviceGetFieldValues(GPU, NVML_FI_DEV_GET_GPU_RECOVERY_ACTION): the recovery action each GPU needs now."""
    xid_processes: dict[int, XidProcess] = field(default_factory=dict)
    """The processes application-fault Xid lines name (``pid=``), as /proc shows them now."""


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
    recovery = await _recovery(probe, inventory, dmesg.stdout if dmesg.ok else "")
    processes = await collect_xid_processes(probe, dmesg.stdout if dmesg.ok else "", in_container=platform.in_container)
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
        recovery,
        processes,
    )


async def _recovery(probe: Probe, inventory: GpuInventory, log: str) -> GpuReads:
    """The recovery action of each GPU the kernel log has an Xid for (one NVML field read each: none without Xids)."""
    fn, extra = "nvmlDeviceGetFieldValues", (RECOVERY_FIELD, RECOVERY_SCOPE)
    logged = {e.bdf for e in parse_xids(log)}
    indices = [g.index for g in inventory.gpus if g.bdf in logged and g.index is not None]
    results = await probe.gather(*[lambda i=i: probe.nvml(fn, i, *extra) for i in indices])
    return GpuReads(fn, extra, dict(zip(indices, results, strict=True)))


def int_values(reads: GpuReads) -> dict[int, int]:
    """GPU index -> integer value, for the GPUs whose read gave one."""
    return {i: v for i in reads.results if isinstance(v := reads.value(i), int) and not isinstance(v, bool)}
