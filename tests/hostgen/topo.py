"""Server PCI layouts: where GPUs, NVSwitches and NICs sit (HGX baseboards, one root port per GPU, GPUs behind
PEX switches, a VM's flat bus, a Hyper-V guest's vPCI domains, a Grace Hopper node)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tests.hostgen import devices as dv
from tests.hostgen import pciconfig as pc
from tests.hostgen.catalog import GpuModel
from tests.hostgen.cpu import CpuSpec, cpulist, cpumask, node_cpulist, node_cpumask
from tests.hostgen.pci import Function, RootComplex, Topology


@dataclass
class Placed:
    topology: Topology
    gpus: list[Function] = field(default_factory=list)
    nvswitches: list[Function] = field(default_factory=list)
    nics: list[Function] = field(default_factory=list)
    """Every function the host lists as an RDMA device, the NVLink management ports (``management``) last."""
    management: list[Function] = field(default_factory=list)


@dataclass(frozen=True)
class Parts:
    model: GpuModel
    count: int
    gpu_pci: dv.GpuPci
    nvswitches: int = 0
    nvswitch_key: str = "nvswitch-h100"
    """The NVSwitches' PCI model; empty: not on the host's PCI tree as modelled (NVLink 5 switches of HGX B200, whose
    PCI presentation no public source read here shows; the bridge NVLSM drives them through is ``nvlink_management``)."""
    nics: int = 0
    nic_key: str = "cx7"
    nvlink_management: int = 0
    """Physical functions of the NVLink 5 baseboard's ConnectX bridge (4 on HGX B200: two ports, each one full and one
    limited PF), listed by the host as RDMA devices after the data NICs: NVLSM and the fabric manager drive the
    NVSwitches through them."""
    root: str = "intel-spr"
    """Root complex family: ``intel-spr``, ``intel-icx``, ``intel-clx``, ``amd-genoa``, ``amd-rome`` (Rome/Milan)."""
    acs_control: int = 0
    """ACS control bits the kernel set on switch downstream ports (and root ports)."""
    iommu: str | None = "identity"


def _rc(cpu: CpuSpec, bus: int, node: int, domain: int = 0) -> RootComplex:
    node = min(node, cpu.nodes - 1)
    return RootComplex(domain, bus, node, node_cpulist(cpu, node), node_cpumask(cpu, node))


def _root_port_key(root: str) -> str:
    return {
        "intel-spr": "intel-spr-rp",
        "intel-icx": "intel-icx-rp",
        "intel-clx": "intel-clx-rp",
        "amd-genoa": "amd-genoa-rp",
        "amd-rome": "amd-rome-rp",
    }[root]


def _gen(root: str) -> int:
    return 5 if root in ("intel-spr", "amd-genoa") else 4 if root in ("amd-rome", "intel-icx") else 3


def _node_of_stack(cpu: CpuSpec, stack: int, stacks: int) -> int:
    """NUMA node of the ``stack``-th of ``stacks`` root complexes, spread over sockets then nodes."""
    per_socket = max(1, stacks // cpu.sockets)
    socket = min(stack // per_socket, cpu.sockets - 1)
    within = stack % per_socket
    return socket * cpu.nodes_per_socket + min(within * cpu.nodes_per_socket // per_socket, cpu.nodes_per_socket - 1)


def _host_bridge(root: str, mmio: dv.Mmio, bus: int) -> Function:
    key = "amd-genoa-host" if root == "amd-genoa" else "amd-rome-host" if root == "amd-rome" else "intel-spr-host"
    return dv.legacy(key, mmio, f"host{bus:02x}", slot=0)


def _platform_devices(rc: RootComplex, parts: Parts, mmio: dv.Mmio) -> None:
    """BMC VGA behind its bridge, a management NIC and a boot NVMe on the first root complex."""
    gen = _gen(parts.root)
    rp = rc.add(dv.port(_root_port_key(parts.root), pc.PORT_ROOT, "rp-bmc", gen=2, width=1, slot=0x1C, fn=0, physical_slot=None))
    bridge = rp.add(dv.legacy("aspeed-bridge", mmio, "bmc-bridge", slot=0))
    bridge.role = "bridge"
    bridge.add(dv.legacy("aspeed-vga", mmio, "bmc-vga", slot=0))
    rp2 = rc.add(dv.port(_root_port_key(parts.root), pc.PORT_ROOT, "rp-lan", gen=3, width=8, slot=0x1C, fn=4))
    rp2.add(dv.endpoint("intel-x710", mmio, "lan0", gen=3, width=8))
    rp3 = rc.add(dv.port(_root_port_key(parts.root), pc.PORT_ROOT, "rp-boot", gen=gen, width=4, slot=0x1D, fn=0))
    rp3.add(dv.endpoint("nvme-samsung", mmio, "nvme0", gen=4, width=4, bar_layout=[(16384, True, False)]))


def hgx(cpu: CpuSpec, parts: Parts) -> Placed:
    """HGX baseboard: each GPU behind a PCIe switch with one RDMA NIC beside it; NVSwitches behind their own switch."""
    placed = Placed(Topology(iommu=parts.iommu))
    mmio = dv.Mmio()
    stacks = parts.count
    buses = (
        [0x15, 0x26, 0x37, 0x48, 0x97, 0xA8, 0xB9, 0xCA]
        if parts.root.startswith("intel")
        else [0x00, 0x20, 0x40, 0x60, 0x80, 0xA0, 0xC0, 0xE0]
    )
    first = _rc(cpu, 0x00, 0)
    first.add(_host_bridge(parts.root, mmio, 0))
    placed.topology.roots.append(first)
    _platform_devices(first, parts, mmio)
    if parts.nvswitches and parts.nvswitch_key:
        rp = first.add(
            dv.port(
                _root_port_key(parts.root), pc.PORT_ROOT, "rp-nvsw", gen=_gen(parts.root), width=16, slot=0x01, physical_slot=None
            )
        )
        usp = rp.add(dv.port("pex-gen5", pc.PORT_UPSTREAM, "nvsw-usp", gen=5, width=16))
        for k in range(parts.nvswitches):
            dsp = usp.add(
                dv.port(
                    "pex-gen5",
                    pc.PORT_DOWNSTREAM,
                    f"nvsw-dsp{k}",
                    gen=4,
                    width=2,
                    slot=k,
                    port_number=k,
                    acs_control=parts.acs_control,
                )
            )
            sw = dv.endpoint(
                parts.nvswitch_key, mmio, f"NVSwitch{k}", gen=4, width=2, bar_layout=[(32 * 1024 * 1024, True, False)]
            )
            sw.role = "nvswitch"
            dsp.add(sw)
            placed.nvswitches.append(sw)
    for index in range(parts.count):
        bus = buses[index % len(buses)]
        node = _node_of_stack(cpu, index, stacks)
        rc = first if bus == 0 else _rc(cpu, bus, node)
        if rc is not first:
            rc.add(_host_bridge(parts.root, mmio, bus))
            placed.topology.roots.append(rc)
        rp = rc.add(
            dv.port(
                _root_port_key(parts.root),
                pc.PORT_ROOT,
                f"rp{index}",
                gen=_gen(parts.root),
                width=16,
                slot=0x01 if bus else 0x03,
                physical_slot=index + 1,
            )
        )
        usp = rp.add(dv.port("pex-gen5", pc.PORT_UPSTREAM, f"usp{index}", gen=5, width=16))
        dsp_gpu = usp.add(
            dv.port(
                "pex-gen5",
                pc.PORT_DOWNSTREAM,
                f"dsp{index}",
                gen=5,
                width=16,
                slot=0,
                port_number=0,
                acs_control=parts.acs_control,
            )
        )
        dsp_gpu.add(dv.gpu(parts.model, mmio, index, parts.gpu_pci))
        if index < parts.nics:
            dsp_nic = usp.add(
                dv.port(
                    "pex-gen5",
                    pc.PORT_DOWNSTREAM,
                    f"dsp{index}-nic",
                    gen=5,
                    width=16,
                    slot=1,
                    port_number=1,
                    acs_control=parts.acs_control,
                )
            )
            nic = dsp_nic.add(
                dv.endpoint(
                    parts.nic_key,
                    mmio,
                    f"nic{index}",
                    gen=5 if parts.nic_key == "cx7" else 4,
                    width=16,
                    sriov_vfs=16,
                    max_read_request=4096,
                )
            )
            placed.nics.append(nic)
        dsp_nvme = usp.add(
            dv.port(
                "pex-gen5",
                pc.PORT_DOWNSTREAM,
                f"dsp{index}-nvme",
                gen=4,
                width=4,
                slot=2,
                port_number=2,
                acs_control=parts.acs_control,
            )
        )
        dsp_nvme.add(dv.endpoint("nvme-kioxia", mmio, f"nvme{index + 1}", gen=4, width=4, bar_layout=[(16384, True, False)]))
    if parts.nvlink_management:
        _nvlink_bridge(placed.topology.roots[-1], parts, mmio, placed)
    placed.gpus = [f for f in placed.topology.functions() if f.role == "gpu"]
    return placed


def _nvlink_bridge(rc: RootComplex, parts: Parts, mmio: dv.Mmio, placed: Placed) -> None:
    """The NVLink 5 baseboard's ConnectX-7 bridge: one device of ``parts.nvlink_management`` functions on a root port of
    the last root complex (so the kernel names them after the data NICs, mlx5_8-mlx5_11 on HGX B200 as
    github.com/siderolabs/extensions/issues/893 lists them). Its PCI ids and place on the tree are not shown by a public
    source read here: a ConnectX-7's ids on a root port of its own stand in."""
    rp = rc.add(dv.port(_root_port_key(parts.root), pc.PORT_ROOT, "rp-nvlink-bridge", gen=_gen(parts.root), width=16, slot=0x05))
    for k in range(parts.nvlink_management):
        function = dv.endpoint("cx7", mmio, f"nvlink-mgmt{k}", gen=5, width=16, fn=k, max_read_request=4096)
        placed.nics.append(rp.add(function))
        placed.management.append(function)


