"""gpu.app_clocks: application clocks below their defaults, or clocks held by the applications-clocks setting."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.gpu_address import index_selector
from rigaudit.agents.facts.gpus import GpuInventory
from rigaudit.agents.facts.nvml_reads import GpuReads, label, labels, nvml_unusable, read_per_gpu
from rigaudit.agents.facts.platform import Platform
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.facts.vgpu import hypervisor_side
from rigaudit.agents.investigators.gpu import premises
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix

GRAPHICS, MEMORY = 0, 2
"""nvmlClockType_t."""
APP_CLOCKS_REASON = 0x2
"""nvmlClocksEventReasonApplicationsClocksSetting: clocks held by application (or locked) clocks."""


class AppClockFacts(Record):
    inventory: GpuInventory
    platform: Platform
    app: dict[int, GpuReads]
    default: dict[int, GpuReads]


async def collect_app_clocks(probe: Probe, inventory: GpuInventory, platform: Platform) -> AppClockFacts:
    app, default = {}, {}
    for clock in (GRAPHICS, MEMORY):
        app[clock] = await read_per_gpu(probe, inventory, "nvmlDeviceGetApplicationsClock", clock)
        default[clock] = await read_per_gpu(probe, inventory, "nvmlDeviceGetDefaultApplicationsClock", clock)
    return AppClockFacts(inventory, platform, app, default)


def _int(reads: GpuReads, index: int) -> int | None:
    value = reads.value(index)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


APP_CLOCKS_CHECK = Check(
    "gpu.app_clocks",
    "Application and locked clocks",
    reads=(
        "NVML `nvmlDeviceGetApplicationsClock` vs `nvmlDeviceGetDefaultApplicationsClock` (graphics, memory); clock "
        "event reason 0x2"
    ),
    problem="application clocks below their defaults, or clocks held by the applications-clocks (locked clocks) setting",
    fix="`nvidia-smi -rac`, `nvidia-smi -rgc` (by a person)",
    kinds=("runtime",),
    premises=(premises.NVML, premises.GPU_CONFIG),
)


def _below_default(f: AppClockFacts) -> tuple[dict[int, list[str]], set[int]]:
    """Per GPU, its application clocks below their defaults; and the GPUs compared at all."""
    low: dict[int, list[str]] = {}
    compared = set()
    for clock, name in ((GRAPHICS, "graphics"), (MEMORY, "memory")):
        for index in f.inventory.nvml_indices:
            current, default = _int(f.app[clock], index), _int(f.default[clock], index)
            if current is None or default is None:
                continue
            compared.add(index)
            if current < default:
                low.setdefault(index, []).append(f"{name} {current} MHz (default {default} MHz)")
    return low, compared


def _at_defaults(f: AppClockFacts, compared: set[int], refs: tuple[str, ...], reason_refs: tuple[str, ...]) -> Finding:
    """No clock low or held: ok where compared, else why nothing was."""
    if compared:
        return APP_CLOCKS_CHECK.ok(
            f"application clocks at their defaults on {len(compared)}/{len(f.inventory.nvml_indices)} GPUs; "
            "no clock held by the applications-clocks setting",
            expected="application clocks = defaults; no locked clocks",
            evidence=refs + reason_refs,
        )
    errors = {e for reads in f.app.values() for e in reads.failed().values()}
    if errors == {"NOT_SUPPORTED"}:
        return APP_CLOCKS_CHECK.not_applicable(
            "these GPUs do not support application clocks (NOT_SUPPORTED); locked clocks would show as clock "
            "event reason 0x2, which is not set",
            evidence=refs + reason_refs,
        )
    shown = ", ".join(sorted("not recorded in this snapshot" if e == "NOT_RECORDED" else e for e in errors))
    return APP_CLOCKS_CHECK.unknown(f"nvmlDeviceGetApplicationsClock: {shown or 'no value'}", evidence=refs)


def _reset_clocks_fix(f: AppClockFacts, subjects: list[int]) -> Fix:
    where = layer_where(f.platform, "gpu_driver")
    arg = {i: index_selector(f.inventory, i, where) for i in subjects}
    return Fix(
        kind="runtime",
        where=where,
        summary="Reset application and locked clocks to their defaults (run by a person; rigaudit never changes GPU "
        "settings automatically)",
        actions=(
            *(
                CommandAction(description=f"GPU{i}: reset application clocks", argv=("nvidia-smi", "-i", arg[i], "-rac"))
                for i in subjects
            ),
            *(
                CommandAction(description=f"GPU{i}: reset locked GPU clocks", argv=("nvidia-smi", "-i", arg[i], "-rgc"))
                for i in subjects
            ),
        ),
        risk="low",
        verify="nvidia-smi -q -d CLOCK: Applications Clocks = Default Applications Clocks; no 'Applications Clocks "
        "Setting' among the clocks event reasons",
        revert="nvidia-smi -ac MEM,GRAPHICS / -lgc MIN,MAX with the previous values",
        persist="clocks return to defaults when the driver reloads: remove the unit or script that sets them at boot",
    )


def judge_app_clocks(f: AppClockFacts, reasons: dict[int, int], reason_refs: tuple[str, ...]) -> Finding:
    if why := nvml_unusable(f.inventory):
        return APP_CLOCKS_CHECK.unknown(why)
    if why := hypervisor_side(f.inventory, "application and locked clocks"):
        return APP_CLOCKS_CHECK.unknown(why)
    refs = tuple(r for reads in (*f.app.values(), *f.default.values()) for r in reads.refs)
    low, compared = _below_default(f)
    held = sorted(i for i, mask in reasons.items() if mask & APP_CLOCKS_REASON)
    if not low and not held:
        return _at_defaults(f, compared, refs, reason_refs)
    subjects = sorted(set(low) | set(held))
    parts = [f"{label(f.inventory, i)}: {', '.join(low[i])}" for i in sorted(low)]
    parts += [f"{label(f.inventory, i)}: clock event reason 0x2 (applications clocks / locked clocks)" for i in held]
    return APP_CLOCKS_CHECK.problem_at(
        "medium",
        "; ".join(parts),
        "application clocks = defaults; no locked clocks",
        "Someone lowered the application clocks (nvidia-smi -ac) or locked the GPU clocks (nvidia-smi -lgc/-lmc), "
        "often for a benchmark, power test or stability work-around. The GPU then never boosts past that value: "
        "prefill slows with the graphics clock and decode with the memory clock. Keep them only if they are a "
        "deliberate power or stability decision.",
        _reset_clocks_fix(f, subjects),
        subjects=labels(f.inventory, subjects),
        evidence=refs + reason_refs,
    )
