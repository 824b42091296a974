"""Why a GPU pair refuses peer-to-peer, read off the facts of this host rather than off NVML's code alone.

NVML's status codes say what the driver decided, not why: GPU_NOT_SUPPORTED is the card (GeForce) or a MIG slice,
DISABLED_BY_REGKEY a driver option, CHIPSET_NOT_SUPPORTED / IOH_TOPOLOGY_NOT_SUPPORTED / NOT_SUPPORTED the path: a
translating IOMMU, ACS redirect on the switch between them, a pair across the CPU interconnect of an Intel machine
(unsupported there), the emulated topology of a VM guest, or a platform the driver does not trust for P2P.
"""

from __future__ import annotations

from typing import Literal

from rigaudit.agents.facts.boot_line import BootLine
from rigaudit.agents.facts.p2p_context import P2pContext
from rigaudit.agents.facts.pci_paths import PciPaths
from rigaudit.agents.facts.platform import FixTarget, Platform, fix_where
from rigaudit.tools.core.record import Record
from rigaudit.tools.schema.finding import Action, CommandAction, Edge, Fix, FixKind, Severity

Cause = Literal[
    "model",
    "driver",
    "vgpu",
    "mig",
    "regkey",
    "gpu_mode",
    "fabric",
    "nvlink_fabric",
    "hypervisor",
    "iommu",
    "acs",
    "topology",
    "platform",
]
SYS = 50
"""nvmlGpuTopologyLevel_t SYSTEM: the pair's path crosses the CPU interconnect (QPI/UPI, xGMI)."""


class PairView(Record):
    a: int
    b: int
    bdf_a: str
    bdf_b: str
    codes: frozenset[int]
    ancestor: int | None
    nvlink: bool


class Context(Record):
    platform: Platform
    p2p: P2pContext
    paths: PciPaths
    cpu_vendor: str | None
    boot: BootLine
    socket_pattern: bool = False
    """Every pair across the CPU interconnect refuses P2P and every pair within a socket allows it."""


def cause(pair: PairView, c: Context) -> Cause:
    if c.p2p.driver_refuses:
        return "driver"
    if c.p2p.support == "no" or (c.p2p.support == "nvlink_bridge" and not pair.nvlink):
        return "model"
    if (pair.a in c.p2p.vgpu or pair.b in c.p2p.vgpu) and not pair.nvlink:
        return "vgpu"
    if pair.a in c.p2p.mig_on or pair.b in c.p2p.mig_on:
        return "mig"
    if 4 in pair.codes:
        return "regkey"
    if pair.codes == {2}:
        return "gpu_mode"
    if pair.a in c.p2p.fabric_pending or pair.b in c.p2p.fabric_pending:
        # An NVLink fabric not completed decides, whatever the PCIe path (a VM's flat guest bus included).
        return "fabric"
    if pair.nvlink:
        return "nvlink_fabric"
    if c.platform.in_vm:
        return "hypervisor"
    if pair.ancestor == SYS and (c.cpu_vendor == "GenuineIntel" or c.socket_pattern):
        return "topology"  # refused across the CPU interconnect whatever the IOMMU or ACS
    if c.paths.translated(pair.bdf_a) or c.paths.translated(pair.bdf_b):
        return "iommu"
    if c.paths.redirect_between(pair.bdf_a, pair.bdf_b):
        return "acs"
    return "platform"


SEVERITY: dict[Cause, Severity | None] = {
    "model": None,
    "driver": None,
    "vgpu": "medium",
    "mig": None,
    "regkey": "high",
    "gpu_mode": "medium",
    "fabric": "critical",
    "nvlink_fabric": "high",
    "hypervisor": "high",
    "iommu": "high",
    "acs": "high",
    "topology": "low",
    "platform": "high",
}
"""None: not a fault (the card or MIG has no P2P by design). Low: a topology fact to place TP groups by. Critical: the
fabric's outage, as driver.fabricmanager grades it (CUDA refuses work on GPUs whose fabric is not completed)."""

