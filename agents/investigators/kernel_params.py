"""kernel_params: the boot command line and runtime kernel knobs that matter to GPU inference hosts."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from rigaudit.agents.facts.gpus import PCI_DEVICES, Gpu, collect_gpus
from rigaudit.agents.facts.platform import Platform, detect_platform
from rigaudit.agents.findings import ok, problem, unknown
from rigaudit.agents.investigator import Investigator
from rigaudit.tools.model.finding import Area, CommandAction, Finding, Fix, Severity, SysctlAction, SysfsWriteAction, Where
from rigaudit.tools.probe import Probe, command_ref, file_ref

AREA: Area = "kernel_params"
CHECKS = ("kernel.iommu", "kernel.thp", "kernel.swappiness", "kernel.cmdline_pcie")
CMDLINE = "/proc/cmdline"
THP = "/sys/kernel/mm/transparent_hugepage"
IOMMU_GROUPS = "/sys/kernel/iommu_groups"
SWAPPINESS = "/proc/sys/vm/swappiness"
_SWAPPINESS_TARGET = 10
_BOOTLOADER = (
    "edit GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub and run update-grub (or, on Proxmox with systemd-boot, "
    "/etc/kernel/cmdline and proxmox-boot-tool refresh), then reboot"
)


@dataclass(frozen=True)
class GpuIommu:
    gpu: Gpu
    group: str | None
    domain_type: str | None
    """``identity`` (passthrough), ``DMA``/``DMA-FQ`` (translated), ``unmanaged``/``blocked`` (vfio)."""


@dataclass(frozen=True)
class KernelParamsFacts:
    platform: Platform
    gpus: tuple[GpuIommu, ...]
    cmdline: str | None
    groups_listed: tuple[str, ...] | None
    """Entries of /sys/kernel/iommu_groups (``None``: no such directory, i.e. no IOMMU)."""
    kernel_iommu_line: str | None
    """The kernel log's ``iommu: Default domain type`` line."""
    cpu_vendor: str | None
    thp_enabled: str | None
    thp_defrag: str | None
    compact_stall: int | None
    vmstat_error: str | None
    swappiness: int | None
    swap_total_kb: int | None
    swap_free_kb: int | None
    refs: Mapping[str, tuple[str, ...]]


def selected(text: str | None) -> str | None:
    """The bracketed choice of a sysfs selector (``always [madvise] never`` -> ``madvise``)."""
    if text is None:
        return None
    match = re.search(r"\[([^\]]+)\]", text)
    return match.group(1) if match else (text.strip() or None)


def _meminfo_kb(text: str | None, key: str) -> int | None:
    match = re.search(rf"^{key}:\s+(\d+)", text or "", re.MULTILINE)
    return int(match.group(1)) if match else None


def _int(text: str | None) -> int | None:
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


async def _gpu_iommu(probe: Probe, gpu: Gpu) -> GpuIommu:
    target = await probe.readlink(f"{PCI_DEVICES}/{gpu.bdf}/iommu_group")
    if not target:
        return GpuIommu(gpu, None, None)
    group = target.rstrip("/").rsplit("/", 1)[-1]
    kind = await probe.text(f"{IOMMU_GROUPS}/{group}/type")
    return GpuIommu(gpu, group, kind.strip() if kind else None)


async def collect(probe: Probe) -> KernelParamsFacts:
    inventory = await collect_gpus(probe)
    gpus = await probe.gather(*[lambda g=g: _gpu_iommu(probe, g) for g in inventory.gpus])
    groups = await probe.list_dir(IOMMU_GROUPS)
    paths = (CMDLINE, f"{THP}/enabled", f"{THP}/defrag", SWAPPINESS, "/proc/meminfo", "/proc/cpuinfo")
    cmdline, enabled, defrag, swappiness, meminfo, cpuinfo = await probe.gather(*[lambda p=p: probe.text(p) for p in paths])
    vmstat_read = await probe.read("/proc/vmstat")
    vmstat = vmstat_read.text()
    platform = await detect_platform(probe)
    dmesg = await probe.run(["dmesg"])
    iommu_line = next((ln.strip() for ln in dmesg.stdout.splitlines() if "Default domain type" in ln), None) if dmesg.ok else None
    vendor = re.search(r"^vendor_id\s*:\s*(\S+)", cpuinfo or "", re.MULTILINE)
    compact = re.search(r"^compact_stall\s+(\d+)", vmstat or "", re.MULTILINE)
    group_refs = tuple(f"link:{PCI_DEVICES}/{g.gpu.bdf}/iommu_group" for g in gpus) + tuple(
        file_ref(f"{IOMMU_GROUPS}/{g.group}/type") for g in gpus if g.group
    )
    return KernelParamsFacts(
        platform=platform,
        gpus=tuple(gpus),
        cmdline=cmdline.strip() if cmdline is not None else None,
        groups_listed=groups.entries,
        kernel_iommu_line=iommu_line,
        cpu_vendor=vendor.group(1) if vendor else None,
        thp_enabled=selected(enabled),
        thp_defrag=selected(defrag),
        compact_stall=int(compact.group(1)) if compact else None,
        vmstat_error=vmstat_read.error,
        swappiness=_int(swappiness),
        swap_total_kb=_meminfo_kb(meminfo, "SwapTotal"),
        swap_free_kb=_meminfo_kb(meminfo, "SwapFree"),
        refs={
            "iommu": (file_ref(CMDLINE), *group_refs, *((command_ref(["dmesg"]),) if iommu_line else ())),
            "thp": (file_ref(f"{THP}/enabled"), file_ref(f"{THP}/defrag"), file_ref("/proc/vmstat")),
            "swap": (file_ref(SWAPPINESS), file_ref("/proc/meminfo")),
            "cmdline": (file_ref(CMDLINE),),
        },
    )


