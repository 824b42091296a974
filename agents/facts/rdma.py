"""RDMA NICs and the GPUDirect RDMA path in use: nvidia_peermem, or DMA-BUF, or none.

GPUDirect RDMA lets an InfiniBand/RoCE (or EFA) NIC read and write GPU memory directly. AWS's EFA driver registers
GPU memory itself (through the NVIDIA driver's P2P interface, or DMA-BUF). For InfiniBand/RoCE two paths exist: the
``nvidia_peermem`` module (it needs the MLNX_OFED / DOCA-OFED ``ib_core``, whose peer-memory API the inbox kernel
stack lacks), or DMA-BUF, which needs Linux 5.12+, NVIDIA's open kernel module (R515+) and a recent NCCL (2.19+ uses
it by default). Either serves; having neither stages inter-node traffic through host memory.
"""

from __future__ import annotations

import posixpath
import re
from itertools import pairwise
from typing import Literal

from rigaudit.agents.facts.cpufreq_drivers import parse_kernel_version
from rigaudit.agents.facts.nvidia_driver import MODULES, PROC_VERSION, kernel_version, loaded_modules
from rigaudit.agents.facts.nvlink_management import rdma_devices
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, dir_ref, file_ref
from rigaudit.tools.pci import is_bdf

INFINIBAND = "/sys/class/infiniband"
DMABUF_KERNEL = (5, 12, 0)
DMABUF_DRIVER = 515
AMAZON = "0x1d0f"
GpuDirectPath = Literal["peermem", "dmabuf", "efa", "none", "unknown"]


class RdmaNic(Record):
    name: str
    link_layer: str | None
    """``InfiniBand`` or ``Ethernet`` (RoCE) of port 1."""
    state: str | None
    """``ACTIVE``, ``DOWN``... of port 1."""
    rate: str | None
    vendor: str | None = None
    """The PCI vendor id of the NIC (``0x15b3`` Mellanox/NVIDIA, ``0x1d0f`` Amazon)."""
    bdf: str | None = None
    """The NIC's PCI address (``/sys/class/infiniband/NAME/device``)."""
    vf: bool = False
    """An SR-IOV virtual function (its PCI function has a ``physfn`` link), not a port of its own."""

    @property
    def active(self) -> bool:
        return self.state == "ACTIVE"

    @property
    def kind(self) -> str:
        if self.name.startswith("efa") or self.vendor == AMAZON:
            return "EFA"
        return "RoCE" if self.link_layer == "Ethernet" else "InfiniBand"


class RdmaFacts(Record):
    nics: tuple[RdmaNic, ...] | None
    """None when /sys/class/infiniband could not be listed for another reason than its absence."""
    error: str | None
    modules: frozenset[str] | None
    out_of_tree: frozenset[str]
    """Loaded modules tainted out-of-tree (``O`` in /proc/modules' flags): MLNX_OFED's RDMA stack is."""
    kernel: tuple[int, int, int] | None
    driver: str | None
    open_module: bool | None
    refs: tuple[str, ...]
    management: tuple[str, ...] = ()
    """NVLink management ports (NVLink 5 baseboard bridge) listed by the host and left out of ``nics``."""

    @property
    def active_nics(self) -> tuple[RdmaNic, ...]:
        return tuple(n for n in self.nics or () if n.active)

    @property
    def ofed(self) -> bool | None:
        """MLNX_OFED / DOCA-OFED's RDMA stack is loaded (``mlx_compat``, or an out-of-tree ib_core/mlx5): nvidia_peermem
        can attach to its ib_core."""
        if self.modules is None:
            return None
        return "mlx_compat" in self.modules or bool(self.out_of_tree & {"ib_core", "mlx5_core", "mlx5_ib", "ib_uverbs"})

    @property
    def dmabuf_capable(self) -> bool | None:
        """Kernel 5.12+ with NVIDIA's open kernel module R515+: GPUDirect RDMA over DMA-BUF is possible."""
        if self.kernel is None or self.open_module is None:
            return None
        branch = int(self.driver.split(".")[0]) if self.driver and self.driver.split(".")[0].isdecimal() else None
        return self.kernel >= DMABUF_KERNEL and self.open_module and (branch is None or branch >= DMABUF_DRIVER)

    @property
    def path(self) -> GpuDirectPath:
        if self.modules is not None and "nvidia_peermem" in self.modules:
            return "peermem"
        nics = self.nics or ()
        if nics and all(n.kind == "EFA" for n in nics) and self.modules is not None and "efa" in self.modules:
            return "efa"
        capable = self.dmabuf_capable
        if capable:
            return "dmabuf"
        if capable is None or self.modules is None:
            return "unknown"
        return "none"

    def path_text(self) -> str:
        return {
            "peermem": "nvidia_peermem loaded",
            "efa": "the efa driver's own GPU memory registration (it calls the NVIDIA driver's P2P interface: no "
            "nvidia_peermem needed)",
            "dmabuf": f"DMA-BUF (kernel {'.'.join(map(str, (self.kernel or ())[:2]))}, open kernel module {self.driver})",
            "none": "neither nvidia_peermem nor DMA-BUF ("
            + ("proprietary kernel module" if self.open_module is False else "kernel older than 5.12")
            + ")",
            "unknown": "unknown (kernel, NVIDIA module flavor or loaded modules not readable)",
        }[self.path]


