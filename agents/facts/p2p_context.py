"""What GPU-to-GPU traffic on this host actually crosses, for the rules that judge IOMMU, ACS, P2P and NCCL overrides.

An IOMMU that translates DMA, or ACS redirect on a PCIe switch, hurts GPU peer-to-peer only where peers talk over
PCIe: not between GPUs joined by NVLink (an NVSwitch fabric, or bridges), not on GeForce cards (no PCIe P2P at all),
not between MIG slices (no P2P between them), not on a host with a single GPU. PCIe still carries GPUDirect RDMA
between a NIC and a GPU under one switch, and host-to-device copies.
"""

from __future__ import annotations

from itertools import combinations

from rigaudit.agents.facts.gpu_models import P2pSupport, p2p_support, short_name
from rigaudit.agents.facts.gpus import PCI_DEVICES, Gpu, GpuInventory, collect_gpus
from rigaudit.agents.facts.peer_groups import Groups, server_groups
from rigaudit.agents.facts.processes import find_servers
from rigaudit.agents.facts.rdma import RdmaFacts, collect_rdma
from rigaudit.agents.facts.serving import largest_tp
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import NvmlResult
from rigaudit.tools.hosts.probe import Probe, nvml_ref
from rigaudit.tools.pci.sysfs import read_driver

P2P_READ_CAPS = 0
"""NVML_P2P_CAPS_INDEX_READ: ``nvmlDeviceGetP2PStatus(a, b, 0)`` is OK when the driver lets the pair peer."""
P2P_NVLINK_CAPS = 2
"""NVML_P2P_CAPS_INDEX_NVLINK: ``nvmlDeviceGetP2PStatus(a, b, 2)`` is OK when the pair peers over NVLink."""
FABRIC_COMPLETED = 3
"""NVML_GPU_FABRIC_STATE_COMPLETED: the fabric manager has programmed this GPU's NVSwitch fabric."""
P2P_GPU_NOT_SUPPORTED = 2
"""NVML_P2P_STATUS_GPU_NOT_SUPPORTED: the driver refuses P2P for the GPU itself (GNS in ``nvidia-smi topo -p2p``)."""
VIRTUALIZATION_VGPU = 2
"""NVML_GPU_VIRTUALIZATION_MODE_VGPU: the device is an NVIDIA vGPU in a guest (1: passthrough, 0: none)."""


