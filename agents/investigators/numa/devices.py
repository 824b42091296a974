"""numa.irq_affinity and numa.nic_affinity: GPU interrupts and RDMA NICs against the GPUs' NUMA nodes."""

from __future__ import annotations

import re
from collections.abc import Mapping

from rigaudit.agents.check import Check
from rigaudit.agents.facts.cpulist import cpu_ranges, parse_cpulist
from rigaudit.agents.facts.gpus import Gpu
from rigaudit.agents.facts.nvlink_management import management_text, rdma_devices
from rigaudit.agents.facts.platform import Platform
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.facts.rdma import nic_bdf
from rigaudit.agents.investigators.numa import premises
from rigaudit.agents.investigators.numa.grace import grace_coupled
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import CommandResult
from rigaudit.tools.hosts.probe import Probe, command_ref, dir_ref, file_ref
from rigaudit.tools.pci import common_upstream
from rigaudit.tools.pci.sysfs import read_chain
from rigaudit.tools.schema.finding import Area, CommandAction, Finding, Fix, Where

AREA: Area = "numa"
INFINIBAND = "/sys/class/infiniband"
IRQBALANCE = ("systemctl", "is-active", "irqbalance")
_IRQ_LINE = r"(?m)^IRQ:\s*(\d+)"


class GpuIrq(Record):
    gpu: Gpu
    irq: int | None
    affinity: str | None
    """effective_affinity_list, else smp_affinity_list."""
    source: str | None
    """The file the affinity came from."""
    error: str | None


class Nic(Record):
    name: str
    numa_node: int | None
    error: str | None
    chain: tuple[str, ...] | None = None
    """The bridges above the NIC and the NIC, root port first (None: its sysfs path was not readable)."""


class DeviceFacts(Record):
    platform: Platform
    irqs: tuple[GpuIrq, ...]
    irqbalance: CommandResult
    nics: tuple[Nic, ...] | None
    """None when /sys/class/infiniband could not be listed for another reason than its absence."""
    nics_error: str | None
    gpu_chains: Mapping[str, tuple[str, ...]]
    """GPU BDF -> the bridges above it and the GPU (GPUs whose sysfs path was readable)."""
    management: tuple[str, ...] = ()
    """NVLink management ports left out of ``nics`` (agents.facts.nvlink_management)."""


def _int(text: str | None) -> int | None:
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


async def _gpu_irq(probe: Probe, gpu: Gpu) -> GpuIrq:
    info = await probe.text(f"/proc/driver/nvidia/gpus/{gpu.bdf}/information")
    match = re.search(_IRQ_LINE, info or "")
    if match is None:
        return GpuIrq(gpu, None, None, None, "no IRQ line in /proc/driver/nvidia/gpus/BDF/information")
    irq = int(match.group(1))
    for name in ("effective_affinity_list", "smp_affinity_list"):
        path = f"/proc/irq/{irq}/{name}"
        result = await probe.read(path)
        if result.ok and (text := result.text()) is not None and text.strip():
            return GpuIrq(gpu, irq, text.strip(), path, None)
        error = result.error
    return GpuIrq(gpu, irq, None, None, f"/proc/irq/{irq}: {error}")


async def collect_devices(probe: Probe, platform: Platform, gpus: tuple[Gpu, ...]) -> DeviceFacts:
    irqs = await probe.gather(*[lambda g=g: _gpu_irq(probe, g) for g in gpus])
    listing = await rdma_devices(probe)
    nics: tuple[Nic, ...] | None = None
    if listing.entries is not None or listing.error == "ENOENT":
        names = list(listing.entries or ())
        nodes = await probe.gather(*[lambda n=n: probe.read(f"{INFINIBAND}/{n}/device/numa_node") for n in names])
        chains = await probe.gather(*[lambda n=n: _nic_chain(probe, n) for n in names])
        nics = tuple(Nic(n, _int(r.text()), r.error, c) for n, r, c in zip(names, nodes, chains, strict=True))
    irqbalance = await probe.run(IRQBALANCE)
    gpu_chains = await probe.gather(*[lambda g=g: read_chain(probe, g.bdf) for g in gpus]) if nics else []
    chains_by_bdf = {c.bdf: c.chain for c in gpu_chains if c.chain}
    return DeviceFacts(platform, tuple(irqs), irqbalance, nics, listing.error, chains_by_bdf, listing.management)


