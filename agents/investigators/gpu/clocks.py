"""gpu.clocks: clock event reasons that mean thermal or electrical slowdown."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.nvml_reads import failure_text, label, labels, nvml_unusable
from rigaudit.agents.facts.vgpu import hypervisor_side
from rigaudit.agents.investigators.gpu import premises
from rigaudit.agents.investigators.gpu.facts import GpuHealthFacts, int_values
from rigaudit.agents.investigators.gpu.hardware import hardware_fix
from rigaudit.tools.schema.finding import CommandAction, Finding, Severity

CLOCK_REASONS = {
    0x1: "GPU idle",
    0x2: "applications clocks setting",
    0x4: "SW power cap",
    0x8: "HW slowdown",
    0x10: "sync boost",
    0x20: "SW thermal slowdown",
    0x40: "HW thermal slowdown",
    0x80: "HW power brake slowdown",
    0x100: "display clock setting",
}
BAD_CLOCK_BITS = 0x8 | 0x20 | 0x40 | 0x80


def _reason_names(mask: int) -> str:
    names = [name for bit, name in CLOCK_REASONS.items() if mask & bit]
    return ", ".join(names) if names else "none"


CLOCKS_CHECK = Check(
    "gpu.clocks",
    "GPU clock event reasons",
    reads="NVML current clocks event reasons",
    problem="HW slowdown (0x8), SW/HW thermal (0x20/0x40) or HW power brake (0x80) set; SW power cap and idle are normal",
    fix="cooling, power delivery",
    kinds=("hardware",),
    premises=(premises.PLATFORM_FIX, premises.NVML),
)


def judge_clocks(f: GpuHealthFacts) -> Finding:
    if why := nvml_unusable(f.inventory):
        return CLOCKS_CHECK.unknown(why)
    reads = f.reasons if int_values(f.reasons) else f.throttle
    masks = int_values(reads)
    if not masks and (why := hypervisor_side(f.inventory, "clock event reasons (thermal and power slowdowns)")):
        return CLOCKS_CHECK.unknown(why, evidence=f.reasons.refs)
    if not masks:
        return CLOCKS_CHECK.unknown(failure_text(f.reasons, f.inventory), evidence=f.reasons.refs)
    bad = {i: m & BAD_CLOCK_BITS for i, m in masks.items() if m & BAD_CLOCK_BITS}
    if not bad:
        seen = sorted({m for m in masks.values()})
        summary = "; ".join(f"{hex(m)} ({_reason_names(m)})" for m in seen)
        return CLOCKS_CHECK.ok(
            f"{summary} on {len(masks)}/{len(reads.results)} GPUs: no thermal or power-brake reason",
            expected="no HW slowdown (0x8), SW/HW thermal (0x20/0x40) or power brake (0x80)",
            explanation="SW power cap (0x4) under load is the normal state at the power limit; idle (0x1) is fine. "
            "A snapshot taken at idle cannot show throttling that only happens under load.",
            evidence=reads.refs,
        )
    observed = "; ".join(f"{label(f.inventory, i)}: {hex(masks[i])} ({_reason_names(masks[i])})" for i in bad)
    any_bits = 0
    for m in bad.values():
        any_bits |= m
    severity: Severity = "high" if any_bits & (0x8 | 0x40 | 0x80) else "medium"
    steps = []
    if any_bits & (0x20 | 0x40 | 0x8):
        steps.append("thermal: check airflow, fan profile and inlet temperature (see gpu.thermals)")
    if any_bits & (0x80 | 0x8):
        steps.append(
            "power brake / HW slowdown: check PSU redundancy and health, the GPU power cables "
            "(12V-2x6 seated fully), and BMC power capping"
        )
    fix = hardware_fix(
        f.inventory,
        f.platform,
        bad,
        "Remove the cause of hardware clock slowdown on " + ", ".join(labels(f.inventory, list(bad))),
        tuple(CommandAction(description=s) for s in steps),
        "nvidia-smi --query-gpu=index,clocks_event_reasons.active --format=csv under load shows no 0x8/0x20/0x40/0x80",
    )
    return CLOCKS_CHECK.problem_at(
        severity,
        observed,
        "no HW slowdown, thermal or power-brake reasons",
        "These reasons mean the GPU is running below its boost clocks for thermal or electrical protection, not "
        "because of its power limit: decode slows by the clock ratio, and in a TP group the slowest GPU gates all. "
        "HW power brake is asserted from outside the GPU (PSU or board), so it points at power delivery.",
        fix,
        subjects=labels(f.inventory, list(bad)),
        evidence=reads.refs,
    )