class P2pContext(Record):
    gpus: tuple[Gpu, ...]
    """The GPUs this host drives (not the ones bound to vfio-pci for VMs)."""
    vfio: tuple[Gpu, ...]
    support: P2pSupport
    """PCIe P2P support here: the models' (``no`` when any GPU has none), unless NVML lets a pair of them peer over
    PCIe (a driver built with P2P for GeForce cards): then ``yes``, what the driver does outranks the product line."""
    nvlink_gpus: frozenset[int]
    """NVML indices of GPUs with NVLink link 0 active."""
    nvlink_pairs: frozenset[tuple[int, int]]
    """Pairs that peer over NVLink (NVML's NVLink P2P capability, else both GPUs' NVLink up)."""
    mig_on: frozenset[int]
    rdma: RdmaFacts
    tp: int | None
    """The largest tensor-parallel size on a server's command line."""
    refs: tuple[str, ...]
    fabric_pending: frozenset[int] = frozenset()
    """NVML indices of GPUs whose NVSwitch fabric NVML reports not completed (fabric manager down or starting):
    their NVLinks carry no peer traffic, whatever the PCIe path says."""
    driver_p2p: bool = False
    """NVML lets a pair of GPUs whose product line has no PCIe P2P peer over PCIe (``support`` was overruled)."""
    driver_refuses: bool = False
    """NVML refuses P2P with GPU_NOT_SUPPORTED on every PCIe pair of GPUs whose product line has PCIe P2P (no MIG, no
    vGPU): the driver offers none on these boards (RTX 6000 Ada on some branches), so ``support`` is ``no``."""
    vgpu: frozenset[int] = frozenset()
    """NVML indices of GPUs that are NVIDIA vGPUs (virtualization mode VGPU): no P2P over PCIe between them."""
    pcie_refused: bool = False
    """No pair peers over NVLink and NVML refuses P2P (read) on every pair: a VM without a P2P clique, a
    platform the driver does not trust. p2p.status says why and what it costs."""
    groups: Groups | None = None
    """The GPUs each server instance holds (:mod:`.peer_groups`); None when not every GPU process is traced to one."""
    idle: bool = False
    """NVML lists the compute processes of every GPU and there are none: a node between jobs (``groups`` is None)."""

    def peers_over_pcie(self, a: int, b: int) -> bool:
        """Whether GPUs ``a`` and ``b`` could exchange P2P traffic over PCIe: not NVLinked, not MIG slices, on models
        (and a driver) with PCIe P2P."""
        pair = (min(a, b), max(a, b))
        return self.support != "no" and pair not in self.nvlink_pairs and a not in self.mig_on and b not in self.mig_on

    @property
    def pairs(self) -> tuple[tuple[int, int], ...]:
        indices = sorted(g.index for g in self.gpus if g.index is not None)
        return tuple(combinations(indices, 2))

    @property
    def all_nvlink(self) -> bool:
        """Every GPU pair peers over NVLink: PCIe carries no GPU-to-GPU traffic."""
        return bool(self.pairs) and all(p in self.nvlink_pairs for p in self.pairs)

    @property
    def all_mig(self) -> bool:
        indices = {g.index for g in self.gpus if g.index is not None}
        return bool(indices) and indices <= self.mig_on

    @property
    def models(self) -> str:
        return ", ".join(sorted({short_name(g.name) for g in self.gpus})) or "these GPUs"

    def pcie_peer_traffic(self) -> str | None:
        """Why GPU peer traffic does not cross PCIe here (None: it does, or may)."""
        if len(self.gpus) < 2:
            return f"{len(self.gpus)} GPU(s) on this host: no GPU pair"
        if self.support == "no":
            why = (
                ": the driver refuses PCIe peer-to-peer on these boards (NVML: GPU_NOT_SUPPORTED on every pair)"
                if self.driver_refuses
                else " have no PCIe peer-to-peer"
            )
            return f"{self.models}{why}: NCCL stages GPU-to-GPU traffic through host memory anyway"
        if self.all_mig:
            return "MIG is on on every GPU: there is no peer-to-peer between MIG slices"
        if self.all_nvlink:
            return f"every GPU pair peers over NVLink ({len(self.pairs)} pairs): GPU-to-GPU traffic does not cross PCIe"
        return None

    def pcie_peers_unused(self) -> str | None:
        """Why no server's GPUs exchange peer traffic over PCIe today (None: one does, or the servers are not known):
        every pair of GPUs a server instance holds is NVLinked or a MIG slice, or each instance holds one GPU."""
        if self.groups is None or not self.groups:
            return None
        held = [tuple(sorted(g)) for g in self.groups]
        if any(self.peers_over_pcie(a, b) for group in held for a, b in combinations(group, 2)):
            return None
        shown = "; ".join("+".join(f"GPU{i}" for i in g) for g in held)
        return (
            f"no server's GPUs peer over PCIe (the servers hold {shown}: each group over NVLink, or one GPU); it costs "
            "once a tensor-parallel group spans GPUs without NVLink between them"
        )

    def p2p_refused(self) -> str | None:
        """Why an override that turns P2P off changes nothing now (None: P2P is in use, or may be)."""
        if moot := self.pcie_peer_traffic():
            return moot
        if self.pcie_refused:
            return (
                f"NVML refuses P2P on every GPU pair ({len(self.pairs)}), so NCCL already uses shared memory (see "
                "p2p.status); it will cost once P2P is allowed"
            )
        return None

    @property
    def rdma_active(self) -> bool:
        return bool(self.rdma.active_nics)


NVLINK_REMOTE_GPU = 0
"""nvmlIntNvLinkDeviceType_t GPU: the link ends at another GPU (an NVLink bridge), not at an NVSwitch (2)."""


def _bus(value: object) -> str:
    bus = value.get("busId") if isinstance(value, dict) else None
    return str(bus).lower()[-12:] if bus else ""


async def _nvlink_pair(probe: Probe, a: int, b: int, up: frozenset[int], bdfs: dict[int, str]) -> bool:
    """Whether ``a`` and ``b`` peer over NVLink: NVML's NVLink P2P capability for the pair; without it, both GPUs'
    NVLink up and, where ``a``'s link ends at a GPU (bridged pairs: H100 NVL, A100 PCIe), that GPU being ``b``.
    Two GPUs each bridged to another peer have NVLink up and still talk to each other over PCIe."""
    caps = await probe.nvml("nvmlDeviceGetP2PStatus", a, b, P2P_NVLINK_CAPS)
    if caps.ok and isinstance(caps.value, int):
        return caps.value == 0
    if a not in up or b not in up:
        return False
    kind = await probe.nvml("nvmlDeviceGetNvLinkRemoteDeviceType", a, 0)
    if kind.ok and kind.value == NVLINK_REMOTE_GPU:
        remote = await probe.nvml("nvmlDeviceGetNvLinkRemotePciInfo", a, 0)
        return remote.ok and bool(bdfs.get(b)) and _bus(remote.value) == bdfs[b].lower()[-12:]
    return True


async def _nvlink_up(probe: Probe, indices: list[int]) -> frozenset[int]:
    """The GPUs whose NVLink link 0 is active."""
    links = await probe.gather(*[lambda i=i: probe.nvml("nvmlDeviceGetNvLinkState", i, 0) for i in indices])
    return frozenset(i for i, r in zip(indices, links, strict=True) if r.ok and r.value == 1)


async def _mig_on(probe: Probe, indices: list[int]) -> frozenset[int]:
    """The GPUs with MIG mode on (its current mode, the first of NVML's pair)."""
    modes = await probe.gather(*[lambda i=i: probe.nvml("nvmlDeviceGetMigMode", i) for i in indices])
    return frozenset(i for i, r in zip(indices, modes, strict=True) if r.ok and isinstance(r.value, list) and r.value[:1] == [1])


