"""The PCI tree: functions, bridges and root complexes, written as sysfs lays them out.

``/sys/devices/pciDDDD:BB/<root port>/<switch upstream>/<downstream>/<device>/`` (a Hyper-V guest's vPCI buses under
their VMBus device) with the attribute files
the kernel creates, the ``/sys/bus/pci/devices/BDF`` links, ``driver`` and ``iommu_group`` links, and
``/sys/kernel/iommu_groups``. Bus numbers are assigned depth first, as firmware enumerates them.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from tests.hostgen import pciconfig as pc
from tests.hostgen.tree import Tree

SPEEDS = {
    0: "Unknown",
    1: "2.5 GT/s PCIe",
    2: "5.0 GT/s PCIe",
    3: "8.0 GT/s PCIe",
    4: "16.0 GT/s PCIe",
    5: "32.0 GT/s PCIe",
    6: "64.0 GT/s PCIe",
}


_UNCORRECTABLE = (
    "Undefined",
    "DLP",
    "SDES",
    "TLP",
    "FCP",
    "CmpltTO",
    "CmpltAbrt",
    "UnxCmplt",
    "RxOF",
    "MalfTLP",
    "ECRC",
    "UnsupReq",
    "ACSViol",
    "UncorrIntErr",
    "BlockedTLP",
    "AtomicOpBlocked",
    "TLPBlockedErr",
    "PoisonTLPBlocked",
)
AER_NAMES: dict[str, tuple[str, ...]] = {
    "correctable": ("RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr", "HeaderOF"),
    "nonfatal": _UNCORRECTABLE,
    "fatal": _UNCORRECTABLE,
}
"""The kernel's names of the AER error bits, in the order ``aer_dev_{correctable,nonfatal,fatal}`` lists them."""


def aer_text(kind: str, counts: dict[str, int]) -> str:
    """``/sys/bus/pci/devices/BDF/aer_dev_<kind>`` with ``counts`` (the others 0) and its TOTAL_ERR_ line."""
    lines = [f"{n} {counts.get(n, 0)}" for n in AER_NAMES[kind]]
    lines.append(f"TOTAL_ERR_{'COR' if kind == 'correctable' else kind.upper()} {sum(counts.values())}")
    return "\n".join(lines) + "\n"


@dataclass
class Function:
    """One PCI function. ``config`` makes its configuration space from the function (bus numbers known)."""

    role: str
    """gpu, nvswitch, nic, nvme, root_port, upstream, downstream, host_bridge, other."""
    vendor: int
    device: int
    class_code: int
    config: Callable[[Function], pc.ConfigSpec]
    revision: int = 0
    subsystem: tuple[int, int] = (0, 0)
    driver: str | None = None
    express: pc.Express | None = None
    children: list[Function] = field(default_factory=list)
    slot: int = 0
    """Device number on its bus."""
    fn: int = 0
    name: str = ""
    """lspci's description."""
    tag: str = ""
    """What the builder calls it: ``GPU3``, ``mlx5_2``..."""
    acs_control: int | None = None
    aer: bool = True
    aer_counts: dict[str, dict[str, int]] = field(default_factory=dict)
    extra: dict[str, str] = field(default_factory=dict)
    """More sysfs attributes (name -> content)."""
    irq: int = 0
    bar_sizes: tuple[int, ...] = ()
    """Bytes of each BAR slot (0: unused), for the ``resource`` file."""
    # assigned by layout()
    bdf: str = ""
    path: str = ""
    numa_node: int = -1
    cpulist: str = ""
    cpumask: str = ""
    secondary: int = 0
    subordinate: int = 0
    iommu_group: int | None = None

    def add(self, child: Function) -> Function:
        self.children.append(child)
        return child

    def walk(self) -> Iterator[Function]:
        yield self
        for child in self.children:
            yield from child.walk()

    @property
    def is_bridge(self) -> bool:
        return self.role in ("root_port", "upstream", "downstream", "bridge")


@dataclass
class RootComplex:
    """A host bridge ``pciDDDD:BB`` and the functions on its root bus."""

    domain: int
    bus: int
    numa_node: int
    cpulist: str
    cpumask: str
    functions: list[Function] = field(default_factory=list)
    last_bus: int | None = None
    """The highest bus number firmware gives this root complex (default: bus + 0x1f)."""
    parent: str = "/sys/devices"
    """The sysfs folder the ``pciDDDD:BB`` folder sits in: a Hyper-V guest's vPCI buses are under their VMBus device
    (``/sys/devices/LNXSYSTM:00/LNXSYBUS:00/ACPI0004:00/VMBUS:00/<guid>``)."""

    @property
    def base(self) -> str:
        return f"{self.parent}/pci{self.domain:04x}:{self.bus:02x}"

    def add(self, function: Function) -> Function:
        self.functions.append(function)
        return function


