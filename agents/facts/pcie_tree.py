"""Where the GPUs, the switches and the NICs sit in the PCIe tree (for a picture, not a verdict).

Read from sysfs: every device's ``class`` and ``vendor``, and where each GPU and NIC is linked
from (``/sys/bus/pci/devices/BDF`` points into ``/sys/devices/pciDDDD:BB/...``). The bridges on the
way from a root complex to a GPU or a NIC are its root port and, below it, switch ports.
"""

from __future__ import annotations

from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.pci.sysfs import PCI_DEVICES, read_chain

NVIDIA = "0x10de"
KINDS = ("root", "port", "switch", "gpu", "nvswitch", "nic")


class PcieNode(Record):
    bdf: str
    """The device's address, or the root complex's name (``pci0000:40``)."""
    kind: str
    """``root`` (complex), ``port`` (root port), ``switch`` (switch port), ``gpu``, ``nvswitch``, ``nic``."""
    parent: str | None


def _kind(vendor: str | None, klass: str | None) -> str | None:
    code = (klass or "").strip().lower()
    if code.startswith("0x02"):
        return "nic"
    if (vendor or "").strip().lower() == NVIDIA:
        if code.startswith("0x03"):
            return "gpu"
        if code.startswith("0x0680"):
            return "nvswitch"
    return None


async def collect_pcie_tree(probe: Probe) -> tuple[PcieNode, ...]:
    """Every GPU, NVSwitch and NIC with the bridges above it, parents first; ``()`` when sysfs shows none."""
    listing = await probe.list_dir(PCI_DEVICES)
    if listing.entries is None:
        return ()
    devices = sorted(listing.entries)
    kinds = await probe.gather(*[lambda bdf=bdf: _read_kind(probe, bdf) for bdf in devices])
    wanted = {bdf: kind for bdf, kind in zip(devices, kinds, strict=True) if kind is not None}
    chains = await probe.gather(*[lambda bdf=bdf: read_chain(probe, bdf) for bdf in wanted])
    nodes: dict[str, PcieNode] = {}
    for read in chains:
        if read.chain is None or read.link_target is None:
            continue
        root = next((part for part in read.link_target.split("/") if part.startswith("pci")), "pci?")
        nodes.setdefault(root, PcieNode(root, "root", None))
        parent = root
        for depth, bdf in enumerate(read.chain):
            kind = wanted.get(bdf) if bdf == read.chain[-1] else ("port" if depth == 0 else "switch")
            nodes.setdefault(bdf, PcieNode(bdf, kind or "switch", parent))
            parent = bdf
    return tuple(nodes.values())


async def _read_kind(probe: Probe, bdf: str) -> str | None:
    vendor = await probe.text(f"{PCI_DEVICES}/{bdf}/vendor")
    klass = await probe.text(f"{PCI_DEVICES}/{bdf}/class")
    return _kind(vendor, klass)


__all__ = ["KINDS", "PcieNode", "collect_pcie_tree"]
