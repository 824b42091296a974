"""numa.hugepages and numa.zone_reclaim: memory the kernel keeps away from the server, and reclaim instead of remote pages."""

from __future__ import annotations

import re

from rigaudit.agents.check import Check
from rigaudit.agents.facts.platform import Platform
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.investigators.numa import premises
from rigaudit.agents.persist import sysctl_persist
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, dir_ref, file_ref
from rigaudit.tools.schema.finding import (
    Action,
    Area,
    CommandAction,
    Finding,
    Fix,
    Severity,
    SysctlAction,
    SysfsWriteAction,
    Where,
)

AREA: Area = "numa"
MEMINFO = "/proc/meminfo"
HUGEPAGES = "/sys/kernel/mm/hugepages"
ZONE_RECLAIM = "/proc/sys/vm/zone_reclaim_mode"
CMDLINE = "/proc/cmdline"
LOW_FRACTION, HIGH_FRACTION = 0.05, 0.25
"""Unused reservations above these shares of RAM are a low / medium problem."""
IN_USE_FRACTION = 0.5
_DEFAULT_SIZE_KB = 2048


class HugePool(Record):
    size_kb: int
    total: int | None
    free: int | None

    @property
    def path(self) -> str:
        return f"{HUGEPAGES}/hugepages-{self.size_kb}kB"


class MemoryFacts(Record):
    platform: Platform
    meminfo: dict[str, int]
    meminfo_error: str | None
    pools: tuple[HugePool, ...]
    cmdline: str | None
    zone_reclaim: str | None
    zone_reclaim_error: str | None


def _hugepages_persist(f: MemoryFacts) -> str:
    line = sysctl_persist("vm.nr_hugepages", "0", f.platform.image)
    image = f.platform.image
    return (
        line
        if image is not None and image.image_based
        else f"{line}; remove nr_hugepages settings from other files in /etc/sysctl.d"
    )


def parse_meminfo(text: str | None) -> dict[str, int]:
    """``HugePages_Total:  16`` -> {"HugePages_Total": 16}; kB values stay in kB."""
    out = {}
    for line in (text or "").splitlines():
        key, sep, rest = line.partition(":")
        fields = rest.split()
        if sep and fields and fields[0].isdecimal():
            out[key.strip()] = int(fields[0])
    return out


def _int(text: str | None) -> int | None:
    return int(text.strip()) if text is not None and text.strip().isdecimal() else None


async def collect_memory(probe: Probe, platform: Platform) -> MemoryFacts:
    meminfo, zone = await probe.gather(lambda: probe.read(MEMINFO), lambda: probe.read(ZONE_RECLAIM))
    cmdline = await probe.text(CMDLINE)
    listing = await probe.list_dir(HUGEPAGES)
    sizes = sorted(int(m.group(1)) for e in listing.entries or () if (m := re.fullmatch(r"hugepages-(\d+)kB", e)))
    totals = await probe.gather(*[lambda s=s: probe.text(f"{HUGEPAGES}/hugepages-{s}kB/nr_hugepages") for s in sizes])
    frees = await probe.gather(*[lambda s=s: probe.text(f"{HUGEPAGES}/hugepages-{s}kB/free_hugepages") for s in sizes])
    pools = tuple(HugePool(s, _int(t), _int(f)) for s, t, f in zip(sizes, totals, frees, strict=True))
    zone_text = zone.text()
    return MemoryFacts(
        platform,
        parse_meminfo(meminfo.text()),
        meminfo.error,
        pools,
        cmdline,
        zone_text.strip() if zone_text is not None else None,
        zone.error,
    )


def _where(platform: Platform) -> Where:
    return layer_where(platform, "kernel")


def _gib(kib: float) -> str:
    return f"{kib / 2**20:.1f} GiB"


def _pools(f: MemoryFacts) -> list[HugePool]:
    """Per-size pools from sysfs, or the default size from /proc/meminfo."""
    pools = [p for p in f.pools if p.total is not None]
    if pools:
        return pools
    total, free = f.meminfo.get("HugePages_Total"), f.meminfo.get("HugePages_Free")
    if total is None:
        return []
    return [HugePool(f.meminfo.get("Hugepagesize", _DEFAULT_SIZE_KB), total, free)]


HUGEPAGES_CHECK = Check(
    "numa.hugepages",
    "Reserved huge pages",
    reads="`/proc/meminfo` (HugePages_*, Hugetlb), `/sys/kernel/mm/hugepages/*/{nr,free}_hugepages`, `/proc/cmdline`",
    problem=(
        "an unused hugetlbfs reservation of ≥ 5% of RAM (medium from 25%): memory lost to page cache, pinned buffers, KV offload"
    ),
    fix="`sysctl -w vm.nr_hugepages=0` (and other sizes through sysfs); drop `hugepages=` from the boot line",
    kinds=("runtime",),
    premises=(premises.PLATFORM_FIX, premises.OS),
)


