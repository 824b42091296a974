"""cuda facts: compute mode, MIG mode, ECC mode, memory and compute processes of every GPU (NVML);
plus the helpers the cuda rules share."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.gpus import GpuInventory, collect_gpus
from rigaudit.agents.facts.mig import GpuMig, collect_mig, mig_devices
from rigaudit.agents.facts.nvml_reads import GpuReads, failure_text, label, nvml_unusable, read_per_gpu
from rigaudit.agents.facts.platform import Platform, detect_platform
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.facts.processes import ServerScan, find_servers, parse_environ
from rigaudit.agents.facts.serving import largest_tp
from rigaudit.agents.investigators.cuda.processes import ProcessFacts, collect_processes
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.schema.finding import Area, Finding, Where

AREA: Area = "cuda"


COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}


LITTLE_USED = 2 * 2**30
"""Memory below this on a GPU with no process is the driver's own reservation."""


class CudaFacts(Record):
    inventory: GpuInventory
    platform: Platform
    compute_mode: GpuReads
    mig: GpuReads
    memory: GpuReads
    ecc: GpuReads
    scan: ServerScan
    processes: ProcessFacts
    mig_states: tuple[GpuMig, ...]
    server_mig_devices: tuple[str, ...]
    """``MIG-...`` devices the servers are given (CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES)."""
    tp: int | None


async def collect(probe: Probe) -> CudaFacts:
    inventory = await collect_gpus(probe)
    platform = await detect_platform(probe)
    compute_mode, mig, memory, ecc = await probe.gather(
        *[
            lambda fn=fn: read_per_gpu(probe, inventory, fn)
            for fn in ("nvmlDeviceGetComputeMode", "nvmlDeviceGetMigMode", "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetEccMode")
        ]
    )
    scan = await find_servers(probe)
    processes = await collect_processes(probe, inventory, platform, scan)
    states = await collect_mig(probe, inventory)
    environs = await probe.gather(*[lambda s=s: probe.read(f"/proc/{s.pid}/environ") for s in scan.servers[:16]])
    devices = tuple(dict.fromkeys(d for e in environs for d in mig_devices(parse_environ(e.data))))
    tp = largest_tp([s.argv for s in scan.servers])
    return CudaFacts(inventory, platform, compute_mode, mig, memory, ecc, scan, processes, states, devices, tp)


def gib_text(value: float) -> str:
    return f"{value / 2**30:.1f} GiB"


def driver_where(platform: Platform) -> Where:
    """GPU driver settings belong to whoever runs the driver: the host of a container."""
    return layer_where(platform, "gpu_driver")


def _pairs(reads: GpuReads) -> dict[int, tuple[int, int]]:
    out = {}
    for index in reads.results:
        value = reads.value(index)
        if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
            out[index] = (value[0], value[1])
    return out


def mode_pairs(inventory: GpuInventory, modes: dict[int, tuple[int, int]], indices: list[int]) -> str:
    def word(v: int) -> str:
        return "on" if v else "off"

    return "; ".join(f"{label(inventory, i)}: current {word(modes[i][0])}, pending {word(modes[i][1])}" for i in indices)


def _all_unsupported(reads: GpuReads) -> bool:
    failed = reads.failed()
    return bool(failed) and len(failed) == len(reads.results) and set(failed.values()) == {"NOT_SUPPORTED"}


def modes_or_finding(f: CudaFacts, reads: GpuReads, check: Check, feature: str) -> dict[int, tuple[int, int]] | Finding:
    """(current, pending) per GPU of a mode (MIG, ECC), or the finding when it cannot be judged."""
    if why := nvml_unusable(f.inventory):
        return check.unknown(why)
    if _all_unsupported(reads):
        return check.not_applicable(f"these GPUs do not support {feature} (NOT_SUPPORTED)", evidence=reads.refs)
    modes = _pairs(reads)
    if not modes:
        return check.unknown(failure_text(reads, f.inventory), evidence=reads.refs)
    return modes
