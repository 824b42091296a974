"""numa.balancing: automatic NUMA balancing on a multi-node host."""

from __future__ import annotations

import re

from rigaudit.agents.check import Check
from rigaudit.agents.investigators.numa import premises
from rigaudit.agents.investigators.numa.facts import BALANCING, NODES, NumaFacts, fix_where
from rigaudit.agents.persist import sysctl_persist
from rigaudit.tools.hosts.probe import dir_ref, file_ref
from rigaudit.tools.schema.finding import Finding, Fix, SysctlAction

BALANCING_CHECK = Check(
    "numa.balancing",
    "Automatic NUMA balancing",
    reads="`/proc/sys/kernel/numa_balancing`, `/sys/devices/system/node`",
    problem="`1` on a multi-node host",
    fix="`sysctl -w kernel.numa_balancing=0`, persisted in `/etc/sysctl.d`",
    kinds=("runtime",),
    premises=(premises.PLATFORM, premises.NUMA),
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
    nodes = len(facts.nodes)
    gpu_nodes = _gpu_memory_nodes(facts)
    summary = "Turn automatic NUMA balancing off: sysctl kernel.numa_balancing=0"
    if gpu_nodes:
        summary += " (the same as the boot option numa_balancing=disable that NVIDIA's Grace guide sets)"
    fix = Fix(
        kind="runtime",
        where=fix_where(facts.platform),
        summary=summary,
        actions=(SysctlAction(key="kernel.numa_balancing", value="0"),),
        risk="low",
        verify=f"cat {BALANCING}  -> 0",
        revert=f"sysctl -w kernel.numa_balancing={value}",
        persist=sysctl_persist("kernel.numa_balancing", "0"),
    )
    explanation = (
        f"This host has {nodes} NUMA nodes and the kernel's automatic NUMA balancing is on. It periodically unmaps "
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
        f"kernel.numa_balancing={value} on {nodes} NUMA nodes",
        "kernel.numa_balancing=0",
        explanation,
        fix,
        subjects=("kernel.numa_balancing",),
        evidence=refs,
    )