@dataclass
class Topology:
    roots: list[RootComplex] = field(default_factory=list)
    iommu: str | None = None
    """``identity``, ``DMA`` or ``DMA-FQ`` for every group; None: no IOMMU groups at all."""
    group_per_switch: bool = False

    def functions(self) -> Iterator[Function]:
        for root in self.roots:
            for function in root.functions:
                yield from function.walk()

    def find(self, tag: str) -> Function:
        return next(f for f in self.functions() if f.tag == tag)

    def by_role(self, role: str) -> list[Function]:
        return [f for f in self.functions() if f.role == role]


def _layout(root: RootComplex) -> None:
    next_bus = root.bus + 1
    base = root.base

    def place(function: Function, bus: int, parent_path: str) -> None:
        nonlocal next_bus
        function.bdf = f"{root.domain:04x}:{bus:02x}:{function.slot:02x}.{function.fn}"
        function.path = f"{parent_path}/{function.bdf}"
        function.numa_node, function.cpulist, function.cpumask = root.numa_node, root.cpulist, root.cpumask
        if function.is_bridge:
            function.secondary = next_bus
            next_bus += 1
            for child in function.children:
                place(child, function.secondary, function.path)
            function.subordinate = next_bus - 1

    for function in root.functions:
        place(function, root.bus, base)


def rel(folder: str, target: str) -> str:
    """A relative link target from ``folder`` to the absolute ``target``, as sysfs writes them."""
    return posixpath.relpath(target, folder)


def _resource_lines(spec: pc.ConfigSpec, sizes: tuple[int, ...]) -> str:
    lines = []
    slot_sizes = list(sizes) + [0] * 6
    bars = list(spec.bars) + [None] * 6
    for i in range(6 if spec.header_type == 0 else 2):
        bar = bars[i]
        size = slot_sizes[i]
        if bar is None or size == 0:
            lines.append("0x0000000000000000 0x0000000000000000 0x0000000000000000")
        else:
            flags = 0x40200 if not bar.io else 0x40101
            if bar.prefetchable:
                flags |= 0x2000
            if bar.bits64:
                flags |= 0x100000
            flags |= 0xC if bar.prefetchable and bar.bits64 else 0
            lines.append(f"0x{bar.address:016x} 0x{bar.address + size - 1:016x} 0x{flags:016x}")
    lines += ["0x0000000000000000 0x0000000000000000 0x0000000000000000"] * (13 - len(lines))
    return "\n".join(lines) + "\n"


