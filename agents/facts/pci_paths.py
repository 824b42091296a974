"""What stands on the PCIe path between two GPUs: a translating IOMMU, ACS redirect on the switch ports between them.

Read from sysfs: each GPU's IOMMU group type (``identity`` passthrough, ``DMA``/``DMA-FQ`` translated,
``unmanaged``/``blocked`` owned by vfio for a VM), and the ACS control register of every bridge two GPUs' peer
traffic crosses inside their shared switch.
"""

from __future__ import annotations

from itertools import combinations

from rigaudit.agents.facts.gpus import PCI_DEVICES, Gpu
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, file_ref
from rigaudit.tools.pci import bridges_between
from rigaudit.tools.pci.sysfs import read_chain, read_config

IOMMU_GROUPS = "/sys/kernel/iommu_groups"
TRANSLATED = ("DMA", "DMA-FQ")


class PciPaths(Record):
    iommu: dict[str, str | None]
    """GPU BDF -> IOMMU group type (None: no group, or unreadable)."""
    redirects: dict[tuple[str, str], tuple[str, ...]]
    """(BDF a, BDF b) -> bridges between them with ACS P2P redirect set."""
    refs: tuple[str, ...]

    def translated(self, bdf: str) -> bool:
        return self.iommu.get(bdf) in TRANSLATED

    def redirect_between(self, a: str, b: str) -> tuple[str, ...]:
        return self.redirects.get((a, b)) or self.redirects.get((b, a)) or ()


async def _iommu_type(probe: Probe, bdf: str) -> tuple[str | None, tuple[str, ...]]:
    link = f"{PCI_DEVICES}/{bdf}/iommu_group"
    target = await probe.readlink(link)
    if not target:
        return None, (f"link:{link}",)
    group = target.rstrip("/").rsplit("/", 1)[-1]
    path = f"{IOMMU_GROUPS}/{group}/type"
    kind = await probe.text(path)
    return (kind.strip() if kind else None), (f"link:{link}", file_ref(path))


async def collect_pci_paths(probe: Probe, gpus: tuple[Gpu, ...]) -> PciPaths:
    types = await probe.gather(*[lambda g=g: _iommu_type(probe, g.bdf) for g in gpus])
    chains = await probe.gather(*[lambda g=g: read_chain(probe, g.bdf) for g in gpus])
    by_bdf = {c.bdf: c.chain for c in chains if c.chain}
    between: dict[tuple[str, str], tuple[str, ...]] = {}
    for a, b in combinations(sorted(by_bdf), 2):
        between[(a, b)] = bridges_between(by_bdf[a] or (), by_bdf[b] or ())
    bridges = sorted({br for ports in between.values() for br in ports})
    configs = await probe.gather(*[lambda br=br: read_config(probe, br) for br in bridges])
    redirecting = {c.bdf for c in configs if c.config is not None and c.config.acs is not None and c.config.acs.redirects}
    refs = tuple(r for _, rs in types for r in rs) + tuple(c.ref for c in configs)
    return PciPaths(
        iommu={g.bdf: t for g, (t, _) in zip(gpus, types, strict=True)},
        redirects={pair: tuple(p for p in ports if p in redirecting) for pair, ports in between.items()},
        refs=refs,
    )
