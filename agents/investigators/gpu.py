"""gpu: health of each GPU: temperature headroom, clock event reasons, ECC errors, Xid events, GSP errors,
application clocks, spare memory."""

from __future__ import annotations

import re
from dataclasses import dataclass

from agents.facts.gpus import GpuInventory, collect_gpus, normalize_bdf
from agents.facts.kernel_log import DMESG, log_unavailable, read_kernel_log
from agents.facts.nvidia_driver import PROC_VERSION
from agents.facts.nvml_reads import GpuReads, failure_text, label, labels, nvml_unusable, read_per_gpu
from agents.facts.platform import Platform, detect_platform
from agents.findings import ok, problem, unknown
from agents.investigator import CheckDoc, Investigator
from agents.investigators._gpu_app_clocks import AppClockFacts, collect_app_clocks, judge_app_clocks
from agents.investigators._gpu_gsp import judge_gsp
from agents.investigators._gpu_retired import RetiredFacts, collect_retired, judge_retired_pages
from tools.hosts.base import CommandResult
from tools.model.finding import Area, CommandAction, Finding, Fix, FixKind, Severity, Where
from tools.probe import Probe, command_ref

AREA: Area = "gpu"
CHECKS = ("gpu.thermals", "gpu.clocks", "gpu.ecc_errors", "gpu.xid", "gpu.gsp", "gpu.app_clocks", "gpu.retired_pages")
THERMAL_MARGIN_C = 10
SLOWDOWN, GPU_MAX = 1, 3
"""nvmlTemperatureThresholds_t: 0 shutdown, 1 slowdown, 2 memory max, 3 GPU max operating."""

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

XID_MEANING = {
    13: "graphics engine exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing",
    45: "preemptive cleanup (a process was killed)",
    48: "double-bit ECC error",
    61: "internal micro-controller breakpoint",
    62: "internal micro-controller halt",
    63: "ECC page retirement / row remapping event",
    64: "ECC page retirement / row remapping failure",
    74: "NVLink error",
    79: "GPU has fallen off the bus",
    92: "high single-bit ECC error rate",
    94: "contained ECC error",
    95: "uncontained ECC error",
    119: "GSP RPC timeout",
    120: "GSP error",
}
CRITICAL_XIDS = frozenset({79, 48, 94, 95, 63, 64, 74})
APPLICATION_XIDS = frozenset({13, 31, 43})
_XID_LINE = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): (\d+)")


@dataclass(frozen=True)
class GpuHealthFacts:
    inventory: GpuInventory
    platform: Platform
    temperature: GpuReads
    slowdown: GpuReads
    gpu_max: GpuReads
    reasons: GpuReads
    throttle: GpuReads
    remapped: GpuReads
    volatile_uncorrected: GpuReads
    retired_pending: GpuReads
    dmesg: CommandResult
    app_clocks: AppClockFacts
    retired: RetiredFacts
    proc_version: str | None


async def collect(probe: Probe) -> GpuHealthFacts:
    inventory = await collect_gpus(probe)
    platform = await detect_platform(probe)
    calls: list[tuple[str, tuple[int, ...]]] = [
        ("nvmlDeviceGetTemperature", (0,)),
        ("nvmlDeviceGetTemperatureThreshold", (SLOWDOWN,)),
        ("nvmlDeviceGetTemperatureThreshold", (GPU_MAX,)),
        ("nvmlDeviceGetCurrentClocksEventReasons", ()),
        ("nvmlDeviceGetCurrentClocksThrottleReasons", ()),
        ("nvmlDeviceGetRemappedRows", ()),
        ("nvmlDeviceGetTotalEccErrors", (1, 0)),
        ("nvmlDeviceGetRetiredPagesPendingStatus", ()),
    ]
    temp, slow, gmax, reasons, throttle, remapped, uncorrected, pending = await probe.gather(
        *[lambda fn=fn, extra=extra: read_per_gpu(probe, inventory, fn, *extra) for fn, extra in calls]
    )
    dmesg = await read_kernel_log(probe)
    app_clocks = await collect_app_clocks(probe, inventory, platform)
    retired = await collect_retired(probe, inventory, platform)
    proc_version = await probe.text(PROC_VERSION)
    return GpuHealthFacts(
        inventory,
        platform,
        temp,
        slow,
        gmax,
        reasons,
        throttle,
        remapped,
        uncorrected,
        pending,
        dmesg,
        app_clocks,
        retired,
        proc_version,
    )