async def _nic_chain(probe: Probe, name: str) -> tuple[str, ...] | None:
    bdf = await nic_bdf(probe, name)
    return (await read_chain(probe, bdf)).chain if bdf else None


def _shares_switch(gpu: tuple[str, ...], nic: tuple[str, ...]) -> bool:
    """Whether a GPU and a NIC meet below the root complex (one PCIe switch or bridge above both: PIX/PXB)."""
    return common_upstream(gpu, nic) is not None


def _where(platform: Platform) -> Where:
    return layer_where(platform, "kernel")


def _irqbalance_state(cmd: CommandResult) -> str:
    if cmd.error is None and cmd.stdout.strip():
        return cmd.stdout.strip().splitlines()[0]
    return "unknown" if cmd.error in (None, "not_recorded") else cmd.error


IRQ_AFFINITY_CHECK = Check(
    "numa.irq_affinity",
    "GPU interrupt affinity",
    reads=(
        "GPU IRQ from `/proc/driver/nvidia/gpus/BDF/information`, `/proc/irq/N/{effective_,smp_}affinity_list`, GPU "
        "`local_cpulist`, `systemctl is-active irqbalance`"
    ),
    problem="a GPU's interrupt served only on CPUs of another NUMA node",
    fix="write the GPU's local CPUs to `/proc/irq/N/smp_affinity_list`; ban the IRQ from irqbalance",
    kinds=("runtime",),
    premises=(premises.PLATFORM, premises.NUMA, premises.GPUS),
)


def judge_irq_affinity(f: DeviceFacts, nodes: int | None) -> Finding:
    if not f.irqs:
        return IRQ_AFFINITY_CHECK.not_applicable("no NVIDIA GPU on this host")
    if nodes is not None and nodes <= 1:
        return IRQ_AFFINITY_CHECK.not_applicable("one NUMA node: every CPU is local to every GPU")
    refs = [file_ref(r.source) for r in f.irqs if r.source] + [command_ref(IRQBALANCE)]
    read = [r for r in f.irqs if r.affinity is not None and r.gpu.local_cpulist]
    if not read:
        return IRQ_AFFINITY_CHECK.unknown(f"GPU interrupt affinity not readable ({_unread_irqs(f)})", evidence=refs[-1:])
    balance = _irqbalance_state(f.irqbalance)
    remote = []
    for row in read:
        local = set(parse_cpulist(row.gpu.local_cpulist) or [])
        cpus = set(parse_cpulist(row.affinity) or [])
        if local and cpus and not cpus & local:
            remote.append((row, cpus, local))
    if not remote:
        return IRQ_AFFINITY_CHECK.ok(
            f"interrupts of {len(read)}/{len(f.irqs)} GPUs are served on CPUs of their own NUMA node; irqbalance {balance}",
            expected="each GPU's interrupts on CPUs of its NUMA node",
            evidence=tuple(refs),
        )
    return IRQ_AFFINITY_CHECK.problem_at(
        "low",
        "; ".join(
            f"{row.gpu.label}: IRQ {row.irq} on {cpu_ranges(cpus)}, GPU local {cpu_ranges(local)}" for row, cpus, local in remote
        )
        + f"; irqbalance {balance}",
        "each GPU's interrupts on CPUs of its NUMA node",
        "A GPU interrupt (a completed copy or kernel the host waits on with blocking sync) served on the far socket "
        "adds a cross-socket wake-up to every such wait. The effect is small for servers that spin-wait on the GPU "
        "(the default of most frameworks) and larger for blocking synchronization; it matters most for the NICs.",
        _irq_fix(f, [row for row, _, _ in remote]),
        subjects=tuple(row.gpu.label for row, _, _ in remote),
        evidence=tuple(refs),
    )


def _unread_irqs(f: DeviceFacts) -> str:
    """Why no GPU's interrupt affinity was read: IRQ files the snapshot did not record, and the other errors."""
    missing = [r.irq for r in f.irqs if r.irq is not None and r.error and r.error.endswith("ENOENT")]
    others = sorted({r.error or "local_cpulist unreadable" for r in f.irqs if r.irq not in missing})
    shown = (
        [f"/proc/irq/N/*affinity_list of GPU IRQs {', '.join(map(str, missing))}: not recorded in this snapshot"]
        if missing
        else []
    )
    return "; ".join([*shown, *others[:3]])


