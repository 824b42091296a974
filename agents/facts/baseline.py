"""Baseline facts for the report header: versions, CPU, memory, GPUs, platform."""

from __future__ import annotations

from rigaudit.agents.facts.gpus import GpuInventory, collect_gpus
from rigaudit.agents.facts.numbers import count as kernel_number
from rigaudit.agents.facts.platform import Platform, detect_platform
from rigaudit.tools.hosts.probe import Probe


def _first_value(text: str | None, key: str) -> str | None:
    for line in (text or "").splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip() == key:
            return value.strip()
    return None


def _os_name(text: str | None) -> str | None:
    for line in (text or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return None


async def collect_baseline(probe: Probe) -> dict[str, str]:
    """A flat, human-readable dict of the host's baseline state (unknown facts are left out)."""
    osrelease, os_release, cpuinfo, meminfo, nodes, nv_version = await probe.gather(
        lambda: probe.text("/proc/sys/kernel/osrelease"),
        lambda: probe.text("/etc/os-release"),
        lambda: probe.text("/proc/cpuinfo"),
        lambda: probe.text("/proc/meminfo"),
        lambda: probe.list_dir("/sys/devices/system/node"),
        lambda: probe.text("/proc/driver/nvidia/version"),
    )
    assert not isinstance(nodes, str)
    inventory = await collect_gpus(probe)
    platform = await detect_platform(probe)
    facts: dict[str, str] = {}
    if isinstance(osrelease, str):
        facts["kernel"] = osrelease.strip()
    if isinstance(os_release, str) and (name := _os_name(os_release)):
        facts["os"] = name
    if isinstance(cpuinfo, str):
        model = _first_value(cpuinfo, "model name")
        logical = sum(1 for line in cpuinfo.splitlines() if line.startswith("processor"))
        sockets = {v for line in cpuinfo.splitlines() if line.startswith("physical id") for v in [line.split(":", 1)[1].strip()]}
        if model:
            facts["cpu"] = f"{model} ({len(sockets) or '?'} socket(s), {logical} logical CPUs)"
    total = _first_value(meminfo, "MemTotal") if isinstance(meminfo, str) else None
    if (kib := kernel_number(total.split()[0] if total and total.split() else None)) is not None:
        facts["memory"] = f"{kib / 1024 / 1024:.0f} GiB"
    if nodes is not None and not isinstance(nodes, str) and nodes.entries is not None:
        count = sum(1 for n in nodes.entries if n.startswith("node") and n[4:].isdecimal())
        if count:
            facts["numa_nodes"] = str(count)
    facts.update(_gpu_facts(inventory, nv_version if isinstance(nv_version, str) else None))
    cuda = await probe.nvml("nvmlSystemGetCudaDriverVersion")
    if cuda.ok and isinstance(cuda.value, int):
        facts["cuda_driver"] = f"{cuda.value // 1000}.{cuda.value % 1000 // 10}"
    facts["platform"] = platform.label
    if (step := _job_step_fact(platform, inventory)) is not None:
        facts["job_step"] = step
    if platform.lxc_configs:
        facts["lxc_containers"] = ", ".join(p.rsplit("/", 1)[-1].removesuffix(".conf") for p in platform.lxc_configs)
    return facts


def _gpu_facts(inventory: GpuInventory, nv_version: str | None) -> dict[str, str]:
    """The GPUs by model (and those the host has beyond what this audit was given), the driver, NVML's state."""
    facts: dict[str, str] = {}
    if inventory.gpus:
        names: dict[str, int] = {}
        for gpu in inventory.gpus:
            names[gpu.name] = names.get(gpu.name, 0) + 1
        facts["gpus"] = ", ".join(f"{n} x {name}" for name, n in names.items())
        if inventory.elsewhere and inventory.nvml_indices:
            here = f"this job step ({inventory.confined})" if inventory.confined else "this container"
            facts["gpus"] += f" (the host has {inventory.elsewhere} more, not given to {here})"
    if inventory.driver_version:
        facts["driver"] = inventory.driver_version
    elif isinstance(nv_version, str) and nv_version.strip():
        facts["driver"] = nv_version.splitlines()[0].strip()
    if not inventory.nvml_ok:
        facts["nvml"] = f"unavailable ({inventory.nvml_error or 'unknown error'})"
    return facts


def _job_step_fact(platform: Platform, inventory: GpuInventory) -> str | None:
    """The scheduler's job step this audit runs in, what it was given, and the GPUs it leaves unjudged."""
    step = platform.job_step
    if step is None:
        return None
    said = f"{step.label}, given {step.given}, {step.constraint}"
    shown = len(inventory.nvml_indices)
    if inventory.confined and inventory.nvml_count == 0 and inventory.gpus:
        return said + f": NVML shows none of the node's {len(inventory.gpus)} GPU(s) on the PCI bus"
    if inventory.confined and shown and inventory.elsewhere:
        return said + (
            f": NVML shows {shown} of the node's {shown + inventory.elsewhere} GPU(s) on the PCI bus, "
            f"the other {inventory.elsewhere} unjudged"
        )
    return said
