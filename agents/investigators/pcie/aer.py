"""pcie.aer: PCIe error counters (AER in sysfs, NVML replays) of the GPUs and the bridges above them."""

from __future__ import annotations

from collections.abc import Sequence

from rigaudit.agents.check import Check
from rigaudit.agents.facts.gpus import Gpu
from rigaudit.agents.investigators.cloud import for_cloud
from rigaudit.agents.investigators.pcie import premises
from rigaudit.agents.investigators.pcie.aer_log import AerLog
from rigaudit.agents.investigators.pcie.facts import PcieFacts, fix_where, no_gpus, slot_fix
from rigaudit.tools.pci.sysfs import AerCounts
from rigaudit.tools.schema.finding import Finding, Severity

REPLAY_NOISE = 100
"""NVML PCIe replays since driver load below which, with no AER error, a single reading is not a problem."""
STORM = 100
"""A device's AER messages in the kernel log (logged, and dropped by the kernel's rate limit) from which they are a
storm, not a handful since boot: at least this many, and at least this many an hour over the time they span."""


AER_CHECK = Check(
    "pcie.aer",
    "PCIe error counters (AER, NVML replays)",
    reads="`/sys/bus/pci/devices/BDF/aer_dev_{correctable,nonfatal,fatal}`, NVML PCIe replay counter, the kernel "
    "log's AER messages (bursts, `callbacks suppressed`)",
    problem="counters non-zero and rising: correctable low, a storm of them on a GPU's path in the kernel log medium, "
    "nonfatal medium, fatal high",
    fix="reseat/riser",
    kinds=("hardware",),
    premises=(premises.PLATFORM_FIX, premises.GPUS),
)


def _unreported(facts: PcieFacts) -> set[str]:
    """GPUs of a VM guest with no root port above them in the guest (Hyper-V vPCI, a flat cloud bus): their AER
    messages go to the hypervisor's root ports, so the guest's counters of them never count."""
    if not facts.platform.in_vm:
        return set()
    return {g.bdf for g in facts.gpus if (c := facts.chains.get(g.bdf)) is not None and c.chain is not None and not c.bridges}


def _aer_text(counts: int, unreported: set[str]) -> str:
    hypervisor = (
        f"AER of {len(unreported)} GPU(s) is the hypervisor's (no root port above them in this guest: "
        "their counters here never count)"
    )
    zero = f"AER counters zero on {counts} device(s) (GPUs and bridges above them)"
    return "; ".join(([zero] if counts else []) + ([hypervisor] if unreported else []))


def judge_aer(facts: PcieFacts) -> Finding:
    if not facts.gpus:
        return no_gpus(AER_CHECK)
    unreported = _unreported(facts)
    devices = [g.bdf for g in facts.gpus if g.bdf not in unreported] + list(facts.bridges)
    counts = [facts.aer[d] for d in devices if d in facts.aer and facts.aer[d].known]
    replays = {g.label: facts.nvml[g.bdf].replays for g in facts.gpus if g.bdf in facts.nvml}
    evidence = [r for c in counts for r in c.refs]
    evidence += [r for g in facts.gpus if g.bdf in facts.nvml for r in facts.nvml[g.bdf].refs if "Replay" in r]
    if not counts and not any(v is not None for v in replays.values()):
        return AER_CHECK.unknown(
            (_aer_text(0, unreported) or "no aer_dev_* counters in sysfs (AER off or not exposed)")
            + " and no NVML replay counter; NVML's PCIe replay counter (nvidia-smi -q -d PCIE) would tell",
            evidence=evidence,
        )
    erring = [c for c in counts if c.fatal or c.nonfatal or c.correctable]
    replaying = {label: v for label, v in replays.items() if v and v >= REPLAY_NOISE}
    storms = _storms(facts, unreported)
    if erring or replaying or storms:
        return _errors_problem(facts, erring, replaying, evidence, storms)
    few = {label: v for label, v in replays.items() if v and v < REPLAY_NOISE}
    if few:
        shown = ", ".join(f"{label}: {v}" for label, v in few.items())
        return AER_CHECK.ok(
            f"{_aer_text(len(counts), unreported)}; a few NVML PCIe replays since the driver loaded ({shown})",
            expected=f"no AER errors; replay counts below {REPLAY_NOISE} and not rising",
            explanation="A handful of link-level replays since boot is retried transparently and costs nothing measurable; "
            "only a count that keeps rising under load points at a marginal link. Re-read it after a load run.",
            evidence=evidence,
        )
    return AER_CHECK.ok(
        f"{_aer_text(len(counts), unreported)}; NVML PCIe replays "
        f"0 on {sum(1 for v in replays.values() if v == 0)}/{len(facts.gpus)} GPUs",
        expected="no PCIe errors",
        evidence=evidence,
    )


def _storm(log: AerLog) -> bool:
    hours = (log.last_at - log.first_at) / 3600 if log.first_at is not None and log.last_at is not None else 0.0
    return log.total >= STORM and log.total / max(hours, 1.0) >= STORM


