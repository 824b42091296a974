"""gpu.thermals: temperature headroom below the slowdown (or max operating) threshold."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.nvml_reads import failure_text, label, labels, nvml_unusable
from rigaudit.agents.facts.vgpu import hypervisor_side
from rigaudit.agents.investigators.gpu import premises
from rigaudit.agents.investigators.gpu.facts import GpuHealthFacts, int_values
from rigaudit.agents.investigators.gpu.hardware import hardware_fix
from rigaudit.tools.schema.finding import CommandAction, Finding, Severity

THERMAL_MARGIN_C = 10


THERMALS_CHECK = Check(
    "gpu.thermals",
    "GPU temperature headroom",
    reads="NVML temperature and slowdown / max operating thresholds",
    problem="within 10 °C of slowdown",
    fix="cooling: airflow, fan profile, inlet temperature",
    kinds=("hardware",),
    premises=(premises.PLATFORM_FIX, premises.NVML, premises.GPU_CONFIG),
)


def judge_thermals(f: GpuHealthFacts) -> Finding:
    if why := nvml_unusable(f.inventory):
        return THERMALS_CHECK.unknown(why)
    temps = int_values(f.temperature)
    if not temps and (why := hypervisor_side(f.inventory, "temperatures and cooling")):
        return THERMALS_CHECK.unknown(why, evidence=f.temperature.refs)
    limits, kind, limit_reads = int_values(f.slowdown), "slowdown", f.slowdown
    if not limits:
        limits, kind, limit_reads = int_values(f.gpu_max), "max operating", f.gpu_max
    refs = f.temperature.refs + limit_reads.refs
    judged = sorted(set(temps) & set(limits))
    if not judged:
        why = failure_text(f.temperature, f.inventory) if not temps else failure_text(f.slowdown, f.inventory)
        return THERMALS_CHECK.unknown(why, evidence=refs)
    headroom = {i: limits[i] - temps[i] for i in judged}
    hot = [i for i in judged if headroom[i] < THERMAL_MARGIN_C]
    if not hot:
        lo, hi = min(temps[i] for i in judged), max(temps[i] for i in judged)
        limit_text = "/".join(sorted({str(limits[i]) for i in judged}))
        return THERMALS_CHECK.ok(
            f"{lo}–{hi} °C, {kind} at {limit_text} °C: ≥ {min(headroom.values())} °C headroom on {len(judged)}/"
            f"{len(f.temperature.results)} GPUs",
            expected=f"more than {THERMAL_MARGIN_C} °C below the {kind} threshold",
            explanation="Read once; at idle a GPU runs far cooler than under a long decode run. Re-check under load.",
            evidence=refs,
        )
    observed = "; ".join(f"{label(f.inventory, i)}: {temps[i]} °C, {kind} at {limits[i]} °C" for i in hot)
    severity: Severity = "high" if any(headroom[i] <= 0 for i in hot) else "medium"
    fix = hardware_fix(
        f.inventory,
        f.platform,
        hot,
        "Improve cooling of " + ", ".join(labels(f.inventory, hot)) + ": airflow, fan profile, inlet temperature",
        (
            CommandAction(
                description="check the chassis fan profile in the BMC (full speed for passive GPUs), inlet "
                "temperature, blanking panels, blocked or dusty intakes, and GPU placement"
            ),
        ),
        "nvidia-smi --query-gpu=index,temperature.gpu,clocks_event_reasons.active --format=csv under load: "
        f"temperature more than {THERMAL_MARGIN_C} °C below {kind}, no thermal reasons",
        revert="none: cooling changes are not reverted",
        persist="BMC fan settings persist",
    )
    return THERMALS_CHECK.problem_at(
        severity,
        observed,
        f"more than {THERMAL_MARGIN_C} °C below the {kind} threshold",
        "Near the slowdown threshold the GPU lowers its clocks to protect itself; in a TP group the slowest GPU sets "
        "the pace of every all-reduce, so one hot card slows the whole server. Passive datacenter cards depend "
        "entirely on the chassis fans.",
        fix,
        subjects=labels(f.inventory, hot),
        evidence=refs,
    )
