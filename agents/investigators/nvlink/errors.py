"""nvlink.errors: NVLink error counters (replay, recovery, CRC), and the link far above its siblings."""

from __future__ import annotations

from statistics import median

from rigaudit.agents.check import Check
from rigaudit.agents.facts.nvml_reads import label, labels
from rigaudit.agents.investigators.nvlink import premises
from rigaudit.agents.investigators.nvlink.facts import (
    COUNTERS,
    CRC_COUNTERS,
    SERIOUS_COUNTERS,
    NvlinkFacts,
    hardware_fix,
    without_nvlink,
)
from rigaudit.tools.hosts.probe import nvml_ref
from rigaudit.tools.schema.finding import Finding, Severity

NVLINK_ERRORS_CHECK = Check(
    "nvlink.errors",
    "NVLink error counters",
    reads="NVML NvLink error counters (replay, recovery, CRC flit, CRC data) of every active link",
    problem="any counter above 0 (medium for recoveries, or for a link whose counts are orders of magnitude above its "
    "siblings': an outlier, named first; CRC and replay counts, corrected by link-level retry, low)",
    fix="reset; reseat or RMA if they keep rising",
    kinds=("hardware",),
    premises=(premises.NVML, premises.NVLINK),
)


OUTLIER_FACTOR = 100
"""A link's count at least this many times the median of the same counter on every other active link..."""
OUTLIER_FLOOR = 1000
"""...and at least this many: a few dozen CRC errors on one link among links with a handful is no outlier."""


def outliers(counters: dict[tuple[int, int, int], int]) -> dict[tuple[int, int], dict[int, tuple[int, float]]]:
    """(GPU, link) -> counter -> (its value, the other links' median), for the links whose count of a counter is
    orders of magnitude above the same counter on the other active links (same GPUs, same time since reset)."""
    out: dict[tuple[int, int], dict[int, tuple[int, float]]] = {}
    for counter in COUNTERS:
        values = {(i, k): v for (i, k, c), v in counters.items() if c == counter}
        for key, value in values.items():
            others = [v for other, v in values.items() if other != key]
            if value < OUTLIER_FLOOR or not others:
                continue
            baseline = median(others)
            if value >= OUTLIER_FACTOR * max(baseline, 1):
                out.setdefault(key, {})[counter] = (value, baseline)
    return out


def _outlier_problem(
    f: NvlinkFacts, found: dict[tuple[int, int], dict[int, tuple[int, float]]], refs: tuple[str, ...]
) -> Finding:
    """Medium, the outlying links named first, the rest of the links summed up by counter."""
    named = []
    for (i, link), items in sorted(found.items()):
        mine = {c: v for (gi, k, c), v in f.counters.items() if (gi, k) == (i, link) and v > 0}
        shown = ", ".join(f"{COUNTERS[c]}={v:,}" for c, v in sorted(mine.items()))
        medians = ", ".join(f"{COUNTERS[c]} {b:g}" for c, (_, b) in sorted(items.items()))
        named.append(f"{label(f.inventory, i)} link {link}: {shown} (an outlier: the other links' median {medians})")
    rest = {(i, k) for i, k, _ in f.counters} - set(found)
    ranges = []
    for counter, name in COUNTERS.items():
        seen = [v for (i, k, c), v in f.counters.items() if c == counter and (i, k) in rest and v > 0]
        if seen:
            ranges.append(f"{name} {min(seen)}-{max(seen)} on {len(seen)}")
    baseline = f"the other {len(rest)} active links: " + ("; ".join(ranges) if ranges else "all counters 0")
    gpus = sorted({i for i, _ in found})
    fix = hardware_fix(f, gpus)
    where = ", ".join(f"{label(f.inventory, i)} link {k}" for i, k in sorted(found))
    fix = fix.model_copy(update={"summary": f"{where}: {fix.summary[0].lower()}{fix.summary[1:]}"})
    return NVLINK_ERRORS_CHECK.problem_at(
        "medium",
        "; ".join(named) + "; " + baseline,
        "error counters 0; no link far above the others",
        "One link whose CRC or replay counts are orders of magnitude above every other link's, on the same GPUs "
        "under the same traffic and the same time since the last reset, is that link's own fault (its connector, "
        "cable, bridge or NVSwitch port), not load: link-level retry keeps correcting it, but every retry costs that "
        "link bandwidth, and such a link precedes recoveries, Xid 74 and the link's loss. Read `nvidia-smi nvlink -e` "
        "again under load: a count still climbing on it confirms it.",
        fix,
        subjects=[label(f.inventory, i) for i in gpus],
        evidence=refs,
    )