def _where(platform: Platform) -> Where:
    return "hypervisor" if platform.is_guest else "host"


def _tokens(cmdline: str | None) -> list[str]:
    return (cmdline or "").split()


# -- kernel.iommu --------------------------------------------------------------------------


def judge_iommu(facts: KernelParamsFacts) -> Finding:
    check, title = "kernel.iommu", "IOMMU mode for GPU DMA and P2P"
    evidence = list(facts.refs.get("iommu", ()))
    tokens = _tokens(facts.cmdline)
    iommu_args = [t for t in tokens if t.startswith(("iommu=", "amd_iommu=", "intel_iommu="))]
    args_text = " ".join(iommu_args) or "no IOMMU options"
    host_gpus = [g for g in facts.gpus if g.domain_type not in ("unmanaged", "blocked")]
    typed = [g for g in host_gpus if g.domain_type]
    translated = [g for g in typed if g.domain_type in ("DMA", "DMA-FQ")]
    if facts.cmdline is None and not typed:
        return unknown(check, AREA, title, "/proc/cmdline and the GPUs' IOMMU groups are not readable", evidence=evidence)
    if not facts.gpus:
        return ok(check, AREA, title, f"no NVIDIA GPU; command line: {args_text}", evidence=evidence)
    if not typed:
        if facts.groups_listed is not None and facts.groups_listed:
            return unknown(check, AREA, title, "IOMMU groups exist but the GPUs' group types are not readable", evidence=evidence)
        return ok(
            check,
            AREA,
            title,
            f"no IOMMU groups: DMA is not translated ({args_text})",
            expected="passthrough (identity) or no IOMMU for GPU DMA on bare metal",
            explanation="With no IOMMU domain, GPU DMA and PCIe P2P go untranslated.",
            evidence=evidence,
        )
    if not translated:
        kinds = sorted({g.domain_type or "" for g in typed})
        observed = f"{args_text}; {len(typed)}/{len(facts.gpus)} GPU IOMMU groups {'/'.join(kinds)}"
        observed += " (passthrough)" if kinds == ["identity"] else ""
        vfio = len(facts.gpus) - len(host_gpus)
        if vfio:
            observed += f"; {vfio} GPU(s) in vfio-owned groups (passed to VMs)"
        return ok(
            check,
            AREA,
            title,
            observed,
            expected="identity (passthrough) domains for host GPUs",
            explanation="GPU DMA bypasses IOMMU translation, which is what NVIDIA supports for PCIe P2P on bare metal.",
            evidence=evidence,
        )
    observed = f"{args_text}; {len(translated)}/{len(facts.gpus)} GPU IOMMU groups translated ({translated[0].domain_type})"
    if facts.kernel_iommu_line:
        observed += f"; kernel: {facts.kernel_iommu_line}"
    if facts.platform.kind == "vm":
        return ok(
            check,
            AREA,
            title,
            observed,
            expected="translated DMA is normal inside a VM guest",
            explanation="Inside a VM the guest's IOMMU (if any) is virtual; GPU DMA isolation is the hypervisor's job, and "
            "P2P between passed-through GPUs depends on the hypervisor's configuration, not the guest's iommu= option.",
            evidence=evidence,
        )
    host_count = len(host_gpus)
    if host_count < 2:
        return ok(
            check,
            AREA,
            title,
            observed,
            expected="passthrough on multi-GPU hosts",
            explanation="Translated DMA costs some IOTLB overhead, but with a single GPU there is no GPU-to-GPU P2P "
            "for it to break.",
            evidence=evidence,
        )
    vendor_opt = {"AuthenticAMD": "amd_iommu=on ", "GenuineIntel": "intel_iommu=on "}.get(facts.cpu_vendor or "", "")
    fix = Fix(
        kind="reboot",
        where=_where(facts.platform),
        summary=f"Boot with {vendor_opt}iommu=pt so host GPUs get identity (passthrough) DMA domains",
        actions=(CommandAction(description=f"Add '{vendor_opt}iommu=pt' to the kernel command line: {_BOOTLOADER}"),),
        risk="low",
        verify="cat /sys/kernel/iommu_groups/*/type shows identity for the GPUs' groups; dmesg shows "
        "'iommu: Default domain type: Passthrough'",
        revert="remove iommu=pt from the command line, update the boot loader, reboot",
        persist="the command line persists once the boot loader is updated",
    )
    return problem(
        check,
        AREA,
        title,
        "high",
        observed=observed,
        expected="identity (passthrough) domains for GPUs on a bare-metal multi-GPU host",
        explanation="With translated IOMMU domains every GPU DMA goes through the IOMMU; NVIDIA does not support PCIe P2P "
        "through a translating IOMMU: peer copies can fail, hang or silently corrupt data, and NCCL falls back to "
        "slower paths. iommu=pt keeps the IOMMU on (VFIO and interrupt remapping still work) but gives host-owned "
        "devices identity mappings.",
        fix=fix,
        subjects=[g.gpu.label for g in translated],
        evidence=evidence,
    )