def direct(cpu: CpuSpec, parts: Parts) -> Placed:
    """One root port per GPU (workstations, 2U servers), spread over the sockets' root complexes."""
    placed = Placed(Topology(iommu=parts.iommu))
    mmio = dv.Mmio()
    first = _rc(cpu, 0x00, 0)
    first.add(_host_bridge(parts.root, mmio, 0))
    placed.topology.roots.append(first)
    _platform_devices(first, parts, mmio)
    stacks = max(parts.count, 1)
    if parts.root.startswith("amd"):
        # a workstation's one socket has four root complexes; a two-socket EPYC eight (00-60 and 80-e0)
        buses = [0x00, 0x40, 0x80, 0xC0] if cpu.sockets == 1 else [0x00, 0x20, 0x40, 0x60, 0x80, 0xA0, 0xC0, 0xE0]
    else:
        buses = [0x00, 0x16, 0x30, 0x4A, 0x80, 0x97, 0xB0, 0xC9]
    roots: dict[int, RootComplex] = {0: first}
    for index in range(parts.count):
        bus = buses[index % len(buses)] if parts.count > 1 else 0
        node = _node_of_stack(cpu, index, stacks) if cpu.nodes > 1 else 0
        rc = roots.get(bus)
        if rc is None:
            rc = _rc(cpu, bus, node)
            rc.add(_host_bridge(parts.root, mmio, bus))
            placed.topology.roots.append(rc)
            roots[bus] = rc
        slot = 0x01 + sum(1 for f in rc.functions if f.role == "root_port" and f.slot < 0x1C)
        rp = rc.add(
            dv.port(
                _root_port_key(parts.root),
                pc.PORT_ROOT,
                f"rp{index}",
                gen=_gen(parts.root),
                width=16,
                slot=slot,
                fn=1 if parts.root.startswith("amd") else 0,
                physical_slot=index + 1,
                acs_control=parts.acs_control,
            )
        )
        rp.add(dv.gpu(parts.model, mmio, index, parts.gpu_pci))
        if parts.model.audio_function is not None:
            rp.add(dv.gpu_audio(parts.model, mmio, index))
    for index in range(parts.nics):  # spread over the root complexes: one per socket for two NICs
        rc = placed.topology.roots[index * len(placed.topology.roots) // max(parts.nics, 1)]
        rp = rc.add(
            dv.port(
                _root_port_key(parts.root),
                pc.PORT_ROOT,
                f"rp-nic{index}",
                gen=_gen(parts.root),
                width=16,
                slot=0x07,
                fn=index // len(placed.topology.roots) + 1,
            )
        )
        placed.nics.append(
            rp.add(
                dv.endpoint(
                    parts.nic_key, mmio, f"nic{index}", gen=5 if parts.nic_key == "cx7" else 4, width=16, max_read_request=4096
                )
            )
        )
    placed.gpus = [f for f in placed.topology.functions() if f.role == "gpu"]
    return placed


def switched(cpu: CpuSpec, parts: Parts, per_switch: int = 4) -> Placed:
    """GPUs in groups behind Broadcom PEX switches, one switch per root port (4U PCIe GPU servers)."""
    placed = Placed(Topology(iommu=parts.iommu, group_per_switch=False))
    mmio = dv.Mmio()
    first = _rc(cpu, 0x00, 0)
    first.add(_host_bridge(parts.root, mmio, 0))
    placed.topology.roots.append(first)
    _platform_devices(first, parts, mmio)
    switches = (parts.count + per_switch - 1) // per_switch
    buses = [0x16, 0x97, 0x30, 0xB0] if parts.root.startswith("intel") else [0x40, 0xC0, 0x00, 0x80]
    pex = "pex-gen5" if parts.model.pcie_gen >= 5 else "pex-gen4"
    gen = min(_gen(parts.root), 5 if pex == "pex-gen5" else 4)
    index = 0
    for s in range(switches):
        bus = buses[s % len(buses)]
        node = _node_of_stack(cpu, s, switches)
        rc = _rc(cpu, bus, node) if bus else first
        if rc is not first:
            rc.add(_host_bridge(parts.root, mmio, bus))
            placed.topology.roots.append(rc)
        rp = rc.add(
            dv.port(
                _root_port_key(parts.root),
                pc.PORT_ROOT,
                f"rp-sw{s}",
                gen=_gen(parts.root),
                width=16,
                slot=0x01,
                physical_slot=s + 1,
                acs_control=parts.acs_control,
            )
        )
        usp = rp.add(dv.port(pex, pc.PORT_UPSTREAM, f"usp{s}", gen=gen, width=16))
        for k in range(per_switch):
            if index >= parts.count:
                break
            dsp = usp.add(
                dv.port(
                    pex,
                    pc.PORT_DOWNSTREAM,
                    f"dsp{s}.{k}",
                    gen=gen,
                    width=16,
                    slot=k,
                    port_number=k + 8,
                    acs_control=parts.acs_control,
                    physical_slot=10 + index,
                )
            )
            dsp.add(dv.gpu(parts.model, mmio, index, parts.gpu_pci))
            index += 1
        if s < parts.nics:
            dsp = usp.add(
                dv.port(
                    pex,
                    pc.PORT_DOWNSTREAM,
                    f"dsp{s}.nic",
                    gen=gen,
                    width=16,
                    slot=per_switch,
                    port_number=per_switch + 8,
                    acs_control=parts.acs_control,
                )
            )
            placed.nics.append(
                dsp.add(dv.endpoint(parts.nic_key, mmio, f"nic{s}", gen=min(gen, 5), width=16, max_read_request=4096))
            )
    placed.gpus = [f for f in placed.topology.functions() if f.role == "gpu"]
    return placed


def flat_vm(cpu: CpuSpec, parts: Parts, *, cloud: str, numa_aware: bool) -> Placed:
    """A VM guest: the GPUs passed through with vfio sit on root buses with no bridge above them; no ACS visible.

    ``numa_aware``: each GPU on its own host bridge with the guest NUMA node it is near (large cloud instances);
    otherwise everything on bus 0 with ``numa_node`` -1 (small instances, most KVM setups).
    """
    placed = Placed(Topology(iommu=None))
    mmio = dv.Mmio(low=0xC000_0000, high=0x1000_0000_0000)
    every = list(range(cpu.logical))
    first = RootComplex(0, 0, -1, cpulist(every), cpumask(every, cpu.logical))
    placed.topology.roots.append(first)
    first.add(dv.legacy("qemu-i440fx", mmio, "host", slot=0))
    first.add(dv.legacy("qemu-isa", mmio, "isa", slot=1))
    net = "ena" if cloud == "aws" else "gvnic" if cloud == "gcp" else "virtio-net"
    disk = "nvme-aws" if cloud == "aws" else "virtio-scsi" if cloud == "gcp" else "virtio-blk"
    first.add(dv.legacy(net, mmio, "eth0", slot=3, express=cloud != "kvm"))
    first.add(dv.legacy(disk, mmio, "disk0", slot=4, express=cloud != "kvm"))
    guest_pci = dv.GpuPci(**{**parts.gpu_pci.__dict__, "guest": True})
    for index in range(parts.count):
        if numa_aware:
            node = _node_of_stack(cpu, index, parts.count)
            rc = RootComplex(0, 0x10 * (index + 1) + 0x40, node, node_cpulist(cpu, node), node_cpumask(cpu, node))
            placed.topology.roots.append(rc)
            rc.add(dv.gpu(parts.model, mmio, index, guest_pci, slot=0))
            if index < parts.nics:
                for k in range(parts.nics // max(parts.count, 1) or 1):
                    placed.nics.append(
                        rc.add(
                            dv.endpoint(parts.nic_key, mmio, f"nic{len(placed.nics)}", gen=4, width=16, slot=k + 1, guest=True)
                        )
                    )
        else:
            first.add(dv.gpu(parts.model, mmio, index, guest_pci, slot=5 + index))
    if parts.nvswitches:
        rc = RootComplex(0, 0x30, 0, node_cpulist(cpu, 0), node_cpumask(cpu, 0))
        placed.topology.roots.append(rc)
        for k in range(parts.nvswitches):
            sw = dv.endpoint(
                parts.nvswitch_key,
                mmio,
                f"NVSwitch{k}",
                gen=4,
                width=2,
                slot=k,
                guest=True,
                bar_layout=[(32 * 1024 * 1024, True, False)],
            )
            sw.role = "nvswitch"
            placed.nvswitches.append(rc.add(sw))
    placed.gpus = [f for f in placed.topology.functions() if f.role == "gpu"]
    return placed


VMBUS = "/sys/devices/LNXSYSTM:00/LNXSYBUS:00/ACPI0004:00/VMBUS:00"
"""Where a Hyper-V Generation 2 guest's VMBus devices sit in sysfs; each vPCI bus is under its VMBus device."""

HYPERV_GPU_DOMAINS = {
    9: (0x0001, 0x0002, 0x0003, 0x0008, 0x0009, 0x000A, 0x000B, 0x000C),
    8: (0x0001, 0x0002, 0x0003, 0x0004, 0x000B, 0x000C, 0x000D, 0x000E),
}
"""PCI domains of the GPUs of an ND H100 v5 (Hopper) and an ND A100 v4 (Ampere) guest, in NUMA order, as Azure's NCCL
topology files name them (Azure/azhpc-images topology/ndv5-topo.xml, ndv4-topo.xml); their InfiniBand VFs are
domains 0101-0108, the k-th beside the k-th GPU."""


def _vmbus_root(cpu: CpuSpec, domain: int, node: int, kind: str, index: int) -> RootComplex:
    """A vPCI bus: domain ``domain`` bus 0 under its VMBus device, whose instance GUID carries the domain in its
    second group (pci-hyperv derives the domain from those bytes; the other groups are placeholders of the form a
    public NCCL log of an Azure guest shows: ``56475055-0002-0000-3130-303237344131``)."""
    guid = f"{kind}-{domain:04x}-0000-3130-3030{index:08x}"
    return RootComplex(domain, 0, node, node_cpulist(cpu, node), node_cpumask(cpu, node), parent=f"{VMBUS}/{guid}")


def hyperv_vm(cpu: CpuSpec, parts: Parts) -> Placed:
    """A Hyper-V guest (Azure ND-class): every passed-through device alone at 00:00.0 of its own PCI domain, on a vPCI
    bus under its VMBus device, with no bridge or host bridge function above it; the InfiniBand NICs are ConnectX
    SR-IOV virtual functions (their PF stays on the host: no ``physfn`` link). The synthetic NIC and disks are VMBus
    devices, not PCI. What no public source read here shows is a stand-in: the NVSwitches' domains (0201-0204 here)
    and the accelerated-networking VF (left out)."""
    placed = Placed(Topology(iommu=None))
    mmio = dv.Mmio(low=0xC000_0000, high=0x1000_0000_0000)
    guest_pci = dv.GpuPci(**{**parts.gpu_pci.__dict__, "guest": True})
    domains = HYPERV_GPU_DOMAINS.get(parts.model.arch, HYPERV_GPU_DOMAINS[9])
    for index in range(parts.count):
        node = _node_of_stack(cpu, index, parts.count)
        rc = _vmbus_root(cpu, domains[index % len(domains)], node, "56475055", index)
        placed.topology.roots.append(rc)
        rc.add(dv.gpu(parts.model, mmio, index, guest_pci, slot=0))
    for index in range(parts.nics):
        node = _node_of_stack(cpu, index * parts.count // max(parts.nics, 1), parts.count) if parts.count else 0
        rc = _vmbus_root(cpu, 0x0101 + index, node, "9b1e4c3a", index)
        placed.topology.roots.append(rc)
        nic = dv.endpoint(f"{parts.nic_key}-vf", mmio, f"nic{index}", gen=5, width=16, guest=True, virtual_function=True)
        placed.nics.append(rc.add(nic))
    for k in range(parts.nvswitches):
        rc = _vmbus_root(cpu, 0x0201 + k, 0, "3a8d5c71", k)
        placed.topology.roots.append(rc)
        sw = dv.endpoint(
            parts.nvswitch_key, mmio, f"NVSwitch{k}", gen=4, width=2, guest=True, bar_layout=[(32 * 1024 * 1024, True, False)]
        )
        sw.role = "nvswitch"
        placed.nvswitches.append(rc.add(sw))
    placed.gpus = [f for f in placed.topology.functions() if f.role == "gpu"]
    return placed


def q35_vm(cpu: CpuSpec, parts: Parts, port: tuple[int, int] = (4, 32)) -> Placed:
    """A KVM guest of machine type q35 (Proxmox VE, libvirt, OpenStack): each GPU passed through with vfio behind a
    QEMU ``pcie-root-port`` (00:10.x, as Proxmox places ``hostpci`` devices with ``pcie=1``); the ports advertise
    ``port`` (generation, width: QEMU's x-speed/x-width), whatever slot the GPU has on the host. virtio devices and
    the ICH9 LPC on the root bus."""
    placed = Placed(Topology(iommu=None))
    mmio = dv.Mmio(low=0xC000_0000, high=0x380_0000_0000)
    every = list(range(cpu.logical))
    first = RootComplex(0, 0, -1, cpulist(every), cpumask(every, cpu.logical))
    placed.topology.roots.append(first)
    first.add(dv.legacy("qemu-host", mmio, "host", slot=0))
    first.add(dv.legacy("virtio-net", mmio, "eth0", slot=0x12))
    first.add(dv.legacy("virtio-scsi", mmio, "scsi0", slot=0x05))
    first.add(dv.legacy("qemu-lpc", mmio, "lpc", slot=0x1F))
    # The guest kernel sets each GPU's MaxPayload to its (emulated) root port's 128 bytes; vfio keeps that value
    # virtual, the hardware keeps what the host set.
    guest_pci = dv.GpuPci(**{**parts.gpu_pci.__dict__, "guest": True, "max_payload": 128})
    for index in range(parts.count):
        if port == (0, 0):  # on the root bus (pcie.0): an integrated endpoint, Link Status zero
            first.add(dv.gpu(parts.model, mmio, index, replace(guest_pci, integrated=True), slot=0x10 + index))
            continue
        rp = first.add(
            dv.qemu_root_port(
                f"rp{index}", slot=0x10 + index // 8, fn=index % 8, port_number=0x10 + index, gen=port[0], width=port[1]
            )
        )
        rp.add(dv.gpu(parts.model, mmio, index, guest_pci))
    placed.gpus = [f for f in placed.topology.functions() if f.role == "gpu"]
    return placed


def grace(cpu: CpuSpec, parts: Parts) -> Placed:
    """A GH200 node: the Hopper GPU on its own PCIe domain (0009) behind a Grace root port; NICs and NVMe on others."""
    placed = Placed(Topology(iommu=parts.iommu))
    mmio = dv.Mmio(low=0x4000_0000, high=0x6100_0000_0000)
    gpu_rc = RootComplex(0x0009, 0, 0, node_cpulist(cpu, 0), node_cpumask(cpu, 0))
    rp = gpu_rc.add(dv.port("grace-rp", pc.PORT_ROOT, "rp-gpu", gen=5, width=16, slot=0, physical_slot=None))
    rp.add(dv.gpu(parts.model, mmio, 0, parts.gpu_pci))
    nic_rc = RootComplex(0x0000, 0, 0, node_cpulist(cpu, 0), node_cpumask(cpu, 0))
    rp_nic = nic_rc.add(dv.port("grace-rp", pc.PORT_ROOT, "rp-nic", gen=5, width=16, slot=0))
    for k in range(parts.nics):
        placed.nics.append(rp_nic.add(dv.endpoint(parts.nic_key, mmio, f"nic{k}", gen=5, width=16, fn=k, max_read_request=4096)))
    nvme_rc = RootComplex(0x0004, 0, 0, node_cpulist(cpu, 0), node_cpumask(cpu, 0))
    rp_nvme = nvme_rc.add(dv.port("grace-rp", pc.PORT_ROOT, "rp-nvme", gen=5, width=4, slot=0))
    rp_nvme.add(dv.endpoint("nvme-samsung", mmio, "nvme0", gen=4, width=4, bar_layout=[(16384, True, False)]))
    placed.topology.roots += [nic_rc, nvme_rc, gpu_rc]
    placed.gpus = [f for f in placed.topology.functions() if f.role == "gpu"]
    return placed


def spark(cpu: CpuSpec, parts: Parts) -> Placed:
    """A DGX Spark (GB10): the GPU alone on PCI domain 000F behind a root port (nvidia-smi: 0000000F:01:00.0); the
    ConnectX-7's two ports each as two functions, on domains 0000 and 0002 (public DGX Spark interface names:
    enp1s0f0np0, enp1s0f1np1, enP2p1s0f0np0, enP2p1s0f1np1: one PCIe x4 link per pair); the NVMe on domain 0004 (a
    stand-in: no public listing read here)."""
    placed = Placed(Topology(iommu=parts.iommu))
    mmio = dv.Mmio(low=0x4000_0000, high=0x6100_0000_0000)
    cpus, mask = node_cpulist(cpu, 0), node_cpumask(cpu, 0)
    gpu_rc = RootComplex(0x000F, 0, 0, cpus, mask)
    rp = gpu_rc.add(dv.port("grace-rp", pc.PORT_ROOT, "rp-gpu", gen=5, width=16, slot=0, physical_slot=None))
    rp.add(dv.gpu(parts.model, mmio, 0, parts.gpu_pci))
    for half, domain in enumerate((0x0000, 0x0002)):
        rc = RootComplex(domain, 0, 0, cpus, mask)
        rp_nic = rc.add(dv.port("grace-rp", pc.PORT_ROOT, f"rp-nic{half}", gen=5, width=4, slot=0))
        for fn in range(min(2, max(0, parts.nics - 2 * half))):
            nic = dv.endpoint(parts.nic_key, mmio, f"nic{2 * half + fn}", gen=5, width=4, fn=fn, max_read_request=4096)
            placed.nics.append(rp_nic.add(nic))
        placed.topology.roots.append(rc)
    nvme_rc = RootComplex(0x0004, 0, 0, cpus, mask)
    rp_nvme = nvme_rc.add(dv.port("grace-rp", pc.PORT_ROOT, "rp-nvme", gen=5, width=4, slot=0))
    rp_nvme.add(dv.endpoint("nvme-samsung", mmio, "nvme0", gen=4, width=4, bar_layout=[(16384, True, False)]))
    placed.topology.roots += [nvme_rc, gpu_rc]
    placed.gpus = [f for f in placed.topology.functions() if f.role == "gpu"]
    return placed


GB200_GPU_DOMAINS = (0x0008, 0x0009, 0x0018, 0x0019)
"""The PCI domains a GB200 NVL72 compute tray's four GPUs show (``nvidia-smi``: 00000008:01:00.0 ... 00000019:01:00.0):
two per Grace, each GPU behind its own root port."""


def gb200_tray(cpu: CpuSpec, parts: Parts) -> Placed:
    """A GB200 NVL72 compute tray: two Grace CPUs (NUMA nodes 0 and 1), two Blackwell GPUs on each (domains 0008/0009
    and 0018/0019, bus 01), the ConnectX NICs split between the sockets (domains 0000/0002 and 0010/0012), an NVMe on
    the first. The NICs' and the NVMe's domains are not from a public listing read here (the tray's GPU domains are)."""
    placed = Placed(Topology(iommu=parts.iommu))
    mmio = dv.Mmio(low=0x4000_0000, high=0x6100_0000_0000)
    per_socket = max(1, parts.nics // 2)
    for k, domain in enumerate(GB200_GPU_DOMAINS[: parts.count]):
        node = min(k // 2, cpu.nodes - 1)
        rc = RootComplex(domain, 0, node, node_cpulist(cpu, node), node_cpumask(cpu, node))
        rp = rc.add(dv.port("grace-rp", pc.PORT_ROOT, f"rp-gpu{k}", gen=5, width=16, slot=0, physical_slot=None))
        rp.add(dv.gpu(parts.model, mmio, k, parts.gpu_pci))
        placed.topology.roots.append(rc)
    for k in range(parts.nics):
        node = min(k // per_socket, cpu.nodes - 1)
        domain = 0x0010 * node + 2 * (k % per_socket)
        rc = RootComplex(domain, 0, node, node_cpulist(cpu, node), node_cpumask(cpu, node))
        rp = rc.add(dv.port("grace-rp", pc.PORT_ROOT, f"rp-nic{k}", gen=5, width=16, slot=0))
        placed.nics.append(rp.add(dv.endpoint(parts.nic_key, mmio, f"nic{k}", gen=5, width=16, max_read_request=4096)))
        placed.topology.roots.append(rc)
    nvme_rc = RootComplex(0x0004, 0, 0, node_cpulist(cpu, 0), node_cpumask(cpu, 0))
    rp_nvme = nvme_rc.add(dv.port("grace-rp", pc.PORT_ROOT, "rp-nvme", gen=5, width=4, slot=0))
    rp_nvme.add(dv.endpoint("nvme-samsung", mmio, "nvme0", gen=4, width=4, bar_layout=[(16384, True, False)]))
    placed.topology.roots.append(nvme_rc)
    placed.topology.roots.sort(key=lambda r: r.domain)
    placed.gpus = [f for f in placed.topology.functions() if f.role == "gpu"]
    return placed
