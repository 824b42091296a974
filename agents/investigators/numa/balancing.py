"""numa.balancing: automatic NUMA balancing on a multi-node host."""

from __future__ import annotations

import re

from rigaudit.agents.check import Check
from rigaudit.agents.facts.cpufreq_drivers import parse_kernel_version
from rigaudit.agents.facts.cpulist import cpu_ranges, parse_cpulist
from rigaudit.agents.facts.numbers import count
from rigaudit.agents.investigators.numa import premises
from rigaudit.agents.investigators.numa.facts import BALANCING, NODES, TIERS, NumaFacts, fix_where
from rigaudit.agents.persist import sysctl_persist
from rigaudit.tools.hosts.probe import dir_ref, file_ref
from rigaudit.tools.schema.finding import Finding, Fix, SysctlAction

BALANCING_CHECK = Check(
    "numa.balancing",
    "Automatic NUMA balancing",
    reads="`/proc/sys/kernel/numa_balancing`, `/sys/devices/system/node`, `/sys/devices/virtual/memory_tiering`, "
    "the kernel's release",
    problem="bit 1 (NUMA_BALANCING_NORMAL) on a multi-node host; bit 2 (memory tiering) with a lower memory tier",
    fix="`sysctl -w kernel.numa_balancing=0`, persisted in `/etc/sysctl.d` (an image-based OS: its machine config or settings)",
    kinds=("runtime",),
    premises=(premises.PLATFORM, premises.NUMA, premises.OS),
)


GRACE_GUIDE = "https://nvidia.github.io/grace-cpu-benchmarking-guide/platform/index.html"
GRACE_GPUS = r"\bG[HB]\d00\b"
"""GPUs of a Grace superchip (GH200, GB200, GB300): their memory is on NVLink-C2C, a CPU-less NUMA node to Linux."""


def _gpu_memory_nodes(facts: NumaFacts) -> list[int]:
    """The CPU-less NUMA nodes that hold a Grace superchip's GPU memory (none elsewhere)."""
    if not any(re.search(GRACE_GPUS, g.name or "") for g in facts.gpus):
        return []
    return sorted(n for n, cpus in facts.node_cpus.items() if not cpus)


def _grace_reason(nodes: list[int]) -> str:
    names = ", ".join(str(n) for n in nodes)
    return (
        f" Here node{'s' if len(nodes) > 1 else ''} {names} (no CPU) hold{'' if len(nodes) > 1 else 's'} the GPU "
        "memory of a Grace superchip (over NVLink-C2C): the balancing also samples and migrates the server's pages "
        "between CPU memory and GPU memory behind its back. NVIDIA's Grace guide boots with numa_balancing=disable "
        f"({GRACE_GUIDE})."
    )


TIERING_KERNEL = (5, 18, 0)
"""Since Linux 5.18 the value is a bit mask: 1 NUMA_BALANCING_NORMAL, 2 NUMA_BALANCING_MEMORY_TIERING
(Documentation/admin-guide/sysctl/kernel.rst); before, only 0 or 1."""
KERNEL_DOC = "https://docs.kernel.org/admin-guide/sysctl/kernel.html#numa-balancing"


def _modes(value: str, release: str | None) -> tuple[bool, bool]:
    """(NORMAL, MEMORY_TIERING) of ``value`` on this kernel; a value that is no number reads as NORMAL."""
    if (bits := count(value)) is None:
        return True, False
    version = parse_kernel_version(release)
    if version is not None and version < TIERING_KERNEL:
        return bits != 0, False
    return bool(bits & 1), bool(bits & 2)


def _lower_tier(facts: NumaFacts) -> tuple[list[int], str]:
    """The nodes below the top memory tier, and how they were read: the kernel's tiers (6.1+), else the nodes
    with memory and no CPU (the top tier of 5.18-6.0 is the nodes with CPUs)."""
    if facts.tiers:
        top = min(facts.tiers)
        lower = sorted({n for t, nodes in facts.tiers.items() if t != top for n in parse_cpulist(nodes) or ()})
        shown = ", ".join(f"memory_tier{t}: nodes {nodes}" for t, nodes in sorted(facts.tiers.items()))
        return lower, f"{TIERS}: {shown}"
    cpuless = sorted(n for n in facts.nodes or () if not facts.node_cpus.get(n))
    return cpuless, f"nodes without CPUs: {cpu_ranges(cpuless).removeprefix('cpu')}" if cpuless else "every node has CPUs"


