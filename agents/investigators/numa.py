"""NUMA: automatic NUMA balancing, where each GPU, its interrupts and the RDMA NICs sit relative to the CPU sockets,
huge page reservations and zone reclaim."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rigaudit.agents.facts.gpus import Gpu, collect_gpus
from rigaudit.agents.facts.platform import Platform, detect_platform
from rigaudit.agents.findings import not_applicable, ok, problem, unknown
from rigaudit.agents.investigator import CheckDoc, Investigator
from rigaudit.agents.investigators._numa_devices import DeviceFacts, collect_devices, judge_irq_affinity, judge_nic_affinity
from rigaudit.agents.investigators._numa_memory import MemoryFacts, collect_memory, judge_hugepages, judge_zone_reclaim
from rigaudit.tools.model.finding import Area, CommandAction, Finding, Fix, SysctlAction, Where
from rigaudit.tools.probe import Probe, dir_ref, file_ref

AREA: Area = "numa"
CHECKS = (
    "numa.balancing",
    "numa.gpu_affinity",
    "numa.hugepages",
    "numa.zone_reclaim",
    "numa.irq_affinity",
    "numa.nic_affinity",
)
NODES = "/sys/devices/system/node"
BALANCING = "/proc/sys/kernel/numa_balancing"
SYSCTL_FILE = "/etc/sysctl.d/90-rigaudit-numa.conf"


@dataclass(frozen=True)
class NumaFacts:
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


def _where(platform: Platform) -> Where:
    """kernel.* sysctls and firmware are the host kernel's: inside a container they belong to the hypervisor."""
    return "hypervisor" if platform.in_container else "host"


def judge_balancing(facts: NumaFacts) -> Finding:
    check, title = "numa.balancing", "Automatic NUMA balancing"
    refs = (file_ref(BALANCING), dir_ref(NODES))
    if facts.balancing is None:
        if facts.balancing_error == "ENOENT":
            return not_applicable(check, AREA, title, "this kernel has no automatic NUMA balancing (no kernel.numa_balancing)")
        return unknown(check, AREA, title, f"{BALANCING} not readable: {facts.balancing_error}", evidence=refs[:1])
    value = facts.balancing
    if facts.nodes is not None and len(facts.nodes) <= 1:
        why = f"one NUMA node: nothing to balance (kernel.numa_balancing={value})"
        return not_applicable(check, AREA, title, why, evidence=refs)
    if value == "0":
        return ok(check, AREA, title, "kernel.numa_balancing=0", expected="kernel.numa_balancing=0", evidence=refs)
    if facts.nodes is None:
        why = f"kernel.numa_balancing={value}, but {NODES} cannot be listed to tell whether the host has several NUMA nodes"
        return unknown(check, AREA, title, why, evidence=refs)
    nodes = len(facts.nodes)
    fix = Fix(
        kind="runtime",
        where=_where(facts.platform),
        summary="Turn automatic NUMA balancing off: sysctl kernel.numa_balancing=0",
        actions=(SysctlAction(key="kernel.numa_balancing", value="0"),),
        risk="low",
        verify=f"cat {BALANCING}  -> 0",
        revert=f"sysctl -w kernel.numa_balancing={value}",
        persist=f"echo 'kernel.numa_balancing = 0' > {SYSCTL_FILE} && sysctl -p {SYSCTL_FILE}",
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
    )
    return problem(
        check,
        AREA,
        title,
        "medium",
        f"kernel.numa_balancing={value} on {nodes} NUMA nodes",
        "kernel.numa_balancing=0",
        explanation,
        fix,
        subjects=("kernel.numa_balancing",),
        evidence=refs,
    )


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