def _port(text: str | None) -> str | None:
    """``4: ACTIVE`` -> ``ACTIVE``."""
    if text is None:
        return None
    return text.split(":", 1)[-1].strip() or None


async def nic_bdf(probe: Probe, name: str) -> str | None:
    """The PCI address behind ``/sys/class/infiniband/NAME/device``: its link resolved as the kernel would (the
    class entry links into /sys/devices, and ``device`` points up from there)."""
    entry = f"{INFINIBAND}/{name}"
    folder = await probe.readlink(entry)
    base = posixpath.normpath(posixpath.join(INFINIBAND, folder)) if folder else entry
    target = await probe.readlink(f"{entry}/device")
    if not target:
        return None
    bdf = posixpath.basename(posixpath.normpath(posixpath.join(base, target))).lower()
    return bdf if is_bdf(bdf) else None


async def _nic(probe: Probe, name: str) -> RdmaNic:
    base = f"{INFINIBAND}/{name}/ports/1"
    link, state, rate = await probe.gather(*[lambda f=f: probe.text(f"{base}/{f}") for f in ("link_layer", "state", "rate")])
    vendor = await probe.text(f"{INFINIBAND}/{name}/device/vendor")
    bdf = await nic_bdf(probe, name)
    physfn = await probe.readlink(f"{INFINIBAND}/{name}/device/physfn")
    return RdmaNic(
        name,
        link.strip() if link else None,
        _port(state),
        rate.strip() if rate else None,
        vendor.strip() if vendor else None,
        bdf,
        physfn is not None,
    )


async def collect_rdma(probe: Probe) -> RdmaFacts:
    listing = await rdma_devices(probe)
    nics: tuple[RdmaNic, ...] | None = None
    if listing.entries is not None or listing.error == "ENOENT":
        nics = tuple(await probe.gather(*[lambda n=n: _nic(probe, n) for n in listing.entries or ()]))
    modules, proc_version, osrelease = await probe.gather(
        lambda: probe.text(MODULES), lambda: probe.text(PROC_VERSION), lambda: probe.text("/proc/sys/kernel/osrelease")
    )
    driver, open_module = kernel_version(proc_version)
    refs = (dir_ref(INFINIBAND), file_ref(MODULES), file_ref(PROC_VERSION), file_ref("/proc/sys/kernel/osrelease"))
    return RdmaFacts(
        nics=nics,
        error=None if nics is not None else listing.error,
        modules=loaded_modules(modules),
        out_of_tree=frozenset(
            line.split()[0]
            for line in (modules or "").splitlines()
            if line.strip() and re.search(r"\((?:[A-Z]*O[A-Z]*)\)\s*$", line)
        ),
        kernel=parse_kernel_version(osrelease),
        driver=driver,
        open_module=open_module if proc_version is not None else None,
        refs=refs,
        management=listing.management,
    )


def _natural(name: str) -> tuple[str, int]:
    """``mlx5_10`` -> ("mlx5_", 10): sorts mlx5_2 before mlx5_10."""
    match = re.fullmatch(r"(.*?)([0-9]{1,9})", name)
    return (match.group(1), int(match.group(2))) if match else (name, -1)


def name_span(names: list[str]) -> str:
    """``mlx5_0–mlx5_7`` for a run of consecutive numbers, else the names (the first three and a count)."""
    keys = sorted(_natural(n) for n in names)
    ordered = sorted(names, key=_natural)
    run = len({k[0] for k in keys}) == 1 and all(b[1] == a[1] + 1 for a, b in pairwise(keys))
    if len(names) > 3 and run:
        return f"{ordered[0]}–{ordered[-1]}"
    return ", ".join(ordered) if len(names) <= 4 else f"{', '.join(ordered[:3])} and {len(names) - 3} more"


def describe_nics(nics: tuple[RdmaNic, ...]) -> str:
    """``8 InfiniBand NICs (mlx5_0–mlx5_7), 8 active``; SR-IOV VFs counted apart: ``; 32 SR-IOV VFs (...), 0 active``."""
    pfs = tuple(n for n in nics if not n.vf)
    vfs = tuple(n for n in nics if n.vf)
    parts = []
    if pfs:
        kinds = sorted({n.kind for n in pfs})
        active = sum(1 for n in pfs if n.active)
        shown = name_span([n.name for n in pfs])
        parts.append(f"{len(pfs)} {'/'.join(kinds)} NIC{'s' if len(pfs) != 1 else ''} ({shown}), {active} active")
    if vfs:
        active = sum(1 for n in vfs if n.active)
        shown = name_span([n.name for n in vfs])
        parts.append(f"{len(vfs)} SR-IOV VF{'s' if len(vfs) != 1 else ''} ({shown}), {active} active")
    return "; ".join(parts)