# -- kernel.thp ----------------------------------------------------------------------------


def judge_thp(facts: KernelParamsFacts) -> Finding:
    check, title = "kernel.thp", "Transparent huge pages and compaction stalls"
    evidence = list(facts.refs.get("thp", ()))
    if facts.thp_enabled is None or facts.thp_defrag is None:
        return unknown(check, AREA, title, f"{THP}/enabled or defrag not readable", evidence=evidence)
    observed = f"enabled={facts.thp_enabled}, defrag={facts.thp_defrag}"
    synchronous = facts.thp_enabled == "always" and facts.thp_defrag == "always"
    if not synchronous:
        return ok(
            check,
            AREA,
            title,
            observed,
            expected="no synchronous compaction for every allocation (defrag madvise/defer)",
            evidence=evidence,
        )
    if facts.compact_stall is None:
        why = f"/proc/vmstat not readable: {facts.vmstat_error}" if facts.vmstat_error else "no compact_stall counter"
        return ok(
            check,
            AREA,
            title,
            f"{observed}; compaction stalls unknown ({why})",
            expected="no compaction stalls",
            explanation="THP always with synchronous defrag can stall page faults in direct compaction, but without "
            "/proc/vmstat it is unknown whether stalls happen here; check compact_stall growth under load.",
            evidence=evidence,
        )
    if facts.compact_stall == 0:
        return ok(check, AREA, title, f"{observed}; compact_stall 0", expected="no compaction stalls", evidence=evidence)
    path = f"{THP}/defrag"
    fix = Fix(
        kind="runtime",
        where=_where(facts.platform),
        summary="Compact only for madvise()d regions: defrag=madvise",
        actions=(SysfsWriteAction(paths=(path,), value="madvise"),),
        risk="low",
        verify=f"cat {path} shows [madvise]; compact_stall in /proc/vmstat stops rising under load",
        revert=f"echo {facts.thp_defrag} > {path}",
        persist="echo 'w /sys/kernel/mm/transparent_hugepage/defrag - - - - madvise' > /etc/tmpfiles.d/90-rigaudit-thp.conf",
    )
    return problem(
        check,
        AREA,
        title,
        "low",
        observed=f"{observed}; compact_stall {facts.compact_stall}",
        expected="defrag madvise (or defer) on a serving host",
        explanation="With THP 'always' and synchronous defrag, a page fault that cannot get a huge page compacts memory "
        "in the faulting thread: the CPU thread feeding the GPUs stalls for milliseconds. compact_stall counts these "
        "stalls since boot. defrag=madvise keeps huge pages where asked for and removes the stalls elsewhere.",
        fix=fix,
        evidence=evidence,
    )


# -- kernel.swappiness ---------------------------------------------------------------------