def write_topology(tree: Tree, topology: Topology, *, kernel_5_15_or_later: bool = True) -> None:
    """Every function's sysfs folder, links and IOMMU groups."""
    group = 0
    bridge_group: dict[str, int] = {}
    for root in topology.roots:
        _layout(root)
        base = root.base
        tree.attrs(base, {"uevent": ""})
        tree.directory(f"{base}/power")
    for function in topology.functions():
        spec = function.config(function)
        folder = function.path
        tree.file(f"{folder}/config", pc.render(spec))
        attrs: dict[str, str | bytes | int] = {
            "vendor": f"0x{function.vendor:04x}",
            "device": f"0x{function.device:04x}",
            "subsystem_vendor": f"0x{function.subsystem[0]:04x}",
            "subsystem_device": f"0x{function.subsystem[1]:04x}",
            "class": f"0x{function.class_code:06x}",
            "revision": f"0x{function.revision:02x}",
            "irq": function.irq,
            "numa_node": function.numa_node,
            "local_cpulist": function.cpulist,
            "local_cpus": function.cpumask,
            "enable": 1 if function.driver else 0,
            "msi_bus": 1,
            "broken_parity_status": 0,
            "d3cold_allowed": 1,
            "dma_mask_bits": 64 if function.role != "other" else 32,
            "consistent_dma_mask_bits": 64 if function.role != "other" else 32,
            "driver_override": "(null)",
            "modalias": f"pci:v{function.vendor:08X}d{function.device:08X}sv{function.subsystem[0]:08X}"
            f"sd{function.subsystem[1]:08X}bc{function.class_code >> 16:02X}sc{(function.class_code >> 8) & 0xFF:02X}"
            f"i{function.class_code & 0xFF:02X}",
            "power_state": "D0",
            "ari_enabled": 0,
        }
        if kernel_5_15_or_later:
            attrs["reset_method"] = "flr bus" if function.role in ("gpu", "nic") else "pm bus"
        if function.express is not None:
            exp = function.express
            attrs["current_link_speed"] = SPEEDS[exp.current_speed or exp.link_speed]
            attrs["current_link_width"] = exp.current_width if exp.current_width is not None else exp.link_width
            attrs["max_link_speed"] = SPEEDS[exp.link_speed]
            attrs["max_link_width"] = exp.link_width
        if function.is_bridge:
            attrs["secondary_bus_number"] = function.secondary
            attrs["subordinate_bus_number"] = function.subordinate
        if spec.header_type == 0:
            attrs["resource"] = _resource_lines(spec, function.bar_sizes)
        if function.aer and function.express is not None:
            for kind in AER_NAMES:
                attrs[f"aer_dev_{kind}"] = aer_text(kind, function.aer_counts.get(kind, {}))
        attrs.update(function.extra)
        tree.attrs(folder, attrs)
        tree.file(f"{folder}/uevent", _uevent(function))
        tree.directory(f"{folder}/power")
        tree.link(f"/sys/bus/pci/devices/{function.bdf}", rel("/sys/bus/pci/devices", folder))
        tree.link(f"{folder}/subsystem", rel(folder, "/sys/bus/pci"))
        if function.driver:
            tree.link(f"{folder}/driver", rel(folder, f"/sys/bus/pci/drivers/{function.driver}"))
            tree.link(
                f"/sys/bus/pci/drivers/{function.driver}/{function.bdf}", rel(f"/sys/bus/pci/drivers/{function.driver}", folder)
            )
        if topology.iommu is not None and function.role not in ("host_bridge",):
            if function.iommu_group is None:
                key = (
                    function.path.rsplit("/", 1)[0]
                    if topology.group_per_switch and function.role != "root_port"
                    else function.bdf
                )
                if key not in bridge_group:
                    bridge_group[key] = group
                    group += 1
                function.iommu_group = bridge_group[key]
            gfolder = f"/sys/kernel/iommu_groups/{function.iommu_group}"
            tree.link(f"{folder}/iommu_group", rel(folder, gfolder))
            tree.link(f"{gfolder}/devices/{function.bdf}", rel(f"{gfolder}/devices", folder))
            tree.file(f"{gfolder}/type", topology.iommu + "\n")
            tree.file(f"{gfolder}/reserved_regions", "0x00000000fee00000 0x00000000feefffff msi\n")
        if function.role in ("root_port", "upstream", "downstream"):
            tree.file("/sys/bus/pci/drivers/pcieport/bind", b"")
    if topology.iommu is None:
        tree.directory("/sys/kernel/iommu_groups")
    for name in sorted({f.driver for f in topology.functions() if f.driver}):
        tree.directory(f"/sys/bus/pci/drivers/{name}")


def _uevent(function: Function) -> str:
    lines = []
    if function.driver:
        lines.append(f"DRIVER={function.driver}")
    lines += [
        f"PCI_CLASS={function.class_code:X}",
        f"PCI_ID={function.vendor:04X}:{function.device:04X}",
        f"PCI_SUBSYS_ID={function.subsystem[0]:04X}:{function.subsystem[1]:04X}",
        f"PCI_SLOT_NAME={function.bdf}",
        f"MODALIAS=pci:v{function.vendor:08X}d{function.device:08X}sv{function.subsystem[0]:08X}sd{function.subsystem[1]:08X}"
        f"bc{function.class_code >> 16:02X}sc{(function.class_code >> 8) & 0xFF:02X}i{function.class_code & 0xFF:02X}",
    ]
    return "\n".join(lines) + "\n"


def lspci_lines(topology: Topology, *, numeric: bool = False, domains: bool = False) -> str:
    """``lspci`` / ``lspci -nn`` / ``lspci -D``: one line per function, sorted by address."""
    out = []
    for function in sorted(topology.functions(), key=lambda f: f.bdf):
        address = function.bdf if domains or function.bdf.startswith("0000:") is False else function.bdf[5:]
        kind, _, what = function.name.partition(": ")
        line = f"{address} {kind}: {what}"
        if numeric:
            line = f"{address} {kind} [{function.class_code >> 8:04x}]: {what} [{function.vendor:04x}:{function.device:04x}]"
        if function.revision:
            line += f" (rev {function.revision:02x})"
        out.append(line)
    return "\n".join(out) + "\n"