def judge_gpu_affinity(facts: NumaFacts) -> Finding:
    check, title = "numa.gpu_affinity", "GPU NUMA placement"
    if not facts.gpus:
        return unknown(check, AREA, title, facts.gpu_error or "no GPUs found", evidence=("dir:/sys/bus/pci/devices",))
    refs = tuple(r for g in facts.gpus for r in (file_ref(f"{g.sysfs}/numa_node"), file_ref(f"{g.sysfs}/local_cpulist")))
    placement = _placement(facts)
    caveat = (
        " Whether the server's workers actually run on their GPU's node cannot be seen without the server process "
        "(check its CPU affinity with taskset -p PID or numactl --show inside it)."
    )
    if all(g.numa_node is None for g in facts.gpus):
        return unknown(check, AREA, title, "numa_node of the GPUs is not readable", evidence=refs)
    nodes = len(facts.nodes) if facts.nodes is not None else None
    orphans = [g for g in facts.gpus if g.numa_node is not None and g.numa_node < 0]
    if not orphans or (nodes is not None and nodes <= 1):
        note = " (-1 means no proximity information, normal with one NUMA node)" if orphans else ""
        explanation = (
            "Each GPU is reported on the NUMA node of the CPU socket / root complex it hangs off; bind each GPU's worker "
            "(CPU threads and host memory) to that node to keep host-device copies and launches local." + caveat
        )
        return ok(
            check, AREA, title, placement + note, explanation=explanation, subjects=(g.label for g in facts.gpus), evidence=refs
        )
    if facts.platform.kind == "vm":
        why = (
            f"{len(orphans)} GPUs report numa_node -1 inside this VM ({placement}): the hypervisor does not pass PCI "
            "proximity to the guest. Pin the VM's vCPUs and memory to the GPUs' host node on the hypervisor." + caveat
        )
        return ok(check, AREA, title, placement, explanation=why, subjects=(g.label for g in orphans), evidence=refs)
    if nodes is None:
        why = f"{len(orphans)} GPUs report numa_node -1 and {NODES} cannot be listed to tell how many nodes exist"
        return unknown(check, AREA, title, why, evidence=refs)
    fix = Fix(
        kind="firmware",
        where=_where(facts.platform),
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
    explanation = (
        f"This {nodes}-node bare-metal host reports numa_node -1 for {len(orphans)} GPUs: the firmware did not tell the "
        "kernel which socket their PCIe root ports belong to. The driver, NCCL and frameworks then cannot place host "
        "buffers, pinned staging memory and CPU threads next to the GPU, so host-device copies and kernel launches may "
        "cross the socket interconnect (tens of percent lower H2D bandwidth and higher launch latency for the "
        "affected GPUs), and nvidia-smi topo -m shows no NUMA affinity." + caveat
    )
    return problem(
        check,
        AREA,
        title,
        "medium",
        placement,
        "every GPU on a NUMA node (numa_node >= 0)",
        explanation,
        fix,
        subjects=tuple(g.label for g in orphans),
        evidence=refs,
    )


def judge(facts: NumaFacts) -> list[Finding]:
    nodes = len(facts.nodes) if facts.nodes is not None else None
    return [
        judge_balancing(facts),
        judge_gpu_affinity(facts),
        judge_hugepages(facts.memory),
        judge_zone_reclaim(facts.memory, nodes),
        judge_irq_affinity(facts.devices, nodes),
        judge_nic_affinity(facts.devices, facts.gpus, nodes),
    ]


DOCS = {
    "numa.balancing": CheckDoc(
        "Automatic NUMA balancing",
        "`/proc/sys/kernel/numa_balancing`, `/sys/devices/system/node`",
        "`1` on a multi-node host",
        "`sysctl -w kernel.numa_balancing=0`, persisted in `/etc/sysctl.d`",
        ("runtime",),
    ),
    "numa.gpu_affinity": CheckDoc(
        "GPU NUMA placement",
        "each GPU's `numa_node`, `local_cpulist`; node CPU lists",
        "`numa_node` -1 on a multi-socket bare-metal host",
        "BIOS NUMA / SRAT settings; bind workers with numactl",
        ("firmware",),
    ),
    "numa.hugepages": CheckDoc(
        "Reserved huge pages",
        "`/proc/meminfo` (HugePages_*, Hugetlb), `/sys/kernel/mm/hugepages/*/{nr,free}_hugepages`, `/proc/cmdline`",
        "an unused hugetlbfs reservation of ≥ 5% of RAM (medium from 25%): memory lost to page cache, pinned buffers, KV offload",
        "`sysctl -w vm.nr_hugepages=0` (and other sizes through sysfs); drop `hugepages=` from the boot line",
        ("runtime",),
    ),
    "numa.zone_reclaim": CheckDoc(
        "Zone reclaim mode",
        "`/proc/sys/vm/zone_reclaim_mode`",
        "non-zero on a multi-node host (local reclaim of the model's page cache instead of remote pages)",
        "`sysctl -w vm.zone_reclaim_mode=0`",
        ("runtime",),
    ),
    "numa.irq_affinity": CheckDoc(
        "GPU interrupt affinity",
        "GPU IRQ from `/proc/driver/nvidia/gpus/BDF/information`, `/proc/irq/N/{effective_,smp_}affinity_list`, GPU "
        "`local_cpulist`, `systemctl is-active irqbalance`",
        "a GPU's interrupt served only on CPUs of another NUMA node",
        "write the GPU's local CPUs to `/proc/irq/N/smp_affinity_list`; ban the IRQ from irqbalance",
        ("runtime",),
    ),
    "numa.nic_affinity": CheckDoc(
        "RDMA NICs and GPUs on the same NUMA nodes",
        "`/sys/class/infiniband/*/device/numa_node`, GPUs' `numa_node`",
        "a NUMA node holds GPUs but no RDMA NIC (GPUDirect RDMA crosses the socket link); no RDMA NIC: not applicable",
        "place a NIC on every GPU socket",
        ("hardware",),
    ),
}


INVESTIGATOR = Investigator(
    area="numa",
    title="NUMA placement: balancing, GPUs, interrupts, NICs and memory",
    checks=CHECKS,
    collect=collect,
    judge=judge,
    docs=DOCS,
)
