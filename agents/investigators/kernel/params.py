"""kernel facts of the boot command line and runtime knobs: /proc/cmdline, THP, swappiness, each GPU's IOMMU group;
plus the helpers the kernel rules share."""

from __future__ import annotations

import re
from collections.abc import Mapping

from rigaudit.agents.facts.boot_line import BootLine, collect_boot_line
from rigaudit.agents.facts.gpus import PCI_DEVICES, Gpu, collect_gpus
from rigaudit.agents.facts.numbers import count
from rigaudit.agents.facts.p2p_context import P2pContext, collect_p2p_context
from rigaudit.agents.facts.platform import Platform, detect_platform
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.facts.proc_info import parse_status
from rigaudit.agents.facts.processes import find_servers
from rigaudit.agents.facts.tuned import TunedState, collect_tuned
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, command_ref, file_ref
from rigaudit.tools.schema.finding import Area, Where

AREA: Area = "kernel"


CMDLINE = "/proc/cmdline"


THP = "/sys/kernel/mm/transparent_hugepage"


IOMMU_GROUPS = "/sys/kernel/iommu_groups"


SWAPPINESS = "/proc/sys/vm/swappiness"


SWAPPINESS_TARGET = 10


class GpuIommu(Record):
    gpu: Gpu
    group: str | None
    domain_type: str | None
    """``identity`` (passthrough), ``DMA``/``DMA-FQ`` (translated), ``unmanaged``/``blocked`` (vfio)."""


class KernelParamsFacts(Record):
    platform: Platform
    gpus: tuple[GpuIommu, ...]
    cmdline: str | None
    groups_listed: tuple[str, ...] | None
    """Entries of /sys/kernel/iommu_groups (``None``: no such directory, i.e. no IOMMU)."""
    kernel_iommu_line: str | None
    """The kernel log's ``iommu: Default domain type`` line."""
    cpu_vendor: str | None
    grace: bool
    """An NVIDIA Grace CPU (Arm implementer 0x41, part 0xd4f: Neoverse V2)."""
    mem_auto_init: str | None
    """The kernel log's ``mem auto-init: stack:..., heap alloc:..., heap free:...`` line."""
    thp_enabled: str | None
    thp_defrag: str | None
    compact_stall: int | None
    vmstat_error: str | None
    swappiness: int | None
    swap_total_kb: int | None
    swap_free_kb: int | None
    p2p: P2pContext
    boot: BootLine
    refs: Mapping[str, tuple[str, ...]]
    tuned: TunedState | None = None
    """tuned's state: a [vm] setting its active profile sets is fixed by a profile."""
    server_swap: tuple[tuple[str, int | None], ...] = ()
    """Each server process and GPU worker (its label) with its ``VmSwap`` in kB (None: not read)."""


def selected(text: str | None) -> str | None:
    """The bracketed choice of a sysfs selector (``always [madvise] never`` -> ``madvise``)."""
    if text is None:
        return None
    match = re.search(r"\[([^\]]+)\]", text)
    return match.group(1) if match else (text.strip() or None)


def _meminfo_kb(text: str | None, key: str) -> int | None:
    match = re.search(rf"^{key}:\s+(\d+)", text or "", re.MULTILINE)
    return int(match.group(1)) if match else None


def _int(text: str | None) -> int | None:
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


async def _gpu_iommu(probe: Probe, gpu: Gpu) -> GpuIommu:
    target = await probe.readlink(f"{PCI_DEVICES}/{gpu.bdf}/iommu_group")
    if not target:
        return GpuIommu(gpu, None, None)
    group = target.rstrip("/").rsplit("/", 1)[-1]
    kind = await probe.text(f"{IOMMU_GROUPS}/{group}/type")
    return GpuIommu(gpu, group, kind.strip() if kind else None)


