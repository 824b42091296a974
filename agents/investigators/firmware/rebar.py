"""firmware.rebar: is BAR1 large enough to map a GPU's memory (Resizable BAR / Above 4G decoding)?"""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.gpu_models import product_line, unified_memory
from rigaudit.agents.facts.vgpu import hypervisor_side
from rigaudit.agents.investigators.cloud import for_cloud
from rigaudit.agents.investigators.firmware import premises
from rigaudit.agents.investigators.firmware.facts import (
    NVIDIA_BAR1,
    FirmwareFacts,
    GpuFirmware,
    MiB,
    firmware_fix,
    size_text,
)
from rigaudit.tools.schema.finding import Finding, Fix, Severity

REBAR_CHECK = Check(
    "firmware.rebar",
    "GPU BAR1 size (Resizable BAR / Above 4G decoding)",
    reads="NVML BAR1 total vs framebuffer total; PCI extended capability 0x15 (Resizable BAR)",
    problem="BAR1 far below VRAM (e.g. 256 MiB); low where nothing reaches GPU memory through it (no PCIe peer "
    "traffic, no active RDMA NIC)",
    fix="BIOS: Above 4G decoding + Re-Size BAR",
    kinds=("firmware",),
    premises=(premises.PLATFORM, premises.GPUS, premises.P2P),
)


def judge_rebar(facts: FirmwareFacts) -> Finding:
    if not facts.gpus:
        return REBAR_CHECK.not_applicable("no NVIDIA GPU found")
    evidence = [r for g in facts.gpus for r in g.refs if "Vbios" not in r and "/information" not in r]
    if why := hypervisor_side([g.gpu for g in facts.gpus], "the board's BAR1 and Resizable BAR"):
        return REBAR_CHECK.not_applicable(
            f"{why}. A vGPU's BAR1 is the window the vGPU manager gives it, not a BAR the firmware sizes",
            evidence=evidence,
        )
    known = [g for g in facts.gpus if g.bar1 is not None]
    if not known and all(unified_memory(g.gpu.name) for g in facts.gpus):
        return REBAR_CHECK.not_applicable(
            f"{', '.join(sorted({g.gpu.name for g in facts.gpus}))}: the GPU shares the system's memory (no framebuffer "
            "of its own, NVML answers no BAR1), so there is no BAR1 for the firmware to size",
            evidence=evidence,
        )
    if not known:
        why = f"BAR1 size not readable (NVML: {facts.nvml_error or 'no BAR1 info'}; sysfs resource not readable)"
        return REBAR_CHECK.unknown(why, evidence=evidence)
    small = [g for g in known if _bar1_small(g)]
    sizes = _rebar_sizes(known)
    if not small:
        return _bar1_large(facts, known, sizes, evidence)
    at_top = [g for g, cur, top in sizes if g in small and top is not None and top <= cur]
    if len(at_top) == len(small):
        return REBAR_CHECK.ok(
            "; ".join(f"{g.gpu.label}: BAR1 {size_text(g.bar1 or 0)}, the largest size it supports" for g in small),
            expected="BAR1 at the largest supported size",
            explanation="The Resizable BAR capability shows BAR1 already at the largest size this GPU offers: a product "
            "limit, not a firmware setting.",
            evidence=evidence,
        )
    return _bar1_small_problem(facts, small, sizes, evidence)


def _bar1_small(gpu: GpuFirmware) -> bool:
    """BAR1 under a quarter of VRAM (256 MiB when VRAM is unknown), or 256 MiB and less."""
    bar1 = gpu.bar1 or 0
    limit = gpu.vram // 4 if gpu.vram else 256 * MiB
    return bar1 < limit or bar1 <= 256 * MiB


def _rebar_sizes(known: list[GpuFirmware]) -> list[tuple[GpuFirmware, int, int | None]]:
    """(GPU, BAR1's current size, the largest it supports) where the Resizable BAR capability shows BAR1."""
    sizes = []
    for g in known:
        cap = g.config.config.rebar if g.config and g.config.config else None
        bar = cap.bar(NVIDIA_BAR1) if cap else None
        if bar is not None:
            sizes.append((g, bar.current_size, bar.largest_supported))
    return sizes