def judge_hugepages(f: MemoryFacts) -> Finding:
    refs = [file_ref(MEMINFO), dir_ref(HUGEPAGES)]
    mem_total = f.meminfo.get("MemTotal")
    pools = _pools(f)
    if mem_total is None or not pools:
        return HUGEPAGES_CHECK.unknown(f"{MEMINFO} not readable or without HugePages lines: {f.meminfo_error}", evidence=refs)
    reserved = sum((p.total or 0) * p.size_kb for p in pools)
    free = sum((p.free if p.free is not None else p.total or 0) * p.size_kb for p in pools)
    shown = ", ".join(f"{p.total} × {p.size_kb // 1024} MiB ({p.free if p.free is not None else '?'} free)" for p in pools)
    if reserved == 0:
        return HUGEPAGES_CHECK.ok(
            f"no huge pages reserved (RAM {_gib(mem_total)})", expected="no unused reservation", evidence=refs
        )
    share = reserved / mem_total
    used_share = 1 - free / reserved if reserved else 0.0
    observed = f"{_gib(reserved)} reserved ({share:.0%} of {_gib(mem_total)} RAM): {shown}"
    if used_share >= IN_USE_FRACTION or share < LOW_FRACTION:
        why = "in use (VMs, DPDK or a database hold them)" if used_share >= IN_USE_FRACTION else "a small reservation"
        return HUGEPAGES_CHECK.ok(f"{observed}; {why}", expected="no large unused reservation", evidence=refs)
    severity: Severity = "medium" if share >= HIGH_FRACTION else "low"
    on_cmdline = f.cmdline is not None and re.search(r"(?:^|\s)hugepages=", f.cmdline) is not None
    actions: list[Action] = []
    for pool in pools:
        if pool.size_kb == f.meminfo.get("Hugepagesize", _DEFAULT_SIZE_KB):
            actions.append(SysctlAction(key="vm.nr_hugepages", value="0"))
        else:
            actions.append(SysfsWriteAction(paths=(f"{pool.path}/nr_hugepages",), value="0"))
    if on_cmdline:
        actions.append(CommandAction(description="remove hugepages=/hugepagesz= from the kernel command line, then reboot"))
    fix = Fix(
        kind="runtime",
        where=_where(f.platform),
        summary="Release the unused huge page reservation",
        actions=tuple(actions),
        risk="low",
        verify=f"grep -e HugePages_Total -e Hugetlb {MEMINFO}  -> 0",
        revert="; ".join(f"echo {p.total} > {p.path}/nr_hugepages" for p in pools),
        persist=("remove hugepages= from the kernel command line" if on_cmdline else _hugepages_persist(f)),
    )
    refs.append(file_ref(CMDLINE))
    return HUGEPAGES_CHECK.problem_at(
        severity,
        f"{observed}; {1 - used_share:.0%} of it unused",
        f"no unused reservation above {LOW_FRACTION:.0%} of RAM",
        "Huge pages reserved through hugetlbfs are taken out of ordinary memory whether or not anything uses them. "
        "Inference servers do not use hugetlbfs (they rely on transparent huge pages), so this memory is lost to the "
        "page cache that holds model weights while they load, to pinned host buffers, to CPU KV-cache offload and "
        "to the containers' memory: model loading slows or the server is OOM-killed. On a Proxmox host the "
        "reservation may be meant for VMs with 'hugepages:' set: keep it if they run.",
        fix,
        subjects=("vm.nr_hugepages",),
        evidence=refs,
    )


ZONE_RECLAIM_CHECK = Check(
    "numa.zone_reclaim",
    "Zone reclaim mode",
    reads="`/proc/sys/vm/zone_reclaim_mode`",
    problem="non-zero on a multi-node host (local reclaim of the model's page cache instead of remote pages)",
    fix="`sysctl -w vm.zone_reclaim_mode=0`",
    kinds=("runtime",),
    premises=(premises.PLATFORM, premises.NUMA, premises.OS),
)


def judge_zone_reclaim(f: MemoryFacts, nodes: int | None) -> Finding:
    refs = (file_ref(ZONE_RECLAIM),)
    if nodes is not None and nodes <= 1:
        value = f" (vm.zone_reclaim_mode={f.zone_reclaim})" if f.zone_reclaim is not None else ""
        return ZONE_RECLAIM_CHECK.not_applicable(f"one NUMA node: no remote memory to prefer over reclaim{value}")
    if f.zone_reclaim is None:
        if f.zone_reclaim_error == "ENOENT" and f.platform.in_container:
            return ZONE_RECLAIM_CHECK.unknown(f"{ZONE_RECLAIM} is not visible in this container", evidence=refs)
        return ZONE_RECLAIM_CHECK.unknown(f"{ZONE_RECLAIM} not readable: {f.zone_reclaim_error}", evidence=refs)
    if f.zone_reclaim == "0":
        return ZONE_RECLAIM_CHECK.ok("vm.zone_reclaim_mode=0", expected="vm.zone_reclaim_mode=0", evidence=refs)
    fix = Fix(
        kind="runtime",
        where=_where(f.platform),
        summary="Allocate from other nodes before reclaiming: sysctl vm.zone_reclaim_mode=0",
        actions=(SysctlAction(key="vm.zone_reclaim_mode", value="0"),),
        risk="low",
        verify=f"cat {ZONE_RECLAIM}  -> 0",
        revert=f"sysctl -w vm.zone_reclaim_mode={f.zone_reclaim}",
        persist=sysctl_persist("vm.zone_reclaim_mode", "0", f.platform.image),
    )
    return ZONE_RECLAIM_CHECK.problem_at(
        "low",
        f"vm.zone_reclaim_mode={f.zone_reclaim}" + (f" on {nodes} NUMA nodes" if nodes else ""),
        "vm.zone_reclaim_mode=0",
        "With zone reclaim on, a node that runs short of free pages reclaims its own page cache (and, with bits 2/4, "
        "writes dirty pages or swaps) before taking memory from another node. Model weights in the page cache are "
        "evicted and re-read from disk, and allocations of the server's workers stall in direct reclaim. The kernel "
        "documentation recommends it off for workloads that benefit from caching; it is off by default.",
        fix,
        subjects=("vm.zone_reclaim_mode",),
        evidence=refs,
    )