def judge_balancing(facts: NumaFacts) -> Finding:
    refs = (file_ref(BALANCING), dir_ref(NODES))
    if facts.balancing is None:
        if facts.balancing_error == "ENOENT":
            return BALANCING_CHECK.not_applicable("this kernel has no automatic NUMA balancing (no kernel.numa_balancing)")
        return BALANCING_CHECK.unknown(f"{BALANCING} not readable: {facts.balancing_error}", evidence=refs[:1])
    value = facts.balancing
    if facts.nodes is not None and len(facts.nodes) <= 1:
        why = f"one NUMA node: nothing to balance (kernel.numa_balancing={value})"
        return BALANCING_CHECK.not_applicable(why, evidence=refs)
    if value == "0":
        return BALANCING_CHECK.ok("kernel.numa_balancing=0", expected="kernel.numa_balancing=0", evidence=refs)
    if facts.nodes is None:
        why = f"kernel.numa_balancing={value}, but {NODES} cannot be listed to tell whether the host has several NUMA nodes"
        return BALANCING_CHECK.unknown(why, evidence=refs)
    gpu_nodes = _gpu_memory_nodes(facts)
    normal, tiering = _modes(value, facts.release)
    lower, tiers_read = _lower_tier(facts) if tiering and not normal else ([], "")
    if not normal and (not tiering or not lower):
        return _nothing_scanned(value, tiering=tiering, tiers_read=tiers_read, refs=refs)
    fix = _balancing_fix(facts, value, gpu_nodes)
    if not normal:
        return _tiering_problem(value, lower, tiers_read, gpu_nodes, fix, refs)
    explanation = (
        f"This host has {len(facts.nodes)} NUMA nodes and the kernel's automatic NUMA balancing is on "
        "(NUMA_BALANCING_NORMAL). It periodically unmaps "
        "ranges of every task's memory to sample accesses through NUMA hinting faults, and migrates pages (or moves "
        "tasks) toward the node that touches them. For an inference server that is pure overhead: the worker "
        "processes driving the GPUs take page faults and migration stalls at random moments in the decode loop, "
        "pinned (cudaHostAlloc) buffers cannot move anyway, and NUMA placement is better decided once, by binding "
        "each GPU's worker to the GPU's node (see numa.gpu_affinity). The usual effect is latency jitter and a few "
        "percent of throughput; vendors' inference and HPC tuning guides turn it off. The change is instant and "
        "harmless to revert."
    ) + (_grace_reason(gpu_nodes) if gpu_nodes else "")
    return BALANCING_CHECK.problem_at(
        "medium",
        f"kernel.numa_balancing={value} on {len(facts.nodes)} NUMA nodes",
        "kernel.numa_balancing=0",
        explanation,
        fix,
        subjects=("kernel.numa_balancing",),
        evidence=refs,
    )


def _nothing_scanned(value: str, *, tiering: bool, tiers_read: str, refs: tuple[str, ...]) -> Finding:
    """Balancing on, but in a mode that scans no page here: tiering with no lower tier, or neither mode's bit."""
    why = (
        f"kernel.numa_balancing={value} is memory tiering only (bit 2, NUMA_BALANCING_MEMORY_TIERING, Linux 5.18+): "
        "the kernel scans and promotes only pages on lower memory tiers, never those on top-tier (DRAM) nodes "
        f"({KERNEL_DOC}). Here there is no lower tier ({tiers_read}), so no page of the servers is scanned."
    )
    if not tiering:
        why = f"kernel.numa_balancing={value} sets neither NUMA_BALANCING_NORMAL (1) nor memory tiering (2)"
    observed = f"kernel.numa_balancing={value} (memory tiering only; no lower memory tier)" if tiering else why
    return BALANCING_CHECK.ok(observed, expected="kernel.numa_balancing=0", explanation=why, evidence=(*refs, dir_ref(TIERS)))


def _balancing_fix(facts: NumaFacts, value: str, gpu_nodes: list[int]) -> Fix:
    summary = "Turn automatic NUMA balancing off: sysctl kernel.numa_balancing=0"
    if gpu_nodes:
        summary += " (the same as the boot option numa_balancing=disable that NVIDIA's Grace guide sets)"
    return Fix(
        kind="runtime",
        where=fix_where(facts.platform),
        summary=summary,
        actions=(SysctlAction(key="kernel.numa_balancing", value="0"),),
        risk="low",
        verify=f"cat {BALANCING}  -> 0",
        revert=f"sysctl -w kernel.numa_balancing={value}",
        persist=sysctl_persist("kernel.numa_balancing", "0", facts.platform.image),
    )


def _tiering_problem(
    value: str, lower: list[int], tiers_read: str, gpu_nodes: list[int], fix: Fix, refs: tuple[str, ...]
) -> Finding:
    """Memory tiering with a lower tier: the servers' host memory there takes hinting faults and migrations."""
    plural = "s" if len(lower) > 1 else ""
    shown = cpu_ranges(lower).removeprefix("cpu")
    explanation = (
        f"kernel.numa_balancing={value} is memory tiering (bit 2, NUMA_BALANCING_MEMORY_TIERING): the kernel does "
        f"not scan top-tier (DRAM) pages, but it samples every task's pages on the lower tier (node{plural} "
        f"{shown}; {tiers_read}) through NUMA hinting faults and promotes the hot ones to the top tier ({KERNEL_DOC}). "
        "A server's host memory placed there (pinned buffers, the CPU side of a KV cache offload) takes hinting "
        "faults and migration stalls at random moments in the decode loop. Unless the slow tier is meant to be "
        "managed this way, turn it off and place memory by binding (numactl --membind)."
    ) + (_grace_reason(gpu_nodes) if gpu_nodes else "")
    return BALANCING_CHECK.problem_at(
        "medium",
        f"kernel.numa_balancing={value} (memory tiering) with a lower memory tier on node{plural} {shown}",
        "kernel.numa_balancing=0",
        explanation,
        fix,
        subjects=("kernel.numa_balancing",),
        evidence=(*refs, dir_ref(TIERS)),
    )