async def _fabric_pending(probe: Probe, indices: list[int]) -> frozenset[int]:
    """The GPUs whose NVSwitch fabric NVML reports in a state other than completed."""
    fabric = await probe.gather(*[lambda i=i: probe.nvml("nvmlDeviceGetGpuFabricInfo", i) for i in indices])
    return frozenset(
        i
        for i, r in zip(indices, fabric, strict=True)
        if r.ok and isinstance(r.value, dict) and r.value.get("state") not in (None, 0, FABRIC_COMPLETED)
    )


async def _vgpus(probe: Probe, indices: list[int]) -> frozenset[int]:
    """The GPUs that are NVIDIA vGPUs."""
    virt = await probe.gather(*[lambda i=i: probe.nvml("nvmlDeviceGetVirtualizationMode", i) for i in indices])
    return frozenset(i for i, r in zip(indices, virt, strict=True) if r.ok and r.value == VIRTUALIZATION_VGPU)


class _PcieVerdict(Record):
    """PCIe P2P support once the driver's answers on the PCIe pairs are weighed against the product lines."""

    support: P2pSupport
    driver_p2p: bool
    driver_refuses: bool


def _pcie_verdict(gpus: tuple[Gpu, ...], reads: list[NvmlResult], vgpu: frozenset[int], mig_on: frozenset[int]) -> _PcieVerdict:
    """The models' support, overruled by NVML: a pair that peers makes it ``yes``; GPU_NOT_SUPPORTED on every pair
    of boards that should peer (no MIG, no vGPU) makes it ``no``."""
    supports = {p2p_support(g.name) for g in gpus}
    driver_p2p = driver_refuses = False
    if ("no" in supports or "nvlink_bridge" in supports) and any(r.ok and r.value == 0 for r in reads):
        driver_p2p, supports = True, {"yes"}
    elif (
        supports == {"yes"}
        and reads
        and not vgpu
        and not mig_on
        and all(r.ok and r.value == P2P_GPU_NOT_SUPPORTED for r in reads)
    ):
        # The driver's answer outranks the product line here too: it offers no PCIe P2P on these boards.
        driver_refuses, supports = True, {"no"}
    support: P2pSupport = (
        "no"
        if "no" in supports
        else "nvlink_bridge"
        if "nvlink_bridge" in supports
        else "unknown"
        if "unknown" in supports or not supports
        else "yes"
    )
    return _PcieVerdict(support=support, driver_p2p=driver_p2p, driver_refuses=driver_refuses)


async def collect_p2p_context(probe: Probe, inventory: GpuInventory | None = None) -> P2pContext:
    inventory = inventory or await collect_gpus(probe)
    drivers = await probe.gather(*[lambda g=g: read_driver(probe, g.bdf) for g in inventory.gpus])
    vfio = tuple(g for g, d in zip(inventory.gpus, drivers, strict=True) if d == "vfio-pci")
    gpus = tuple(g for g in inventory.gpus if g not in vfio)
    indices = [g.index for g in gpus if g.index is not None]
    up = await _nvlink_up(probe, indices)
    pairs = list(combinations(sorted(indices), 2))
    bdfs = {g.index: g.bdf for g in gpus if g.index is not None}
    nvlinked = await probe.gather(*[lambda p=p: _nvlink_pair(probe, p[0], p[1], up, bdfs) for p in pairs])
    mig_on = await _mig_on(probe, indices)
    pending = await _fabric_pending(probe, indices)
    vgpu = await _vgpus(probe, indices)
    pcie = [p for p, linked in zip(pairs, nvlinked, strict=True) if not linked]
    reads = await probe.gather(*[lambda p=p: probe.nvml("nvmlDeviceGetP2PStatus", p[0], p[1], P2P_READ_CAPS) for p in pcie])
    verdict = _pcie_verdict(gpus, reads, vgpu, mig_on)
    refused = bool(pairs) and len(pcie) == len(pairs) and all(r.ok and isinstance(r.value, int) and r.value for r in reads)
    scan = await find_servers(probe)
    refs = (
        f"dir:{PCI_DEVICES}",
        *(nvml_ref("nvmlDeviceGetNvLinkState", (i, 0)) for i in indices),
        *(nvml_ref("nvmlDeviceGetMigMode", (i,)) for i in indices),
        *(nvml_ref("nvmlDeviceGetVirtualizationMode", (i,)) for i in indices if i in vgpu),
    )
    return P2pContext(
        gpus=gpus,
        vfio=vfio,
        support=verdict.support,
        nvlink_gpus=up,
        nvlink_pairs=frozenset(p for p, linked in zip(pairs, nvlinked, strict=True) if linked),
        mig_on=mig_on,
        rdma=await collect_rdma(probe),
        tp=largest_tp([s.argv for s in scan.servers]),
        refs=refs,
        fabric_pending=pending,
        driver_p2p=verdict.driver_p2p,
        driver_refuses=verdict.driver_refuses,
        vgpu=vgpu,
        pcie_refused=refused,
        groups=await server_groups(probe, scan),
        idle=scan.nvml_listed and not scan.gpu_processes,
    )
