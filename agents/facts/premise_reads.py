"""How the shared facts tell the premises every area's table names (:mod:`rigaudit.agents.premise`).

Each function reads one shared fact (the platform, the GPU inventory, the serving processes, the kernel's release,
the kernel log, the RDMA NICs, the cpufreq drivers) as held with its value, or missing with what would tell.
"""

from __future__ import annotations

from rigaudit.agents.facts.cpufreq_drivers import FrequencyDrivers
from rigaudit.agents.facts.gpus import GpuInventory
from rigaudit.agents.facts.kernel_log import log_unavailable
from rigaudit.agents.facts.os_image import OsImage
from rigaudit.agents.facts.p2p_context import P2pContext
from rigaudit.agents.facts.platform import Platform
from rigaudit.agents.facts.processes import ServerScan
from rigaudit.agents.facts.rdma import RdmaFacts
from rigaudit.agents.premise import Reading, held, missing
from rigaudit.tools.hosts.base import CommandResult

PLATFORM_READS = "systemd-detect-virt, `/proc/cpuinfo` hypervisor flag, `/sys/class/dmi/id`, PID 1's cgroup and environment"
GPUS_READS = "NVML device names and PCI ids; `/sys/bus/pci/devices/*/{vendor,class}`"
NVML_READS = "NVML init and the calls the check makes"
SERVERS_READS = "NVML compute processes, `/proc/*/cmdline` of inference servers"
KERNEL_READS = "`/proc/sys/kernel/osrelease`"
KERNEL_LOG_READS = "`dmesg` (the kernel log)"
RDMA_READS = "`/sys/class/infiniband/*`"
OS_READS = "`/etc/os-release` (`ID`, `VARIANT_ID`), the kernel's release, the `/` mount's options, PID 1's name"
CPUFREQ_READS = "`/sys/devices/system/cpu/cpu*/cpufreq/`, the running kernel's config"


def platform(facts: Platform) -> Reading:
    if not facts.layers:
        return missing("systemd-detect-virt, /proc/cpuinfo's hypervisor flag or /sys/class/dmi/id would tell")
    return held(facts.label)


def os_image(image: OsImage | None) -> Reading:
    if image is None:
        return missing("/etc/os-release, /proc/mounts and /proc/1/comm would tell")
    return held(image.label)


def gpus(inventory: GpuInventory) -> Reading:
    if inventory.gpus:
        names = dict.fromkeys(g.name for g in inventory.gpus)
        return held(f"{len(inventory.gpus)} GPU(s): {', '.join(names)}")
    if inventory.nvml_ok:
        return held("no GPU (NVML counts none)")
    return (
        held("no NVIDIA GPU on the PCI bus")
        if inventory.nvml_error is None
        else held(f"no NVIDIA GPU on the PCI bus; NVML: {inventory.nvml_error}")
    )


def nvml(inventory: GpuInventory) -> Reading:
    if inventory.nvml_ok:
        return held(f"driver {inventory.driver_version or '?'}")
    return missing(f"NVML: {inventory.nvml_error or 'not usable'}; NVML (libnvidia-ml.so.1 with the driver loaded) would tell")


def servers(scan: ServerScan) -> Reading:
    if scan.servers:
        labels = ", ".join(s.label for s in scan.servers[:4])
        return held(f"{len(scan.servers)} server(s): {labels}" + (", ..." if len(scan.servers) > 4 else ""))
    if scan.proc_error is not None and not scan.nvml_listed:
        return missing(f"searched {scan.searched}: listing /proc (or NVML's compute processes) would tell")
    return held(f"no inference server (searched {scan.searched})")


def kernel(release: str | None) -> Reading:
    if not release:
        return missing("/proc/sys/kernel/osrelease (uname -r) would tell")
    return held(release.strip())


def kernel_log(log: CommandResult, *, in_container: bool = False) -> Reading:
    why = log_unavailable(log, in_container=in_container)
    if why is not None:
        return missing(f"{why}; dmesg as root (or journalctl -k) would tell")
    return held(f"{len(log.stdout.splitlines())} lines")


def rdma(facts: RdmaFacts) -> Reading:
    if facts.nics is None:
        return missing(f"/sys/class/infiniband: {facts.error or 'not listable'}; listing it would tell")
    return held(", ".join(n.name for n in facts.nics) or "no RDMA NIC")


def cpufreq(drivers: FrequencyDrivers) -> Reading:
    return held(f"kernel {drivers.release or '?'}: {drivers.how}")


def text(value: str | None, what: str, tell: str) -> Reading:
    """A fact read as one text: held with it, or missing with ``tell``."""
    if value is None:
        return missing(tell)
    return held(f"{what} {value.strip()}".strip())


def p2p_context(context: P2pContext) -> Reading:
    """What the GPUs can do with each other: the product line's P2P, NVLink, MIG and vGPUs, and the RDMA NICs."""
    parts = [f"P2P by product line: {context.support}"]
    if context.driver_refuses:
        parts.append("the driver refuses P2P")
    if context.nvlink_gpus:
        parts.append(f"NVLink on {len(context.nvlink_gpus)} GPU(s)")
    if context.mig_on:
        parts.append(f"MIG on {len(context.mig_on)} GPU(s)")
    if context.vgpu:
        parts.append(f"{len(context.vgpu)} vGPU(s)")
    parts.append(f"{len(context.rdma.nics or ())} RDMA NIC(s)")
    return held("; ".join(parts))


def gpu_config(inventory: GpuInventory, mig_on: int = 0) -> Reading:
    """What the GPUs are configured to do, as far as the inventory and MIG modes tell (vGPUs, MIG)."""
    vgpus = sum(1 for g in inventory.gpus if g.vgpu)
    parts = [f"{vgpus} vGPU(s)" if vgpus else "no vGPU"]
    if mig_on:
        parts.append(f"MIG on {mig_on} GPU(s)")
    return held("; ".join(parts))