def _irq_fix(f: DeviceFacts, remote: list[GpuIrq]) -> Fix:
    """Each remote GPU IRQ to its GPU's local CPUs, banned from irqbalance to keep it."""
    return Fix(
        kind="runtime",
        where=_where(f.platform),
        summary="Route each GPU's interrupt to CPUs of the GPU's NUMA node",
        actions=tuple(
            CommandAction(
                description=f"{row.gpu.label}: IRQ {row.irq} to its local CPUs",
                argv=("sh", "-c", f"echo {row.gpu.local_cpulist} > /proc/irq/{row.irq}/smp_affinity_list"),
            )
            for row in remote
        ),
        risk="low",
        verify="cat /proc/irq/N/effective_affinity_list of each GPU IRQ lies in the GPU's local_cpulist",
        revert="; ".join(f"echo {row.affinity} > /proc/irq/{row.irq}/smp_affinity_list" for row in remote),
        persist="irqbalance rewrites affinities: ban these IRQs from it (IRQBALANCE_ARGS=--banirq=N in /etc/default/irqbalance) "
        "and set them from a oneshot unit at boot",
    )


NIC_AFFINITY_CHECK = Check(
    "numa.nic_affinity",
    "RDMA NICs and GPUs on the same NUMA nodes",
    reads="`/sys/class/infiniband/*/device/numa_node` and PCI path, GPUs' `numa_node` and PCI path",
    problem="a NUMA node holds GPUs but no RDMA NIC (GPUDirect RDMA crosses the socket link), or the node's NICs share "
    "no PCIe switch with its GPUs (NCCL uses GPUDirect RDMA only up to PXB by default); no RDMA NIC: not applicable",
    fix="place a NIC on every GPU node, under the GPUs' PCIe switch; or NCCL_NET_GDR_LEVEL",
    kinds=("hardware",),
    premises=(premises.PLATFORM, premises.NUMA, premises.GPUS, premises.RDMA),
)


def judge_nic_affinity(f: DeviceFacts, gpus: tuple[Gpu, ...], nodes: int | None) -> Finding:
    refs = [dir_ref(INFINIBAND)]
    if f.nics is None:
        return NIC_AFFINITY_CHECK.unknown(f"{INFINIBAND} not readable: {f.nics_error}", evidence=refs)
    if not f.nics:
        why = f"no RDMA NIC ({INFINIBAND} has no entries{management_text(f.management)})"
        return NIC_AFFINITY_CHECK.not_applicable(why, evidence=refs)
    if nodes is not None and nodes <= 1:
        return NIC_AFFINITY_CHECK.not_applicable("one NUMA node: every NIC is local to every GPU", evidence=refs)
    refs += [file_ref(f"{INFINIBAND}/{n.name}/device/numa_node") for n in f.nics]
    refs += [file_ref(f"{g.sysfs}/numa_node") for g in gpus]
    nic_nodes = {n.numa_node for n in f.nics if n.numa_node is not None and n.numa_node >= 0}
    gpu_nodes = {g.numa_node for g in gpus if g.numa_node is not None and g.numa_node >= 0}
    if not nic_nodes or not gpu_nodes:
        what = "NICs" if not nic_nodes else "GPUs"
        return NIC_AFFINITY_CHECK.unknown(f"NUMA node of the {what} unknown (numa_node unreadable or -1)", evidence=refs)
    placement = ", ".join(f"{n.name} node {n.numa_node}" for n in f.nics)
    lonely = sorted(gpu_nodes - nic_nodes)
    if not lonely and (apart := _beyond_pxb(f, gpus)):
        return _gdr_off(f, placement, apart, refs)
    if not lonely:
        return NIC_AFFINITY_CHECK.ok(
            f"{placement}; GPUs on nodes {', '.join(map(str, sorted(gpu_nodes)))}: every GPU node has a local RDMA NIC",
            expected="an RDMA NIC on every NUMA node that holds GPUs",
            evidence=refs,
        )
    far = [g for g in gpus if g.numa_node in lonely]
    fix = Fix(
        kind="hardware",
        where=_where(f.platform),
        summary="Give every NUMA node with GPUs an RDMA NIC (move or add a NIC in a slot of that node)",
        actions=(
            CommandAction(
                description="place a NIC in a PCIe slot (ideally the same PCIe switch) of each NUMA node with GPUs: "
                "under NPS4 or SNC a node is a quadrant or half of one socket"
            ),
            CommandAction(
                description="until then NCCL can be told to use the far NIC with GPUDirect anyway: NCCL_NET_GDR_LEVEL=SYS "
                "(measure: it can be slower than staging through host memory)"
            ),
        ),
        risk="medium",
        verify="cat /sys/class/infiniband/*/device/numa_node covers every GPU node; nvidia-smi topo -m shows NIC PIX/PXB",
        revert="none",
        persist="hardware changes persist",
    )
    return NIC_AFFINITY_CHECK.problem_at(
        "low",
        f"{placement}; GPUs on node(s) {', '.join(map(str, lonely))} have no local RDMA NIC",
        "an RDMA NIC on every NUMA node that holds GPUs",
        "GPUs on a NUMA node without an RDMA NIC reach the network across the interconnect between nodes (the socket "
        "interconnect, or under NPS4/SNC the fabric between quadrants of one socket): NCCL sees that path as SYS, "
        "disables GPUDirect RDMA at that distance by default and stages through host memory, roughly halving inter-node "
        "bandwidth for "
        "those GPUs and adding latency. It matters for multi-node serving (pipeline or expert parallel across hosts); "
        "a single-node tensor-parallel server does not use the NICs.",
        fix,
        subjects=tuple(g.label for g in far),
        evidence=refs,
    )


