"""numa.gpu_affinity: does each GPU know its NUMA node on a multi-socket host?"""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.gpus import Gpu
from rigaudit.agents.investigators.numa import premises
from rigaudit.agents.investigators.numa.facts import NODES, NumaFacts, fix_where
from rigaudit.agents.investigators.numa.server_binding import judge_binding
from rigaudit.tools.hosts.probe import file_ref
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix


def _placement(facts: NumaFacts) -> str:
    by_node: dict[int | None, list[Gpu]] = {}
    for gpu in facts.gpus:
        by_node.setdefault(gpu.numa_node, []).append(gpu)
    parts = []
    for node in sorted(by_node, key=lambda n: (n is None, n if n is not None else 0)):
        gpus = by_node[node]
        names = ", ".join(f"GPU{g.index}" if g.index is not None else g.bdf for g in gpus)
        cpus = facts.node_cpus.get(node) if node is not None and node >= 0 else None
        cpus = cpus or gpus[0].local_cpulist
        label = "unreadable" if node is None else f"node {node}"
        parts.append(f"{label}: {names}" + (f" (CPUs {cpus})" if cpus else ""))
    return "; ".join(parts)


GPU_AFFINITY_CHECK = Check(
    "numa.gpu_affinity",
    "GPU NUMA placement",
    reads="each GPU's `numa_node`, `local_cpulist`; node CPU lists; each server's GPUs (NVML processes, "
    "`CUDA_VISIBLE_DEVICES`) and its `Cpus_allowed_list` / `Mems_allowed_list`",
    problem="`numa_node` -1 on a multi-socket bare-metal host; a server bound wholly to other NUMA nodes than its GPUs'",
    fix="BIOS NUMA / SRAT settings; bind each server to its GPUs' nodes (numactl, the unit's `CPUAffinity=`/"
    "`NUMAPolicy=`, the container's `--cpuset-cpus`/`--cpuset-mems`)",
    kinds=("firmware", "restart"),
    premises=(premises.PLATFORM, premises.NUMA, premises.GPUS, premises.SERVERS),
)


def judge_gpu_affinity(facts: NumaFacts) -> Finding:
    if not facts.gpus:
        return GPU_AFFINITY_CHECK.unknown(facts.gpu_error or "no GPUs found", evidence=("dir:/sys/bus/pci/devices",))
    refs = tuple(r for g in facts.gpus for r in (file_ref(f"{g.sysfs}/numa_node"), file_ref(f"{g.sysfs}/local_cpulist")))
    placement = _placement(facts)
    if all(g.numa_node is None for g in facts.gpus):
        return GPU_AFFINITY_CHECK.unknown("numa_node of the GPUs is not readable", evidence=refs)
    nodes = len(facts.nodes) if facts.nodes is not None else None
    orphans = [g for g in facts.gpus if g.numa_node is not None and g.numa_node < 0]
    if nodes is not None and nodes <= 1:
        note = " (-1 means no proximity information, normal with one NUMA node)" if orphans else ""
        why = "One NUMA node: every CPU and all host memory are equally near every GPU; no binding can help."
        return GPU_AFFINITY_CHECK.ok(placement + note, explanation=why, subjects=(g.label for g in facts.gpus), evidence=refs)
    if not orphans:
        return judge_binding(GPU_AFFINITY_CHECK, facts, placement, refs)
    if facts.platform.kind == "vm":
        why = (
            f"{len(orphans)} GPUs report numa_node -1 inside this VM ({placement}): the hypervisor does not pass PCI "
            "proximity to the guest. Pin the VM's vCPUs and memory to the GPUs' host node on the hypervisor; inside the "
            "guest the servers' binding to a node cannot be judged."
        )
        return GPU_AFFINITY_CHECK.ok(placement, explanation=why, subjects=(g.label for g in orphans), evidence=refs)
    if nodes is None:
        why = f"{len(orphans)} GPUs report numa_node -1 and {NODES} cannot be listed to tell how many nodes exist"
        return GPU_AFFINITY_CHECK.unknown(why, evidence=refs)
    explanation = (
        f"This {nodes}-node bare-metal host reports numa_node -1 for {len(orphans)} GPUs: the firmware did not tell the "
        "kernel which socket their PCIe root ports belong to. The driver, NCCL and frameworks then cannot place host "
        "buffers, pinned staging memory and CPU threads next to the GPU, so host-device copies and kernel launches may "
        "cross the socket interconnect (tens of percent lower H2D bandwidth and higher launch latency for the "
        "affected GPUs), and nvidia-smi topo -m shows no NUMA affinity. Until it does, the servers' binding to their "
        "GPUs' nodes cannot be judged."
    )
    return GPU_AFFINITY_CHECK.problem_at(
        "medium",
        placement,
        "every GPU on a NUMA node (numa_node >= 0)",
        explanation,
        _proximity_fix(facts),
        subjects=tuple(g.label for g in orphans),
        evidence=refs,
    )


def _proximity_fix(facts: NumaFacts) -> Fix:
    """Firmware that describes PCI proximity (SRAT/_PXM), and binding the workers by hand until then."""
    return Fix(
        kind="firmware",
        where=fix_where(facts.platform, "firmware"),
        summary="Make the firmware describe PCI proximity (ACPI SRAT/_PXM): BIOS update or NUMA settings, then reboot",
        actions=(
            CommandAction(
                description="BIOS/UEFI: enable NUMA / ACPI SRAT (AMD: NPS1 or higher, not socket-interleaved memory; Intel: "
                "'NUMA' enabled, SNC as wanted), update to the latest BIOS (missing _PXM on PCI root bridges is a "
                "firmware bug), then reboot"
            ),
            CommandAction(
                description="Until then, bind each GPU's worker by hand to the node its slot is wired to (restart the server)",
                argv=("numactl", "--cpunodebind=N", "--membind=N", "<worker command>"),
            ),
        ),
        risk="low",
        verify="cat /sys/bus/pci/devices/<GPU BDF>/numa_node  -> 0..N-1 for every GPU; nvidia-smi topo -m shows NUMA Affinity",
        revert="restore the previous BIOS settings",
    )