def judge_swappiness(facts: KernelParamsFacts) -> Finding:
    check, title = "kernel.swappiness", "Swappiness and swap in use"
    evidence = list(facts.refs.get("swap", ()))
    if facts.swappiness is None:
        return unknown(check, AREA, title, f"{SWAPPINESS} not readable", evidence=evidence)
    total, free = facts.swap_total_kb, facts.swap_free_kb
    if total is None or free is None:
        return ok(
            check,
            AREA,
            title,
            f"vm.swappiness={facts.swappiness}; swap use unknown (/proc/meminfo not readable)",
            explanation="Swappiness only matters when swap is actually used.",
            evidence=evidence,
        )
    used_mib = (total - free) // 1024
    observed = f"vm.swappiness={facts.swappiness}; swap {used_mib} MiB used of {total // 1024} MiB"
    if used_mib <= 0 or facts.swappiness <= _SWAPPINESS_TARGET:
        explanation = (
            "No swap in use, so swappiness has no effect now."
            if used_mib <= 0
            else ("Swap is in use although swappiness is already low: that is memory pressure, not this knob.")
        )
        return ok(
            check,
            AREA,
            title,
            observed,
            expected="no swapping of the serving process",
            explanation=explanation,
            evidence=evidence,
        )
    fix = Fix(
        kind="runtime",
        where=_where(facts.platform),
        summary=f"Prefer dropping page cache to swapping anonymous memory: vm.swappiness={_SWAPPINESS_TARGET}",
        actions=(SysctlAction(key="vm.swappiness", value=str(_SWAPPINESS_TARGET)),),
        risk="low",
        verify=f"cat {SWAPPINESS} shows {_SWAPPINESS_TARGET}; SwapFree in /proc/meminfo stops falling",
        revert=f"sysctl -w vm.swappiness={facts.swappiness}",
        persist=f"echo vm.swappiness={_SWAPPINESS_TARGET} > /etc/sysctl.d/90-rigaudit-swappiness.conf",
    )
    return problem(
        check,
        AREA,
        title,
        "low",
        observed=observed,
        expected=f"vm.swappiness<={_SWAPPINESS_TARGET} with swap in use",
        explanation="Pages of the serving process (tokenizer, scheduler, pinned-buffer bookkeeping) that are swapped out "
        "cost a disk read on the next touch: latency spikes on the CPU path that feeds the GPUs. A lower swappiness "
        "makes the kernel reclaim page cache first.",
        fix=fix,
        evidence=evidence,
    )


# -- kernel.cmdline_pcie -------------------------------------------------------------------


def judge_cmdline_pcie(facts: KernelParamsFacts) -> Finding:
    check, title = "kernel.cmdline_pcie", "PCIe options on the kernel command line"
    evidence = list(facts.refs.get("cmdline", ()))
    if facts.cmdline is None:
        return unknown(check, AREA, title, f"{CMDLINE} not readable", evidence=evidence)
    tokens = _tokens(facts.cmdline)
    found: list[str] = []
    reasons: list[str] = []
    severity: Severity = "low"
    for token in tokens:
        if token.startswith("pci=") and "pcie_bus_perf" in token[4:].split(","):
            found.append(token)
            reasons.append(
                "pci=pcie_bus_perf sets every device's MaxReadReq to its MaxPayload (256-512 bytes), "
                "undoing a large MaxReadReq and cutting GPU DMA read bandwidth"
            )
            severity = "medium"
        elif token == "pcie_aspm=force":
            found.append(token)
            reasons.append(
                "pcie_aspm=force enables link power states even on devices that do not claim to support "
                "them: L1 exit latency on every GPU transfer, and link errors or hangs on some platforms"
            )
            severity = "medium"
    pcie_opts = [t for t in tokens if t.startswith(("pci=", "pcie_aspm", "pcie_ports"))]
    if not found:
        return ok(
            check,
            AREA,
            title,
            f"no harmful PCIe options ({' '.join(pcie_opts) or 'none set'})",
            expected="no pci=pcie_bus_perf, no pcie_aspm=force",
            evidence=evidence,
        )
    fix = Fix(
        kind="reboot",
        where=_where(facts.platform),
        summary=f"Remove {' '.join(found)} from the kernel command line",
        actions=(CommandAction(description=f"Remove '{' '.join(found)}' from the kernel command line: {_BOOTLOADER}"),),
        risk="low",
        verify=f"cat {CMDLINE} no longer contains {' '.join(found)}",
        revert=f"add '{' '.join(found)}' back and reboot",
        persist="the command line persists once the boot loader is updated",
    )
    return problem(
        check,
        AREA,
        title,
        severity,
        observed=" ".join(found),
        expected="no pci=pcie_bus_perf, no pcie_aspm=force",
        explanation="; ".join(reasons) + ".",
        fix=fix,
        evidence=evidence,
    )


def judge(facts: KernelParamsFacts) -> list[Finding]:
    return [judge_iommu(facts), judge_thp(facts), judge_swappiness(facts), judge_cmdline_pcie(facts)]


INVESTIGATOR: Investigator[KernelParamsFacts] = Investigator(
    area=AREA, title="Kernel command line and runtime knobs", checks=CHECKS, collect=collect, judge=judge
)