async def _server_swap(probe: Probe) -> tuple[tuple[str, int | None], ...]:
    """``VmSwap`` of the servers and of the GPU processes that belong to them (at most 32 processes)."""
    scan = await find_servers(probe)
    labels = {s.pid: s.label for s in scan.servers}
    for p in scan.gpu_processes:
        if p.server:
            labels.setdefault(p.pid, f"pid {p.pid} ({p.marker or 'server'} worker)")
    pids = sorted(labels)[:32]
    statuses = await probe.gather(*[lambda p=p: probe.text(f"/proc/{p}/status") for p in pids])
    return tuple((labels[pid], _status_kb(text, "VmSwap")) for pid, text in zip(pids, statuses, strict=True))


def _status_kb(text: str | None, key: str) -> int | None:
    return count(parse_status(text).get(key, "").removesuffix("kB").strip())


async def collect(probe: Probe) -> KernelParamsFacts:
    inventory = await collect_gpus(probe)
    gpus = await probe.gather(*[lambda g=g: _gpu_iommu(probe, g) for g in inventory.gpus])
    groups = await probe.list_dir(IOMMU_GROUPS)
    paths = (CMDLINE, f"{THP}/enabled", f"{THP}/defrag", SWAPPINESS, "/proc/meminfo", "/proc/cpuinfo")
    cmdline, enabled, defrag, swappiness, meminfo, cpuinfo = await probe.gather(*[lambda p=p: probe.text(p) for p in paths])
    vmstat_read = await probe.read("/proc/vmstat")
    vmstat = vmstat_read.text()
    platform = await detect_platform(probe)
    dmesg = await probe.run(["dmesg"])
    iommu_line = next((ln.strip() for ln in dmesg.stdout.splitlines() if "Default domain type" in ln), None) if dmesg.ok else None
    vendor = re.search(r"^vendor_id\s*:\s*(\S+)", cpuinfo or "", re.MULTILINE)
    grace = bool(re.search(r"^CPU implementer\s*:\s*0x41$", cpuinfo or "", re.MULTILINE)) and bool(
        re.search(r"^CPU part\s*:\s*0xd4f$", cpuinfo or "", re.MULTILINE)
    )
    auto_init = next((ln.strip() for ln in dmesg.stdout.splitlines() if "mem auto-init:" in ln), None) if dmesg.ok else None
    compact = re.search(r"^compact_stall\s+(\d+)", vmstat or "", re.MULTILINE)
    group_refs = tuple(f"link:{PCI_DEVICES}/{g.gpu.bdf}/iommu_group" for g in gpus) + tuple(
        file_ref(f"{IOMMU_GROUPS}/{g.group}/type") for g in gpus if g.group
    )
    return KernelParamsFacts(
        platform=platform,
        gpus=tuple(gpus),
        cmdline=cmdline.strip() if cmdline is not None else None,
        groups_listed=groups.entries,
        kernel_iommu_line=iommu_line,
        cpu_vendor=vendor.group(1) if vendor else None,
        grace=grace,
        mem_auto_init=auto_init,
        thp_enabled=selected(enabled),
        thp_defrag=selected(defrag),
        compact_stall=int(compact.group(1)) if compact else None,
        vmstat_error=vmstat_read.error,
        swappiness=_int(swappiness),
        swap_total_kb=_meminfo_kb(meminfo, "SwapTotal"),
        swap_free_kb=_meminfo_kb(meminfo, "SwapFree"),
        p2p=await collect_p2p_context(probe, inventory),
        boot=await collect_boot_line(probe),
        tuned=await collect_tuned(probe),
        server_swap=await _server_swap(probe),
        refs={
            "iommu": (file_ref(CMDLINE), *group_refs, *((command_ref(["dmesg"]),) if iommu_line else ())),
            "thp": (file_ref(f"{THP}/enabled"), file_ref(f"{THP}/defrag"), file_ref("/proc/vmstat")),
            "swap": (file_ref(SWAPPINESS), file_ref("/proc/meminfo")),
            "cmdline": (file_ref(CMDLINE),),
        },
    )


def fix_where(platform: Platform) -> Where:
    """The running kernel's settings: this host or VM guest; a container's host from inside a container."""
    return layer_where(platform, "kernel")


def cmdline_tokens(cmdline: str | None) -> list[str]:
    return (cmdline or "").split()