def judge_errors(f: NvlinkFacts) -> Finding:
    state_refs = tuple(nvml_ref("nvmlDeviceGetNvLinkState", (i, 0)) for i in f.states)
    if skipped := without_nvlink(NVLINK_ERRORS_CHECK, f, state_refs):
        return skipped
    active = [(i, k) for i, links in f.states.items() for k, r in links.items() if r.ok and r.value == 1]
    if not active and len(f.states) == 1:
        return NVLINK_ERRORS_CHECK.not_applicable("one GPU and no active NVLink: no link to count errors on", evidence=state_refs)
    if not active:
        return NVLINK_ERRORS_CHECK.unknown("no active NVLink to read counters from (see nvlink.links)", evidence=state_refs)
    refs = tuple(nvml_ref("nvmlDeviceGetNvLinkErrorCounter", key) for key in f.counters)
    if not f.counters:
        return NVLINK_ERRORS_CHECK.unknown(
            f"nvmlDeviceGetNvLinkErrorCounter gave no value for {len(active)} active links",
            evidence=tuple(nvml_ref("nvmlDeviceGetNvLinkErrorCounter", (i, k, 0)) for i, k in active[:8]),
        )
    errors = {key: v for key, v in f.counters.items() if v > 0}
    links_read = len({(i, k) for i, k, _ in f.counters})
    if not errors:
        return NVLINK_ERRORS_CHECK.ok(
            f"replay, recovery and CRC counters 0 on {links_read} active links",
            expected="error counters 0",
            explanation="Counters are cumulative since the last driver load or reset; read them again under load.",
            evidence=refs,
        )
    if found := outliers(f.counters):
        return _outlier_problem(f, found, refs)
    by_gpu: dict[int, list[str]] = {}
    for (i, link, counter), value in sorted(errors.items()):
        by_gpu.setdefault(i, []).append(f"link {link} {COUNTERS[counter]}={value}")
    observed = "; ".join(f"{label(f.inventory, i)}: {', '.join(items)}" for i, items in by_gpu.items())
    if all(c in CRC_COUNTERS for _, _, c in errors):
        # Seen on healthy H200s: CRC counts on every link, no replay or recovery. Retry corrects them.
        return NVLINK_ERRORS_CHECK.ok(
            f"CRC counts only, no replay or recovery on {links_read} active links: {observed}",
            expected="no replays or recoveries; CRC counts that do not climb fast under load",
            explanation="Receive CRC errors are detected and corrected by link-level retry; healthy NVLink4 links "
            "accumulate some, and one reading cannot show a rate. Read `nvidia-smi nvlink -e` before and after a load: "
            "CRC counts climbing by thousands, or any replay or recovery, point at a marginal link.",
            evidence=refs,
        )
    severity: Severity = "medium" if any(c in SERIOUS_COUNTERS for _, _, c in errors) else "low"
    return NVLINK_ERRORS_CHECK.problem_at(
        severity,
        observed,
        "error counters 0",
        "NVLink error counters are cumulative since the last reset: CRC errors are detected and corrected by "
        "link-level retry (replays), costing a little bandwidth, and healthy links accumulate some; recoveries mean "
        "the link retrained, stalling every transfer on it. Compare two readings under load: CRC counts that climb "
        "fast, or any recoveries, point at a marginal link, connector or bridge and precede Xid 74 and link loss.",
        hardware_fix(f, by_gpu),
        subjects=labels(f.inventory, sorted(by_gpu)),
        evidence=refs,
    )