def _bar1_large(
    facts: FirmwareFacts,
    known: list[GpuFirmware],
    sizes: list[tuple[GpuFirmware, int, int | None]],
    evidence: list[str],
) -> Finding:
    bars = sorted({size_text(g.bar1 or 0) for g in known})
    vram = sorted({size_text(g.vram) for g in known if g.vram})
    observed = f"BAR1 {'/'.join(bars)} on {len(known)}/{len(facts.gpus)} GPUs"
    observed += f" (VRAM {'/'.join(vram)})" if vram else ""
    if sizes:
        at_max = sum(1 for _, cur, top in sizes if top is not None and cur >= top)
        observed += f"; Resizable BAR capability present, BAR1 at its largest supported size on {at_max}/{len(sizes)}"
    return REBAR_CHECK.ok(
        observed,
        expected="BAR1 at least as large as VRAM (or the largest size the GPU supports)",
        explanation="A large BAR1 lets the driver map all of a GPU's memory for PCIe peer access and GPUDirect RDMA.",
        evidence=evidence,
    )


def _bar1_unused(facts: FirmwareFacts) -> str | None:
    """Why nothing reaches GPU memory through BAR1 at scale (no PCIe peer traffic, no GPUDirect RDMA NIC); None: something may."""
    ctx = facts.context
    unused = ctx.p2p_refused() if ctx is not None and not ctx.rdma_active else None
    return unused if unused is not None and ctx is not None and not ctx.all_nvlink else None


def _bar1_small_problem(
    facts: FirmwareFacts,
    small: list[GpuFirmware],
    sizes: list[tuple[GpuFirmware, int, int | None]],
    evidence: list[str],
) -> Finding:
    can_grow = [g for g, cur, top in sizes if g in small and top is not None and top > cur]
    cap_unknown = [g for g in small if not (g.config and g.config.config and g.config.config.extended_known)]
    large_bar_line = all(product_line(g.gpu.name) in ("datacenter", "workstation") for g in small)
    unused = _bar1_unused(facts)
    severity: Severity = "medium" if (can_grow or cap_unknown or large_bar_line) and unused is None else "low"
    observed = "; ".join(
        f"{g.gpu.label}: BAR1 {size_text(g.bar1 or 0)}" + (f" vs VRAM {size_text(g.vram)}" if g.vram else "") for g in small
    )
    if can_grow:
        observed += f"; Resizable BAR supports a larger BAR1 on {len(can_grow)} of them"
    return REBAR_CHECK.problem_at(
        severity,
        observed=observed,
        expected="BAR1 at least as large as VRAM",
        explanation=_small_bar1_explanation(bool(can_grow or cap_unknown), large_bar_line, unused),
        fix=for_cloud(_bios_fix(facts), facts.platform, [g.gpu for g in small]),  # a cloud's firmware: the provider's
        subjects=[g.gpu.label for g in small],
        evidence=evidence,
    )


def _small_bar1_explanation(resizable: bool, large_bar_line: bool, unused: str | None) -> str:
    """What a small BAR1 costs, why it is a setting (or may be the model), and what it costs here."""
    return (
        "BAR1 is the window through which the CPU, peer GPUs (PCIe P2P) and RDMA NICs reach GPU memory. A "
        "256 MiB window forces the driver to remap constantly or refuse large peer/RDMA registrations; with Above 4G "
        "decoding and Resizable BAR the firmware maps all of VRAM at boot."
        + (
            ""
            if resizable
            else " Data-center and professional GPUs map their whole memory through BAR1 when the firmware allows "
            "(Above 4G decoding; a VM needs a large enough 64-bit MMIO window), so a 256 MiB BAR1 here is a firmware or "
            "VM setting, not the model (medium)."
            if large_bar_line
            else " These GPUs expose no Resizable BAR capability: some models have a fixed small BAR1, so check the "
            "model's specification before changing firmware settings."
        )
        + (
            f" What it costs here: little ({unused}; no active RDMA NIC), so low: copies between host and GPU use the "
            "copy engines, not BAR1. It matters once P2P or GPUDirect RDMA is used (a driver with P2P for these cards "
            "maps all of VRAM through BAR1)."
            if unused
            else ""
        )
    )


def _bios_fix(facts: FirmwareFacts) -> Fix:
    return firmware_fix(
        facts.platform,
        "Enable Above 4G Decoding and Re-Size BAR Support in the BIOS/UEFI, then reboot",
        "BIOS/UEFI: PCI Subsystem Settings: Above 4G Decoding = Enabled, Re-Size BAR Support = "
        "Enabled (Auto); boot in UEFI mode; on a hypervisor also give the VM a large enough 64-bit MMIO window",
        "nvidia-smi -q -d MEMORY: BAR1 Memory Usage Total at least the framebuffer size; lspci -vvv: "
        "'Physical Resizable BAR: BAR 1: current size' at the largest supported size",
    )