WHY: dict[Cause, str] = {
    "model": "these GPUs have no PCIe peer-to-peer (a property of the product line)",
    "driver": "the driver refuses PCIe peer-to-peer on these boards (GPU_NOT_SUPPORTED on every pair, no MIG, no "
    "vGPU): what the driver offers for this product, not a setting of this host (NVIDIA: cudaDeviceCanAccessPeer is "
    "the final word)",
    "vgpu": "these GPUs are NVIDIA vGPUs: vGPU offers no peer-to-peer over PCIe, only over NVLink between time-sliced "
    "C-series vGPUs that own a whole GPU's framebuffer (NVIDIA AI Enterprise, Peer-To-Peer CUDA Transfers)",
    "mig": "MIG is on: there is no peer-to-peer between MIG slices",
    "regkey": "a driver registry key (NVreg_RegistryDwords) disables peer-to-peer",
    "gpu_mode": "the driver says the GPU itself refuses peer-to-peer (GPU_NOT_SUPPORTED) although the model supports "
    "it: a vGPU profile or a mode of the board (nvidia-smi -q: Virtualization Mode, MIG) decides",
    "fabric": "NVML reports the GPUs' NVLink fabric not completed: the NVLink fabric is not up, its fabric manager has not "
    "programmed it (see driver.fabricmanager, which reads why and where it runs: this host, or a rack's NVLink switch "
    "trays), and until it has CUDA refuses work on these "
    "GPUs (cudaErrorSystemNotReady) and no pair peers over any path",
    "nvlink_fabric": "the pair is joined by NVLink yet P2P is refused: the NVLink fabric is not up (NVSwitch systems "
    "need nvidia-fabricmanager running, see driver.fabricmanager; bridged pairs need their bridge seated)",
    "hypervisor": "inside a VM guest the PCIe topology is the hypervisor's emulation: the guest driver allows P2P only "
    "between GPUs the hypervisor declares peers (QEMU's x-nv-gpudirect-clique on the vfio-pci devices), behind a "
    "physical path with passthrough IOMMU and no ACS redirect on the host",
    "iommu": "the IOMMU translates the GPUs' DMA (see kernel.iommu): NVIDIA does not support PCIe P2P through it",
    "acs": "ACS P2P redirect on the switch ports between them sends peer traffic to the root complex (see pcie.acs)",
    "topology": "the pair crosses the CPU interconnect, where the platform does not support PCIe P2P (Intel's "
    "UPI): a property of the machine, not a setting",
    "platform": "the path between them (the root complex or the firmware's PCIe settings) is not one the driver trusts "
    "for P2P: check the BIOS (ACS, 'PCIe peer-to-peer', IOMMU) and the platform's support",
}
PROPERTIES: frozenset[Cause] = frozenset({"model", "driver", "topology"})
"""Causes that are properties of the machine or the product, not settings: the fix works around them."""
RANK: dict[Cause, int] = {
    "vgpu": 0,
    "driver": 8,
    "regkey": 0,
    "gpu_mode": 0,
    "fabric": 0,
    "nvlink_fabric": 1,
    "iommu": 2,
    "acs": 3,
    "hypervisor": 4,
    "platform": 5,
    "topology": 6,
    "mig": 7,
    "model": 8,
}


_STEPS: dict[Cause, tuple[str, FixKind | None]] = {
    "regkey": (
        "remove the P2P-disabling NVreg_RegistryDwords entry from /etc/modprobe.d/*.conf, rebuild the initramfs and reboot",
        None,
    ),
    "gpu_mode": (
        "nvidia-smi -q | grep -A3 -e Virtualization -e 'MIG Mode': a vGPU profile without P2P or "
        "a board mode refuses peers; use a profile or mode that allows P2P",
        None,
    ),
    "fabric": (
        "see driver.fabricmanager: its fix, chosen from the fabric manager's own reason, "
        "completes the fabric; these pairs peer once NVML reports it completed (nvidia-smi -q | grep -A2 "
        "Fabric -> State: Completed)",
        "runtime",
    ),
    "nvlink_fabric": (
        "NVSwitch system: start nvidia-fabricmanager (of exactly the driver's version) with the "
        "GPUs idle; bridged pairs: reseat the NVLink bridge",
        "runtime",
    ),
    "acs": ("clear ACS redirect on the switch ports between the GPUs (pcie.acs)", None),
    "platform": (
        "BIOS: enable 'PCIe peer-to-peer' / disable ACS where offered, IOMMU off or passthrough; "
        "check the platform's P2P support with the server vendor",
        "firmware",
    ),
}
"""A cause's step in words, and the fix kind it makes the fix (None: it leaves the kind as it is)."""


