"""The check catalog: every check id in code, with what it reads, when it is a problem and how it is fixed.

Built from the investigators (their ``docs``); checks of investigators that declare no docs fall back on
:data:`FALLBACK_DOCS`. ``docs/checks.md`` is :func:`render_markdown` of it, and ``rigaudit checks`` prints it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rigaudit.agents.investigator import AnyInvestigator, CheckDoc
from rigaudit.agents.registry import all_investigators

FALLBACK_DOCS: dict[str, CheckDoc] = {
    "firmware.rebar": CheckDoc(
        "GPU BAR1 size (Resizable BAR / Above 4G decoding)",
        "NVML BAR1 total vs framebuffer total; PCI extended capability 0x15 (Resizable BAR)",
        "BAR1 far below VRAM (e.g. 256 MiB)",
        "BIOS: Above 4G decoding + Re-Size BAR",
        ("firmware",),
    ),
    "firmware.vbios_consistency": CheckDoc(
        "VBIOS versions of GPUs of one model",
        "NVML VBIOS version of each GPU",
        "GPUs of one model disagree",
        "vendor firmware update",
        ("firmware",),
    ),
    "firmware.cppc": CheckDoc(
        "ACPI CPPC for amd_pstate",
        "`/sys/devices/system/cpu/cpu0/acpi_cppc/` on AMD",
        "missing while amd_pstate is wanted",
        "BIOS: CPPC on",
        ("firmware",),
    ),
    "kernel.iommu": CheckDoc(
        "IOMMU mode for GPU DMA and P2P",
        "`/proc/cmdline`, `/sys/kernel/iommu_groups/*/type`, kernel log",
        "translated DMA on a bare-metal multi-GPU host doing PCIe P2P (normal inside a VM guest)",
        "`iommu=pt` (+ `amd_iommu=on`/`intel_iommu=on`) on the command line",
        ("reboot",),
    ),
    "kernel.thp": CheckDoc(
        "Transparent huge pages and compaction stalls",
        "`/sys/kernel/mm/transparent_hugepage/{enabled,defrag}`, `/proc/vmstat`",
        "`always` + synchronous defrag with compaction stalls rising",
        "`madvise`",
        ("runtime",),
    ),
    "kernel.swappiness": CheckDoc(
        "Swappiness and swap in use",
        "`/proc/sys/vm/swappiness`, swap in use",
        "server process swapping",
        "`vm.swappiness=10`",
        ("runtime",),
    ),
    "kernel.cmdline_pcie": CheckDoc(
        "PCIe options on the kernel command line",
        "`/proc/cmdline`",
        "`pci=pcie_bus_perf` (caps MaxReadReq at MaxPayload), `pcie_aspm=force`",
        "edit the boot line",
        ("reboot",),
    ),
    "kernel.version": CheckDoc(
        "Kernel version vs GPU driver and CPU frequency driver",
        "`/proc/sys/kernel/osrelease`, `/proc/version`, driver build",
        "kernel too old for the CPU's frequency driver or the GPU driver branch; module built for another kernel",
        "upgrade the kernel",
        ("reboot",),
    ),
    "pcie.link": CheckDoc(
        "PCIe link speed and width of every GPU",
        "`/sys/bus/pci/devices/BDF/{current,max}_link_{speed,width}`, NVML link generation and width, kernel log",
        "below max (GPUs train down at idle: re-read under load)",
        "reseat/riser/slot, or BIOS slot speed",
        ("hardware", "firmware"),
    ),
    "pcie.mrrs": CheckDoc(
        "GPU PCIe Max Read Request size",
        "PCIe Device Control bits 14:12 in `/sys/bus/pci/devices/BDF/config`",
        "GPU MaxReadReq below 4096 bytes",
        "`setpci -s BDF CAP_EXP+8.w=5000:7000` with the GPU idle",
        ("runtime",),
    ),
    "pcie.mps": CheckDoc(
        "MaxPayload of GPUs and the bridges above them",
        "Device Capabilities/Control MaxPayload on the GPU and every bridge above it",
        "endpoint payload larger than a bridge's",
        "BIOS or `pci=pcie_bus_safe`",
        ("reboot",),
    ),
    "pcie.acs": CheckDoc(
        "ACS redirect on switch ports between GPUs",
        "ACS extended capability (0x000D) control register on every bridge between GPUs",
        "ReqRedir/CmpltRedir set on a switch port between GPUs",
        "`setpci -s BRIDGE ECAP_ACS+6.w=0000`; `pci=disable_acs_redir=` or BIOS",
        ("runtime", "reboot"),
    ),
    "pcie.aer": CheckDoc(
        "PCIe error counters (AER, NVML replays)",
        "`/sys/bus/pci/devices/BDF/aer_dev_{correctable,nonfatal,fatal}`, NVML PCIe replay counter",
        "counters non-zero and rising",
        "reseat/riser",
        ("hardware",),
    ),
}
"""Docs of checks whose investigators declare none (their modules may move these into ``docs=`` later)."""


@dataclass(frozen=True)
class CatalogEntry:
    check: str
    area: str
    doc: CheckDoc | None

    def as_dict(self) -> dict[str, object]:
        doc = self.doc
        return {
            "check": self.check,
            "area": self.area,
            "title": doc.title if doc else "",
            "reads": doc.reads if doc else "",
            "problem": doc.problem if doc else "",
            "fix": doc.fix if doc else "",
            "fix_kinds": list(doc.kinds) if doc else [],
        }


def catalog(investigators: Sequence[AnyInvestigator] | None = None) -> list[CatalogEntry]:
    """Every check id, in registry order."""
    found = []
    for inv in investigators if investigators is not None else all_investigators():
        for check in inv.checks:
            found.append(CatalogEntry(check, inv.area, inv.docs.get(check) or FALLBACK_DOCS.get(check)))
    return found


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(entries: Sequence[CatalogEntry]) -> str:
    """``docs/checks.md``: one table per area, in catalog order."""
    areas: dict[str, list[CatalogEntry]] = {}
    for entry in entries:
        areas.setdefault(entry.area, []).append(entry)
    lines = [
        "# Check catalog",
        "",
        "Generated from the code by `rigaudit checks --markdown > docs/checks.md`; do not edit by hand.",
        f"{len(entries)} checks in {len(areas)} areas. Each check ends in `ok`, `problem` (with a severity and a fix), "
        "`unknown` (with the reason) or `not_applicable`.",
        "",
    ]
    for area, rows in areas.items():
        lines += [
            f"## {area}",
            "",
            "| id | title | reads | problem when | fix | fix kind |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for entry in rows:
            doc = entry.doc
            if doc is None:
                lines.append(f"| `{entry.check}` | | | | | |")
                continue
            kinds = ", ".join(f"`{k}`" for k in doc.kinds) or "—"
            cells = (doc.title, doc.reads, doc.problem, doc.fix)
            lines.append(f"| `{entry.check}` | " + " | ".join(_cell(c) for c in cells) + f" | {kinds} |")
        lines.append("")
    return "\n".join(lines)