def _beyond_pxb(f: DeviceFacts, gpus: tuple[Gpu, ...]) -> list[Gpu]:
    """GPUs with an RDMA NIC on their NUMA node but none under a PCIe switch they share (NCCL: PHB or NODE, beyond
    its default GPUDirect RDMA distance); empty when a path is unknown, or in a VM guest (its PCI tree is the
    hypervisor's invention: a cloud gives NCCL the physical one, e.g. aws-ofi-nccl's topology file)."""
    if f.platform.in_vm or f.nics is None or any(n.chain is None for n in f.nics):
        return []
    apart = []
    for gpu in gpus:
        if grace_coupled(gpu):
            continue  # NCCL reaches the CPU's NICs over NVLink-C2C with GPUDirect RDMA (NCCL_NET_GDR_C2C)
        chain = f.gpu_chains.get(gpu.bdf)
        if chain is None:
            return []
        local = [n for n in f.nics if n.numa_node == gpu.numa_node]
        if local and not any(n.chain and _shares_switch(chain, n.chain) for n in local):
            apart.append(gpu)
    return apart


def _gdr_off(f: DeviceFacts, placement: str, apart: list[Gpu], refs: list[str]) -> Finding:
    fix = Fix(
        kind="hardware",
        where=_where(f.platform),
        summary="Put an RDMA NIC under the PCIe switch of each GPU that talks to other nodes, or let NCCL use "
        "GPUDirect RDMA through the root complex",
        actions=(
            CommandAction(
                description="seat the NICs in the slots that share a PCIe switch with the GPUs (the server's GPU-NIC "
                "pairing in its manual): nvidia-smi topo -m then shows PIX or PXB between each GPU and its NIC"
            ),
            CommandAction(
                description="until then: NCCL_NET_GDR_LEVEL=PHB (NODE where the NIC hangs from another root complex "
                "of the node) in the servers' environment lets NCCL use GPUDirect RDMA at that distance; measure, "
                "through the root complex it can be slower than staging through host memory"
            ),
        ),
        risk="medium",
        verify="NCCL_DEBUG=INFO shows 'GPU Direct RDMA Enabled for GPU ... / HCA ...' for every GPU",
        revert="none",
        persist="hardware changes persist; the environment goes in the servers' unit or launch script",
    )
    refs = refs + [f"link:{INFINIBAND}/{n.name}/device" for n in f.nics or ()]
    return NIC_AFFINITY_CHECK.problem_at(
        "low",
        f"{placement}; every GPU node has an RDMA NIC, but {', '.join(g.label for g in apart)} share no PCIe switch "
        "with one (the path crosses the root complex: PHB, or NODE between root complexes)",
        "an RDMA NIC under the same PCIe switch as each GPU (PIX/PXB), or NCCL told to use the longer path",
        "NCCL decides GPUDirect RDMA by PCIe distance, not by NUMA node: by default it uses it only when the NIC and "
        "the GPU meet below the root complex (distance at most PXB, NCCL_NET_GDR_LEVEL; src/graph/paths.cc "
        "ncclTopoCheckGdr), so a NIC on the GPU's node but on another root port or root complex carries that GPU's "
        "inter-node traffic staged through host memory. It matters for multi-node serving (pipeline or expert "
        "parallel across hosts, KV transfer); a single-node tensor-parallel server does not use the NICs.",
        fix,
        subjects=tuple(g.label for g in apart),
        evidence=refs,
    )
