"""Power, GPU side: power limits and performance states."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.gpu_address import index_selector
from rigaudit.agents.facts.gpu_models import unified_memory
from rigaudit.agents.facts.gpus import GpuInventory, collect_gpus
from rigaudit.agents.facts.platform import Platform
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.facts.processes import find_servers
from rigaudit.agents.facts.vgpu import hypervisor_side
from rigaudit.agents.investigators.power import premises
from rigaudit.agents.investigators.power.cpu_facts import cap
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, nvml_ref
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix, Severity, Where

PSTATE_FN = "nvmlDeviceGetPerformanceState"
UTIL_FN = "nvmlDeviceGetUtilizationRates"
BUSY_PERCENT = 50
"""GPU utilization at which a GPU is doing work and should be in a high performance state."""
MAX_BUSY_PSTATE = 2
"""P0 is the fastest state; compute work runs in P0 (P2 on some boards). P3 and above cap the clocks."""


def _where(platform: Platform) -> Where:
    """GPU settings belong to whoever runs the driver: the hypervisor when we run in a container."""
    return layer_where(platform, "gpu_driver")


class GpuPower(Record):
    label: str
    index: int
    enforced_mw: int | None
    default_mw: int | None
    requested_mw: int | None
    error: str | None
    refs: tuple[str, ...]


async def _gpu_power(probe: Probe) -> tuple[tuple[GpuPower, ...], str | None]:
    inventory = await collect_gpus(probe)
    if not inventory.nvml_ok:
        return (), inventory.nvml_error or "NVML unavailable"
    fns = ("nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetPowerManagementDefaultLimit", "nvmlDeviceGetPowerManagementLimit")
    indices = inventory.nvml_indices
    answers = await probe.gather(*[lambda i=i, fn=fn: probe.nvml(fn, i) for i in indices for fn in fns])
    result = []
    for n, idx in enumerate(indices):
        enforced, default, requested = answers[3 * n : 3 * n + 3]
        values = [r.value if r.ok and isinstance(r.value, int) else None for r in (enforced, default, requested)]
        label = next(g.label for g in inventory.gpus if g.index == idx)
        refs = tuple(nvml_ref(fn, (idx,)) for fn in fns)
        result.append(GpuPower(label, idx, values[0], values[1], values[2], enforced.error or default.error, refs))
    return tuple(result), None


class GpuPState(Record):
    label: str
    index: int
    pstate: int | None
    utilization: int | None
    error: str | None


class GpuPowerFacts(Record):
    platform: Platform
    gpus: tuple[GpuPower, ...]
    nvml_error: str | None
    pstates: tuple[GpuPState, ...]
    inventory: GpuInventory | None = None
    busy: frozenset[int] | None = None
    """NVML indices of the GPUs a process runs on (None: NVML's process lists were not read). Where some GPUs run
    work and others none, a cap on an idle one slows nothing now."""


async def _pstates(probe: Probe) -> tuple[GpuPState, ...]:
    inventory = await collect_gpus(probe)
    if not inventory.nvml_ok:
        return ()
    indices = inventory.nvml_indices
    states = await probe.gather(*[lambda i=i: probe.nvml(PSTATE_FN, i) for i in indices])
    usage = await probe.gather(*[lambda i=i: probe.nvml(UTIL_FN, i) for i in indices])
    out = []
    for idx, state, util in zip(indices, states, usage, strict=True):
        label = next(g.label for g in inventory.gpus if g.index == idx)
        pstate = state.value if state.ok and isinstance(state.value, int) else None
        busy = util.value.get("gpu") if util.ok and isinstance(util.value, dict) else None
        out.append(GpuPState(label, idx, pstate, busy if isinstance(busy, int) else None, state.error or util.error))
    return tuple(out)


async def collect_gpu(probe: Probe, platform: Platform) -> GpuPowerFacts:
    gpus, nvml_error = await _gpu_power(probe)
    scan = await find_servers(probe)
    busy = frozenset(p.gpu_index for p in scan.gpu_processes) if scan.nvml_listed else None
    return GpuPowerFacts(platform, gpus, nvml_error, await _pstates(probe), await collect_gpus(probe), busy)


def _nvml_unavailable(check: Check, facts: GpuPowerFacts) -> Finding | None:
    """The check's ``unknown`` when NVML did not load, else None."""
    if facts.nvml_error is None:
        return None
    return check.unknown(f"NVML unavailable: {facts.nvml_error}", evidence=("nvml:nvmlInit()",))


def _watts(mw: int | None) -> str:
    return "?" if mw is None else f"{mw / 1000:g} W"


GPU_POWER_LIMIT_CHECK = Check(
    "power.gpu_power_limit",
    "GPU power limit",
    reads="NVML enforced, requested and default power limits",
    problem="enforced below default",
    fix="`nvidia-smi -pl` (by a person), or the BMC power budget",
    kinds=("runtime",),
    premises=(premises.PLATFORM_FIX, premises.NVML, premises.GPU_CONFIG),
)


def _restore_limit_fix(facts: GpuPowerFacts, low: list[GpuPower]) -> Fix:
    """nvidia-smi -pl back to the default on each GPU below it, described for a person to run."""
    where = _where(facts.platform)
    arg = {g.index: index_selector(facts.inventory, g.index, where) if facts.inventory else str(g.index) for g in low}
    actions = tuple(
        CommandAction(
            description=f"{g.label}: restore the default power limit (described only: rigaudit never changes GPU settings)",
            argv=("nvidia-smi", "-i", arg[g.index], "-pl", f"{(g.default_mw or 0) // 1000}"),
        )
        for g in low
    )
    return Fix(
        kind="runtime",
        where=where,
        summary="Restore the default GPU power limit with nvidia-smi -pl (run by a person; rigaudit never changes GPU "
        "settings automatically)",
        actions=actions,
        risk="low",
        verify="nvidia-smi --query-gpu=index,power.limit,power.default_limit --format=csv  -> limit = default",
        revert="; ".join(f"nvidia-smi -i {arg[g.index]} -pl {(g.enforced_mw or 0) // 1000}" for g in low),
        persist="the limit holds while the driver stays loaded (keep nvidia-persistenced running); remove whatever "
        "lowers it at boot (a systemd unit or script running nvidia-smi -pl) or re-apply it from a oneshot unit",
    )


def _all_unified(inventory: GpuInventory) -> bool:
    return bool(inventory.gpus) and all(unified_memory(g.name) for g in inventory.gpus)


def judge_gpu_power_limit(facts: GpuPowerFacts) -> Finding:
    if (unavailable := _nvml_unavailable(GPU_POWER_LIMIT_CHECK, facts)) is not None:
        return unavailable
    known = [g for g in facts.gpus if g.enforced_mw is not None and g.default_mw is not None]
    refs = [r for g in facts.gpus for r in g.refs[:2]]
    if not known and facts.inventory is not None and (why := hypervisor_side(facts.inventory, "power limits")):
        return GPU_POWER_LIMIT_CHECK.unknown(why, evidence=cap(refs))
    if not known and facts.inventory is not None and _all_unified(facts.inventory):
        return GPU_POWER_LIMIT_CHECK.not_applicable(
            "the GPU of a system-on-chip that shares the system's memory and power (NVML: no power limit, "
            "NOT_SUPPORTED): there is no board limit to lower or restore",
            evidence=cap(refs),
        )
    if not known:
        errors = sorted({g.error or "no value" for g in facts.gpus}) or ["no GPUs"]
        return GPU_POWER_LIMIT_CHECK.unknown(f"power limits not readable: {', '.join(errors)}", evidence=cap(refs))
    low = [g for g in known if (g.enforced_mw or 0) < (g.default_mw or 0)]
    if not low:
        values = sorted({_watts(g.enforced_mw) for g in known})
        note = f" ({len(facts.gpus) - len(known)} GPUs unreadable)" if len(known) < len(facts.gpus) else ""
        observed = f"enforced = default ({', '.join(values)}) on {len(known)}/{len(facts.gpus)} GPUs{note}"
        return GPU_POWER_LIMIT_CHECK.ok(observed, expected="enforced limit = default limit", evidence=cap(refs))
    working = [g for g in low if not facts.busy or g.index in facts.busy]  # nothing running: no GPU is a spare
    ratio = min((g.enforced_mw or 0) / (g.default_mw or 1) for g in working or low)
    severity: Severity = "medium" if ratio < 0.9 and working else "low"
    idle = [g.label for g in low if g not in working]
    user_capped = [g for g in low if g.requested_mw is not None and g.requested_mw < (g.default_mw or 0)]
    fix = _restore_limit_fix(facts, low)
    other = (
        ""
        if user_capped
        else (
            " The requested (management) limit is already the default, so something else enforces the lower value "
            "(a platform power brake, a BMC/chassis budget or another enforcer): nvidia-smi -pl will not lift it; check the BMC."
        )
    )
    explanation = (
        "The enforced power limit is below the board's default, so the GPU lowers its clocks when a heavy phase "
        "(prefill, large batches) reaches the cap; memory-bound single-stream decode suffers less. Lower limits are "
        "sometimes deliberate (PSU or cooling budget): confirm before raising them."
        + other
        + (
            f" No process runs on {', '.join(idle)} now (NVML's process lists): the cap slows nothing there until a "
            "server is placed on them."
            if idle
            else ""
        )
    )
    observed = ", ".join(f"{g.label}: {_watts(g.enforced_mw)} of {_watts(g.default_mw)}" for g in low)
    return GPU_POWER_LIMIT_CHECK.problem_at(
        severity,
        observed,
        "enforced limit = default limit",
        explanation,
        fix,
        subjects=tuple(g.label for g in low),
        evidence=cap([r for g in low for r in g.refs]),
    )


GPU_PSTATE_CHECK = Check(
    "power.gpu_pstate",
    "GPU performance state under load",
    reads="NVML performance state and utilization",
    problem="a GPU at ≥ 50% utilization in P3 or lower (clocks capped); idle GPUs in P8 are normal",
    fix="find what holds the clocks (`nvidia-smi -q -d PERFORMANCE`), reset locked clocks",
    kinds=("runtime",),
    premises=(premises.NVML,),
)


def _unlock_clocks_fix(platform: Platform) -> Fix:
    """Find and remove what holds busy GPUs in a low performance state."""
    return Fix(
        kind="runtime",
        where=_where(platform),
        summary="Find what holds the busy GPUs in a low performance state (clock event reasons, locked clocks) and "
        "remove it (run by a person; rigaudit never changes GPU settings automatically)",
        actions=(
            CommandAction(description="see why the clocks are held", argv=("nvidia-smi", "-q", "-d", "PERFORMANCE")),
            CommandAction(description="reset locked GPU clocks", argv=("nvidia-smi", "-rgc")),
            CommandAction(description="reset locked memory clocks", argv=("nvidia-smi", "-rmc")),
        ),
        risk="low",
        verify="nvidia-smi --query-gpu=index,pstate,utilization.gpu --format=csv under load shows P0 (or P2)",
        revert="nvidia-smi -lgc / -lmc with the previous values",
        persist="keep nvidia-persistenced running; remove whatever locks the clocks at boot",
    )


def judge_gpu_pstate(facts: GpuPowerFacts) -> Finding:
    if (unavailable := _nvml_unavailable(GPU_PSTATE_CHECK, facts)) is not None:
        return unavailable
    refs = [nvml_ref(fn, (g.index,)) for g in facts.pstates for fn in (PSTATE_FN, UTIL_FN)]
    known = [g for g in facts.pstates if g.pstate is not None and g.utilization is not None]
    if not known:
        errors = sorted({g.error or "no value" for g in facts.pstates}) or ["no GPUs"]
        shown = ["not recorded in this snapshot" if e == "NOT_RECORDED" else e for e in errors]
        return GPU_PSTATE_CHECK.unknown(f"performance state or utilization not readable: {', '.join(shown)}", evidence=cap(refs))
    stuck = [g for g in known if (g.utilization or 0) >= BUSY_PERCENT and (g.pstate or 0) > MAX_BUSY_PSTATE]
    busy = [g for g in known if (g.utilization or 0) >= BUSY_PERCENT]
    if not stuck:
        states = "/".join(f"P{p}" for p in sorted({g.pstate for g in known if g.pstate is not None}))
        load = (
            f"{len(busy)} busy GPUs in P0–P{MAX_BUSY_PSTATE}"
            if busy
            else f"idle ({max(g.utilization or 0 for g in known)}% utilization at most) in {states}: normal at idle"
        )
        return GPU_PSTATE_CHECK.ok(
            f"{load} on {len(known)}/{len(facts.pstates)} GPUs",
            expected=f"P0–P{MAX_BUSY_PSTATE} while utilization >= {BUSY_PERCENT}%",
            explanation="A GPU drops to P8 when idle and returns to P0 within milliseconds of work arriving; only a "
            "busy GPU in a low state is a problem. Re-read under load to judge it.",
            evidence=cap(refs),
        )
    observed = "; ".join(f"{g.label}: P{g.pstate} at {g.utilization}% utilization" for g in stuck)
    return GPU_PSTATE_CHECK.problem_at(
        "medium",
        observed,
        f"P0–P{MAX_BUSY_PSTATE} while utilization >= {BUSY_PERCENT}%",
        "These GPUs are running kernels while in a low performance state, whose clock ceiling (graphics and, above "
        "all, memory clock) is far below P0's: decode is memory-bandwidth bound, so tokens/s drops roughly with the "
        "memory clock. Causes: locked clocks (nvidia-smi -lgc/-lmc), a power brake or thermal event (see gpu.clocks), "
        "or a driver that lost its settings (see driver.persistence).",
        _unlock_clocks_fix(facts.platform),
        subjects=tuple(g.label for g in stuck),
        evidence=cap(refs),
    )
