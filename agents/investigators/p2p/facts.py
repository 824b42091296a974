"""p2p facts: NVML P2P status and topology of every GPU pair, and the P2P benchmark's file."""

from __future__ import annotations

import re
from itertools import combinations

from rigaudit.agents.facts.boot_line import BootLine, collect_boot_line
from rigaudit.agents.facts.confcompute import read_conf_compute
from rigaudit.agents.facts.gpus import GpuInventory, collect_gpus
from rigaudit.agents.facts.p2p_context import P2pContext, collect_p2p_context
from rigaudit.agents.facts.pci_paths import PciPaths, collect_pci_paths
from rigaudit.agents.facts.platform import Platform, detect_platform
from rigaudit.tools.bench.p2p_file import DEFAULT_PATH
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import FileResult, NvmlResult
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.schema.finding import Area

AREA: Area = "p2p"
P2P_READ, P2P_WRITE = 0, 1
BENCH_FILE = str(DEFAULT_PATH)
"""Where ``rigaudit bench p2p`` saves its ``rigaudit.p2p/1`` result for this check."""


class Pair(Record):
    a: int
    b: int
    read: NvmlResult
    write: NvmlResult
    ancestor: NvmlResult
    nvlink: bool = False
    """The pair peers over NVLink (:attr:`P2pContext.nvlink_pairs`): its traffic takes NVLink, not the PCIe path of
    the topology. Both GPUs having NVLink up is not enough: bridged pairs reach each other's neighbours over PCIe."""


class P2pFacts(Record):
    inventory: GpuInventory
    platform: Platform
    pairs: tuple[Pair, ...]
    bench: FileResult
    context: P2pContext
    paths: PciPaths
    cpu_vendor: str | None
    boot: BootLine
    cc_on: bool | None = None
    """NVML's confidential-computing state: CC mode refuses P2P by design (None: not read)."""


async def _pair(probe: Probe, a: int, b: int, nvlinked: frozenset[tuple[int, int]]) -> Pair:
    read = await probe.nvml("nvmlDeviceGetP2PStatus", a, b, P2P_READ)
    write = await probe.nvml("nvmlDeviceGetP2PStatus", a, b, P2P_WRITE)
    ancestor = await probe.nvml("nvmlDeviceGetTopologyCommonAncestor", a, b)
    return Pair(a, b, read, write, ancestor, nvlink=(min(a, b), max(a, b)) in nvlinked)


async def collect(probe: Probe) -> P2pFacts:
    inventory = await collect_gpus(probe)
    platform = await detect_platform(probe)
    indices = inventory.nvml_indices
    context = await collect_p2p_context(probe, inventory)
    linked = context.nvlink_pairs
    pairs = await probe.gather(*[lambda a=a, b=b: _pair(probe, a, b, linked) for a, b in combinations(indices, 2)])
    bench = await probe.read(BENCH_FILE)
    paths = await collect_pci_paths(probe, context.gpus)
    cpuinfo = await probe.text("/proc/cpuinfo")
    vendor = re.search(r"^vendor_id\s*:\s*(\S+)", cpuinfo or "", re.MULTILINE)
    boot = await collect_boot_line(probe)
    cc = await read_conf_compute(probe) if inventory.nvml_ok and len(indices) > 1 else None
    return P2pFacts(
        inventory, platform, tuple(pairs), bench, context, paths, vendor.group(1) if vendor else None, boot, cc.on if cc else None
    )