def _storms(facts: PcieFacts, unreported: set[str]) -> list[tuple[str, Gpu, AerLog]]:
    """(where, GPU, its messages) for each device on a GPU's path whose AER messages in the kernel log are a storm."""
    out = []
    seen: set[str] = set()
    for gpu in facts.gpus:
        chain = facts.chains.get(gpu.bdf)
        bridges = chain.bridges if chain is not None else ()
        for bdf in (gpu.bdf, *reversed(bridges)):
            log = facts.aer_log.get(bdf)
            if bdf in seen or bdf in unreported or log is None or not _storm(log):
                continue
            seen.add(bdf)
            if bdf == gpu.bdf:
                where = f"{gpu.label} (its end of the link)"
            elif bdf == bridges[-1]:
                where = f"{gpu.label}'s link, at its port {bdf}"
            else:
                where = f"the bridge {bdf} above {gpu.label}"
            out.append((where, gpu, log))
    return out


def _storm_text(where: str, log: AerLog) -> str:
    dropped = f", {log.suppressed:,} dropped by the kernel's rate limit" if log.suppressed else ""
    kinds = ", ".join(log.kinds) or "errors"
    return (
        f"{where}: a burst of {log.total:,} AER messages in the kernel log ({log.messages} logged{dropped}) {log.span}: {kinds}"
    )


def _rate_text(facts: PcieFacts, storm: bool) -> str:
    """What the kernel log says of the errors' rate: a storm, no burst, or why it was not read."""
    if storm:
        return (
            "The kernel log shows the rate the counters cannot: its AER messages carry their time, and a burst of "
            f"{STORM} or more on one device, at {STORM} an hour or faster (the rate limit's dropped count included), "
            "is a link erring continuously, "
            "not a handful since boot; the port above a GPU counts what it receives from the GPU (Receiver ID), "
            "so its errors are that GPU's link. "
        )
    if facts.kernel_log_gap:
        return (
            "Whether they came in a burst the kernel log would tell (its AER messages carry their time, and "
            f"`callbacks suppressed` counts those its rate limit dropped), but it was not read: {facts.kernel_log_gap}. "
        )
    return "The kernel log shows no burst of AER messages on these devices. "


def _errors_problem(
    facts: PcieFacts,
    erring: list[AerCounts],
    replaying: dict[str, int],
    evidence: list[str],
    storms: Sequence[tuple[str, Gpu, AerLog]] = (),
) -> Finding:
    """AER errors on some devices or NVML replays past the noise: the worst error class sets the severity; a storm
    of messages in the kernel log on a GPU's path is at least medium, and named first."""
    labels = {g.bdf: g.label for g in facts.gpus}
    severity: Severity = "high" if any(c.fatal for c in erring) else "medium" if any(c.nonfatal for c in erring) else "low"
    if storms and severity == "low":
        severity = "medium"
    parts = [_storm_text(where, log) for where, _, log in storms]
    parts += [
        f"{labels.get(c.bdf, c.bdf)}: correctable {c.correctable or 0}, nonfatal {c.nonfatal or 0}, fatal {c.fatal or 0}"
        + (f" ({', '.join(c.nonzero[:4])})" if c.nonzero else "")
        for c in erring
    ]
    parts += [f"{label}: {v} PCIe replays (NVML)" for label, v in replaying.items()]
    subjects = list(dict.fromkeys([g.label for _, g, _ in storms] + [labels.get(c.bdf, c.bdf) for c in erring] + list(replaying)))
    fix = slot_fix(
        "hardware",
        fix_where(facts.platform),
        "Find the failing link: reseat the GPU, riser and cables of the devices with errors",
        "Note the counters, run a load, re-read them: if they rise, reseat/replace the "
        "riser or cable of that link (or force one PCIe generation lower in the BIOS as a test)",
        "after a load run, aer_dev_* counters in /sys/bus/pci/devices/BDF/ and nvidia-smi -q -d PCIE replay counters "
        "stay unchanged",
    )
    if storms:
        first = storms[0][0]
        fix = fix.model_copy(update={"summary": f"{first}: reseat the GPU and its riser or cables, or replace them"})
    affected = {c.bdf for c in erring} | {g.bdf for _, g, _ in storms}
    fix = for_cloud(fix, facts.platform, [g for g in facts.gpus if g.bdf in affected or g.label in replaying])
    return AER_CHECK.problem_at(
        severity,
        observed="; ".join(parts),
        expected="AER and replay counters at zero",
        explanation=_rate_text(facts, bool(storms))
        + "Counters count since boot; one sample cannot show whether they are still rising. "
        "Correctable errors and replays are retried transparently but cost bandwidth and usually mean a marginal link "
        "(riser, cable, connector, retimer); uncorrectable (nonfatal/fatal) errors can stall DMA, corrupt transfers or "
        "drop the GPU off the bus (Xid 79).",
        fix=fix,
        subjects=subjects,
        evidence=evidence + ([facts.dmesg_ref] if storms and facts.dmesg_ref else []),
    )