def _hw_where(platform: Platform) -> Where:
    return "hypervisor" if platform.is_guest else "host"


def _ints(reads: GpuReads) -> dict[int, int]:
    return {i: v for i in reads.results if isinstance(v := reads.value(i), int) and not isinstance(v, bool)}


def judge_thermals(f: GpuHealthFacts) -> Finding:
    check, title = "gpu.thermals", "GPU temperature headroom"
    if why := nvml_unusable(f.inventory):
        return unknown(check, AREA, title, why)
    temps = _ints(f.temperature)
    limits, kind, limit_reads = _ints(f.slowdown), "slowdown", f.slowdown
    if not limits:
        limits, kind, limit_reads = _ints(f.gpu_max), "max operating", f.gpu_max
    refs = f.temperature.refs + limit_reads.refs
    judged = sorted(set(temps) & set(limits))
    if not judged:
        why = failure_text(f.temperature, f.inventory) if not temps else failure_text(f.slowdown, f.inventory)
        return unknown(check, AREA, title, why, evidence=refs)
    headroom = {i: limits[i] - temps[i] for i in judged}
    hot = [i for i in judged if headroom[i] < THERMAL_MARGIN_C]
    if not hot:
        lo, hi = min(temps[i] for i in judged), max(temps[i] for i in judged)
        limit_text = "/".join(sorted({str(limits[i]) for i in judged}))
        return ok(
            check,
            AREA,
            title,
            f"{lo}–{hi} °C, {kind} at {limit_text} °C: ≥ {min(headroom.values())} °C headroom on {len(judged)}/"
            f"{len(f.temperature.results)} GPUs",
            expected=f"more than {THERMAL_MARGIN_C} °C below the {kind} threshold",
            explanation="Read once; at idle a GPU runs far cooler than under a long decode run. Re-check under load.",
            evidence=refs,
        )
    observed = "; ".join(f"{label(f.inventory, i)}: {temps[i]} °C, {kind} at {limits[i]} °C" for i in hot)
    severity: Severity = "high" if any(headroom[i] <= 0 for i in hot) else "medium"
    fix = Fix(
        kind="hardware",
        where=_hw_where(f.platform),
        summary="Improve cooling of " + ", ".join(labels(f.inventory, hot)) + ": airflow, fan profile, inlet temperature",
        actions=(
            CommandAction(
                description="check the chassis fan profile in the BMC (full speed for passive GPUs), inlet "
                "temperature, blanking panels, blocked or dusty intakes, and GPU placement"
            ),
        ),
        risk="low",
        verify="nvidia-smi --query-gpu=index,temperature.gpu,clocks_event_reasons.active --format=csv under load: "
        f"temperature more than {THERMAL_MARGIN_C} °C below {kind}, no thermal reasons",
        revert="none: cooling changes are not reverted",
        persist="BMC fan settings persist",
    )
    return problem(
        check,
        AREA,
        title,
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


def _reason_names(mask: int) -> str:
    names = [name for bit, name in CLOCK_REASONS.items() if mask & bit]
    return ", ".join(names) if names else "none"


def judge_clocks(f: GpuHealthFacts) -> Finding:
    check, title = "gpu.clocks", "GPU clock event reasons"
    if why := nvml_unusable(f.inventory):
        return unknown(check, AREA, title, why)
    reads = f.reasons if _ints(f.reasons) else f.throttle
    masks = _ints(reads)
    if not masks:
        return unknown(check, AREA, title, failure_text(f.reasons, f.inventory), evidence=f.reasons.refs)
    bad = {i: m & BAD_CLOCK_BITS for i, m in masks.items() if m & BAD_CLOCK_BITS}
    if not bad:
        seen = sorted({m for m in masks.values()})
        summary = "; ".join(f"{hex(m)} ({_reason_names(m)})" for m in seen)
        return ok(
            check,
            AREA,
            title,
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
    fix = Fix(
        kind="hardware",
        where=_hw_where(f.platform),
        summary="Remove the cause of hardware clock slowdown on " + ", ".join(labels(f.inventory, list(bad))),
        actions=tuple(CommandAction(description=s) for s in steps),
        risk="low",
        verify="nvidia-smi --query-gpu=index,clocks_event_reasons.active --format=csv under load shows no 0x8/0x20/0x40/0x80",
        revert="none",
        persist="hardware changes persist",
    )
    return problem(
        check,
        AREA,
        title,
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


def judge_ecc_errors(f: GpuHealthFacts) -> Finding:
    check, title = "gpu.ecc_errors", "GPU memory errors (row remapping, ECC, retired pages)"
    if why := nvml_unusable(f.inventory):
        return unknown(check, AREA, title, why)
    refs = f.remapped.refs + f.volatile_uncorrected.refs + f.retired_pending.refs
    remap = {i: v for i in f.remapped.results if isinstance(v := f.remapped.value(i), list) and len(v) == 4}
    uncorrected = _ints(f.volatile_uncorrected)
    pages_pending = _ints(f.retired_pending)
    judged = set(remap) | set(uncorrected) | set(pages_pending)
    if not judged:
        return unknown(check, AREA, title, failure_text(f.remapped, f.inventory), evidence=refs)
    failure = [i for i, v in remap.items() if v[3]]
    pending = sorted({i for i, v in remap.items() if v[2]} | {i for i, v in pages_pending.items() if v})
    errors = [i for i, v in uncorrected.items() if v > 0]
    remapped_rows = {i: int(v[0]) + int(v[1]) for i, v in remap.items() if (v[0] or v[1])}
    if not (failure or pending or errors):
        note = ""
        if remapped_rows:
            note = "; rows remapped earlier (spares in use, healthy): " + ", ".join(
                f"{label(f.inventory, i)} {n}" for i, n in remapped_rows.items()
            )
        return ok(
            check,
            AREA,
            title,
            f"no remap pending or failed, 0 volatile uncorrectable ECC errors, no retired page pending on "
            f"{len(judged)}/{len(f.inventory.nvml_indices)} GPUs{note}",
            expected="no pending remap, no remap failure, no uncorrectable errors",
            evidence=refs,
        )
    parts = []
    for i in sorted(set(failure) | set(pending) | set(errors)):
        bits = []
        if i in failure:
            bits.append("row remapping FAILED")
        if i in pending:
            bits.append("remap/retirement pending")
        if i in errors:
            bits.append(f"{uncorrected[i]} volatile uncorrectable ECC errors")
        parts.append(f"{label(f.inventory, i)}: {', '.join(bits)}")
    subjects = labels(f.inventory, sorted(set(failure) | set(pending) | set(errors)))
    if failure:
        severity: Severity = "critical"
        kind: FixKind = "hardware"
        summary = "RMA the GPUs whose row remapping failed: " + ", ".join(labels(f.inventory, failure))
        actions = (
            CommandAction(
                description="take the GPU out of service and open an RMA with the vendor (include nvidia-bug-report.sh output)"
            ),
        )
    else:
        severity, kind = "high", "reboot"
        summary = "Reset the affected GPUs (or reboot) so pending remaps take effect"
        actions = (CommandAction(description="stop the server, then reset each affected GPU (nvidia-smi -r -i N) or reboot"),)
    fix = Fix(
        kind=kind,
        where=_hw_where(f.platform),
        summary=summary,
        actions=actions,
        risk="medium",
        verify="nvidia-smi -q -d ROW_REMAPPER,ECC: Pending: No, Remapping Failure Occurred: No, volatile uncorrectable 0",
        revert="none",
        persist="remaps are stored on the GPU",
    )
    return problem(
        check,
        AREA,
        title,
        severity,
        "; ".join(parts),
        "no pending remap, no remap failure, no uncorrectable errors",
        "An uncorrectable ECC error kills the process that touched the memory and poisons the server; a pending remap "
        "only takes effect after a GPU reset, so the bad row stays in use until then. A remap failure means the GPU "
        "ran out of spare rows: it can no longer contain memory faults and must be replaced.",
        fix,
        subjects=subjects,
        evidence=refs,
    )


@dataclass(frozen=True)
class XidEvent:
    bdf: str
    xid: int
    line: str


def parse_xids(text: str) -> list[XidEvent]:
    events = []
    for line in text.splitlines():
        if match := _XID_LINE.search(line):
            bdf = match.group(1)
            if "." not in bdf:
                bdf += ".0"
            events.append(XidEvent(normalize_bdf(bdf), int(match.group(2)), line.strip()))
    return events


def _dmesg_unavailable(cmd: CommandResult) -> str | None:
    return log_unavailable(cmd)


def _xid_severity(xids: set[int]) -> Severity:
    if xids & CRITICAL_XIDS:
        return "critical"
    if xids <= {45}:
        return "low"
    if xids <= APPLICATION_XIDS | {45}:
        return "medium"
    return "high"


def _xid_fix(xids: set[int], platform: Platform) -> Fix:
    where = _hw_where(platform)
    verify = "dmesg | grep -i xid shows no new events after a load run"
    if xids & {79, 74}:
        return Fix(
            kind="hardware",
            where=where,
            summary="GPU fell off the bus / NVLink errors: reboot to recover, then check seating, risers, power and "
            "cooling; RMA if it repeats",
            actions=(
                CommandAction(
                    description="reboot, then reseat the GPU and its power cables; check slot/riser and "
                    "PSU; open an RMA if the Xid returns"
                ),
            ),
            risk="medium",
            verify=verify,
            revert="none",
            persist="hardware changes persist",
        )
    if xids & {48, 63, 64, 94, 95, 92}:
        return Fix(
            kind="reboot",
            where=where,
            summary="Memory error Xids: reset the GPU or reboot so remaps take effect; see gpu.ecc_errors (RMA on failure)",
            actions=(CommandAction(description="stop the server, reset the affected GPUs (nvidia-smi -r -i N) or reboot"),),
            risk="medium",
            verify=verify,
            revert="none",
            persist="remaps are stored on the GPU",
        )
    if xids <= APPLICATION_XIDS | {45}:
        return Fix(
            kind="restart",
            where=where,
            summary="Application-side GPU faults: restart the server and look at what it ran when the Xid appeared",
            actions=(
                CommandAction(
                    description="restart the inference server; if the Xid repeats, collect "
                    "nvidia-bug-report.sh and the server log of that moment"
                ),
            ),
            risk="low",
            verify=verify,
            revert="none",
            persist="none",
        )
    return Fix(
        kind="reboot",
        where=where,
        summary="Driver/firmware Xids: reboot, update the driver if they repeat",
        actions=(
            CommandAction(
                description="reboot; if the Xid returns, update to the latest driver of the branch and "
                "collect nvidia-bug-report.sh"
            ),
        ),
        risk="medium",
        verify=verify,
        revert="none",
        persist="none",
    )


def judge_xid(f: GpuHealthFacts) -> Finding:
    check, title = "gpu.xid", "Xid events in the kernel log"
    refs = (command_ref(DMESG),)
    if why := _dmesg_unavailable(f.dmesg):
        return unknown(check, AREA, title, why, evidence=refs)
    events = parse_xids(f.dmesg.stdout)
    lines = len(f.dmesg.stdout.splitlines())
    if not events:
        return ok(
            check,
            AREA,
            title,
            f"no NVRM Xid line in the kernel log ({lines} lines)",
            expected="no Xid",
            explanation="The ring buffer holds the messages since boot unless it has wrapped.",
            evidence=refs,
        )
    by_bdf = {g.bdf: g.label for g in f.inventory.gpus}
    counts: dict[tuple[str, int], int] = {}
    for event in events:
        counts[(event.bdf, event.xid)] = counts.get((event.bdf, event.xid), 0) + 1
    parts = []
    for (bdf, xid), n in sorted(counts.items()):
        meaning = XID_MEANING.get(xid, "see NVIDIA's Xid catalog")
        parts.append(f"Xid {xid} ({meaning}) on {by_bdf.get(bdf, f'GPU {bdf}')} ×{n}")
    xids = {e.xid for e in events}
    subjects = sorted({by_bdf.get(e.bdf, f"GPU {e.bdf}") for e in events})
    return problem(
        check,
        AREA,
        title,
        _xid_severity(xids),
        "; ".join(parts),
        "no Xid events",
        "Xid lines are the driver's record of GPU faults. 79 (fallen off the bus) points at PCIe/power/thermal "
        "hardware; 48/94/95 are ECC errors and 63/64 row-remapping events (see gpu.ecc_errors); 74 is NVLink. "
        "13/31/43 usually come from the application (bad kernel, illegal address) and 45 follows a killed process. "
        "Last line: " + events[-1].line[:200],
        _xid_fix(xids, f.platform),
        subjects=subjects,
        evidence=refs,
    )


def judge(f: GpuHealthFacts) -> list[Finding]:
    reads = f.reasons if _ints(f.reasons) else f.throttle
    return [
        judge_thermals(f),
        judge_clocks(f),
        judge_ecc_errors(f),
        judge_xid(f),
        judge_gsp(f.dmesg, f.inventory, f.platform, f.proc_version),
        judge_app_clocks(f.app_clocks, _ints(reads), reads.refs),
        judge_retired_pages(f.retired, f.remapped),
    ]


DOCS = {
    "gpu.thermals": CheckDoc(
        "GPU temperature headroom",
        "NVML temperature and slowdown / max operating thresholds",
        "within 10 °C of slowdown",
        "cooling: airflow, fan profile, inlet temperature",
        ("hardware",),
    ),
    "gpu.clocks": CheckDoc(
        "GPU clock event reasons",
        "NVML current clocks event reasons",
        "HW slowdown (0x8), SW/HW thermal (0x20/0x40) or HW power brake (0x80) set; SW power cap and idle are normal",
        "cooling, power delivery",
        ("hardware",),
    ),
    "gpu.ecc_errors": CheckDoc(
        "GPU memory errors (row remapping, ECC, retired pages)",
        "NVML remapped rows, volatile uncorrected ECC count, retired pages pending",
        "remap pending (reset needed), remap failure, or uncorrectable errors",
        "GPU reset or reboot; RMA on remap failure",
        ("reboot", "hardware"),
    ),
    "gpu.xid": CheckDoc(
        "Xid events in the kernel log",
        "kernel log `NVRM: Xid` lines",
        "any Xid; 79, 48/94/95, 63/64, 74 are critical",
        "per Xid: restart, reset, reboot or hardware",
        ("restart", "reboot", "hardware"),
    ),
    "gpu.gsp": CheckDoc(
        "GSP firmware errors",
        "kernel log: NVRM GSP timeout/error lines (`_kgspRpcRecvPoll`, heartbeat, bootstrap failures), Xid 119/120",
        "any GSP error: the GPU stops answering until reset",
        "reset or reboot; newest driver of the branch",
        ("reboot",),
    ),
    "gpu.app_clocks": CheckDoc(
        "Application and locked clocks",
        "NVML `nvmlDeviceGetApplicationsClock` vs `nvmlDeviceGetDefaultApplicationsClock` (graphics, memory); clock event "
        "reason 0x2",
        "application clocks below their defaults, or clocks held by the applications-clocks (locked clocks) setting",
        "`nvidia-smi -rac`, `nvidia-smi -rgc` (by a person)",
        ("runtime",),
    ),
    "gpu.retired_pages": CheckDoc(
        "Spare memory used up (retired pages, spare rows)",
        "NVML retired pages (single- and double-bit causes), remapped rows, row-remapper histogram",
        "a memory bank with no spare row left (high); banks low on spares or retired pages (low)",
        "plan an RMA",
        ("hardware",),
    ),
}


INVESTIGATOR = Investigator(
    area=AREA,
    title="GPU health: thermals, clocks, memory errors, Xids, GSP",
    checks=CHECKS,
    collect=collect,
    judge=judge,
    docs=DOCS,
)
