"""numa facts: NUMA nodes and their CPUs, automatic balancing, the GPUs, memory and device placement;
plus the helpers the numa rules share."""

from __future__ import annotations

import re

from rigaudit.agents.facts.gpus import Gpu, collect_gpus
from rigaudit.agents.facts.platform import FixTarget, Platform, detect_platform
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.facts.processes import ServerScan, find_servers
from rigaudit.agents.investigators.numa.binding import ServerBinding, collect_bindings
from rigaudit.agents.investigators.numa.devices import DeviceFacts, collect_devices
from rigaudit.agents.investigators.numa.memory import MemoryFacts, collect_memory
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.schema.finding import Area, Where

AREA: Area = "numa"


NODES = "/sys/devices/system/node"


BALANCING = "/proc/sys/kernel/numa_balancing"


TIERS = "/sys/devices/virtual/memory_tiering"
"""Linux 6.1+: one ``memory_tierN`` per tier (lower N: faster), each with its ``nodelist``."""


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
    scan: ServerScan
    bindings: tuple[ServerBinding, ...]
    """Each server's GPUs and the CPUs and memory nodes it is allowed (:mod:`.binding`)."""
    release: str | None = None
    """The running kernel's release (``uname -r``)."""
    tiers: dict[int, str] | None = None
    """Memory tier -> its ``nodelist``; None when :data:`TIERS` cannot be listed (before 6.1, or not readable)."""


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
    scan = await find_servers(probe)
    release = await probe.text("/proc/sys/kernel/osrelease")
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
        scan=scan,
        release=release.strip() if release else None,
        tiers=await _tiers(probe),
        bindings=await collect_bindings(probe, scan, inventory.gpus, platform.in_container),
    )


async def _tiers(probe: Probe) -> dict[int, str] | None:
    listing = await probe.list_dir(TIERS)
    if listing.entries is None:
        return None
    tiers = sorted(int(m.group(1)) for e in listing.entries if (m := re.fullmatch(r"memory_tier(\d+)", e)))
    lists = await probe.gather(*[lambda t=t: probe.text(f"{TIERS}/memory_tier{t}/nodelist") for t in tiers])
    return {t: text.strip() for t, text in zip(tiers, lists, strict=True) if text is not None and text.strip()}


def fix_where(platform: Platform, target: FixTarget = "kernel") -> Where:
    """kernel.* sysctls are the running kernel's (a container's host from inside one); firmware the machine's."""
    return layer_where(platform, target)