def _hypervisor_words(c: Context, names: str) -> str:
    """Where the hypervisor decides which passed-through GPUs peer: the provider's in a cloud, else its admin's."""
    if c.platform.cloud:
        return (
            f"this is a {c.platform.cloud} VM: the provider's hypervisor decides which passed-through "
            f"GPUs may peer ({names}); for P2P choose an instance type whose GPUs peer (NVLink / P2P-enabled), "
            "or keep tensor parallelism on shared memory"
        )
    return (
        f"on the hypervisor, for the GPUs passed to this VM ({names}): put them behind one "
        "virtual PCIe root port or switch and give their vfio-pci devices one x-nv-gpudirect-clique id "
        "(libvirt: <qemu:arg value='-set'/> device.hostdevN.x-nv-gpudirect-clique=0; Proxmox: args: in "
        "the VM config); on the host itself: iommu=pt and no ACS redirect between them. In a cloud: an "
        "instance type whose GPUs peer (NVLink / P2P-enabled)"
    )


def _step(k: Cause, c: Context, names: str, alone: bool) -> tuple[list[Action], FixKind | None]:
    """One cause's actions, and the fix kind it makes the fix (None: it leaves it); ``alone``: the only cause."""
    if k in _STEPS:
        words, kind = _STEPS[k]
        return [CommandAction(description=words)], kind
    if k == "vgpu":
        words = (
            f"on the hypervisor ({names}): for tensor parallelism over PCIe P2P pass the GPUs through "
            "(vfio-pci) instead of vGPU; with vGPU, only boards joined by NVLink with full-framebuffer "
            "C-series profiles peer; or keep each server on one vGPU"
        )
        return [CommandAction(description=words)], "restart"
    if k == "iommu":
        return list(c.boot.add("iommu=pt")), None
    if k == "hypervisor":
        return [CommandAction(description=_hypervisor_words(c, names))], "restart"
    if k == "topology":
        words = (
            "keep each tensor-parallel group within one CPU socket (CUDA_VISIBLE_DEVICES of the "
            "GPUs on one NUMA node), or accept NCCL's host-memory path across sockets"
        )
        return [CommandAction(description=words)], "restart" if alone else None
    return [], None


def _actions(kinds: list[Cause], c: Context, names: str) -> tuple[tuple[Action, ...], FixKind]:
    actions: list[Action] = []
    kind: FixKind = "reboot"
    for k in kinds:
        step, step_kind = _step(k, c, names, len(kinds) == 1)
        actions += step
        kind = step_kind or kind
    return tuple(actions), kind


_TARGET: dict[Cause, FixTarget] = {
    "vgpu": "vm_definition",
    "hypervisor": "vm_definition",
    "platform": "firmware",
    "topology": "workload",
    "fabric": "gpu_driver",
    "nvlink_fabric": "gpu_driver",
    "gpu_mode": "gpu_driver",
}


RESOLVED_BY: dict[Cause, str] = {
    "iommu": "kernel.iommu",
    "acs": "pcie.acs",
    "fabric": "driver.fabricmanager",
    "nvlink_fabric": "driver.fabricmanager",
}
"""The check whose fix lets the pairs of a cause through: p2p.status is moot after it (only if every cause found
has one; a pair refused for another reason keeps the step of its own)."""


def moot_edges(kinds: list[Cause]) -> tuple[Edge, ...]:
    """``moot_after`` each check that fixes one of ``kinds``, when every cause found is one such fix's."""
    checks = [RESOLVED_BY.get(k) for k in sorted(set(kinds), key=lambda k: RANK[k])]
    if not checks or None in checks:
        return ()
    return tuple(Edge(kind="moot_after", check=c, why="the pairs it refuses are refused for that cause") for c in checks if c)


def fix_for(kinds: list[Cause], c: Context, names: str) -> Fix:
    strongest = min(kinds, key=lambda k: RANK[k])
    actions, kind = _actions(sorted(set(kinds), key=lambda k: RANK[k]), c, names)
    target: FixTarget = _TARGET.get(strongest, "kernel")
    others = sorted(set(kinds) - {"fabric"}, key=lambda k: RANK[k])
    causes = "; ".join(WHY[k].split(":")[0] for k in others)
    summary = "Let peer-to-peer through: " + causes
    if others and set(others) <= PROPERTIES:
        summary = f"No setting lets these pairs peer ({causes}): place tensor-parallel groups on GPUs that can"
    if "fabric" in kinds:
        fabric = "The NVLink fabric is not completed: see driver.fabricmanager (its fix lets these pairs peer)"
        summary = fabric + ("; then " + summary[0].lower() + summary[1:] if others else "")
    return Fix(
        kind=kind,
        where=fix_where(c.platform, target),
        summary=summary,
        actions=actions,
        risk="medium",
        verify="nvidia-smi topo -p2p r and -p2p w show OK for every pair; then `rigaudit bench p2p`",
        revert="restore the previous settings",
        persist="the boot line, BIOS and VM definition changes persist",
        edges=moot_edges(kinds),
    )
