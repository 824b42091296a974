"""numa facts: NUMA nodes and their CPUs, automatic balancing, the GPUs, memory and device placement;
plus the helpers the numa rules share."""

from __future__ import annotations

import re

from rigaudit.agents.facts.gpus import Gpu, collect_gpus
from rigaudit.agents.facts.platform import FixTarget, Platform, detect_platform
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.investigators.numa.devices import DeviceFacts, collect_devices
from rigaudit.agents.investigators.numa.memory import MemoryFacts, collect_memory
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.schema.finding import Area, Where

AREA: Area = "numa"


NODES = "/sys/devices/system/node"


BALANCING = "/proc/sys/kernel/numa_balancing"


class NumaFacts(Record):
    platform: Platform
    nodes: tuple[int, ...] | None
    """NUMA node ids from /sys/devices/system/node, or ``None`` when it cannot be listed."""
    node_cpus: dict[int, str]
    balancing: str | None
    balancing_error: str | None
    gpus: tuple[Gpu, ...]
    gpu_error: str | None
    memory: MemoryFacts
    devices: DeviceFacts


async def collect(probe: Probe) -> NumaFacts:
    balancing = await probe.read(BALANCING)
    listing = await probe.list_dir(NODES)
    nodes = None
    node_cpus: dict[int, str] = {}
    if listing.entries is not None:
        nodes = tuple(sorted(int(m.group(1)) for e in listing.entries if (m := re.fullmatch(r"node(\d+)", e))))
        texts = await probe.gather(*[lambda n=n: probe.text(f"{NODES}/node{n}/cpulist") for n in nodes])
        node_cpus = {n: t.strip() for n, t in zip(nodes, texts, strict=True) if t is not None}
    inventory = await collect_gpus(probe)
    platform = await detect_platform(probe)
    text = balancing.text()
    return NumaFacts(
        platform=platform,
        nodes=nodes,
        node_cpus=node_cpus,
        balancing=text.strip() if text is not None else None,
        balancing_error=balancing.error,
        gpus=inventory.gpus,
        gpu_error=None if inventory.gpus else f"no NVIDIA GPU in /sys/bus/pci/devices (NVML: {inventory.nvml_error or 'ok'})",
        memory=await collect_memory(probe, platform),
        devices=await collect_devices(probe, platform, inventory.gpus),
    )


def fix_where(platform: Platform, target: FixTarget = "kernel") -> Where:
    """kernel.* sysctls are the running kernel's (a container's host from inside one); firmware the machine's."""
    return layer_where(platform, target)
