"""nvlink: NVLink state per link and the links' error counters (PCIe-only cards: not applicable)."""

from __future__ import annotations

from dataclasses import dataclass

from rigaudit.agents.facts.gpus import GpuInventory, collect_gpus
from rigaudit.agents.facts.nvml_reads import label, labels, nvml_unusable
from rigaudit.agents.facts.platform import Platform, detect_platform
from rigaudit.agents.findings import not_applicable, ok, problem, unknown
from rigaudit.agents.investigator import CheckDoc, Investigator
from rigaudit.tools.hosts.base import NvmlResult
from rigaudit.tools.model.finding import Area, CommandAction, Finding, Fix, Severity
from rigaudit.tools.probe import Probe, nvml_ref

AREA: Area = "nvlink"
CHECKS = ("nvlink.links", "nvlink.errors")
MAX_LINKS = 18
COUNTERS = {0: "DL_REPLAY", 1: "DL_RECOVERY", 2: "DL_CRC_FLIT", 3: "DL_CRC_DATA"}
SERIOUS_COUNTERS = frozenset({1})
CRC_COUNTERS = frozenset({2, 3})
"""CRC counts alone (no replay, no recovery) are judged ok: retry corrects them.

Recoveries (the link retrained) weigh more than replays and CRC errors, which link-level retry corrects and one
reading cannot turn into a rate (real H200s show CRC-data counts in the tens on healthy links)."""
_ABSENT = frozenset({"NOT_SUPPORTED", "INVALID_ARGUMENT"})


@dataclass(frozen=True)
class NvlinkFacts:
    inventory: GpuInventory
    platform: Platform
    states: dict[int, dict[int, NvmlResult]]
    """GPU index -> link -> nvmlDeviceGetNvLinkState result (only links that were asked)."""
    counters: dict[tuple[int, int, int], int]
    """(GPU, link, counter) -> value, for the counters that were read."""


async def _links(probe: Probe, index: int) -> dict[int, NvmlResult]:
    first = await probe.nvml("nvmlDeviceGetNvLinkState", index, 0)
    if first.error in _ABSENT:
        return {0: first}
    rest = await probe.gather(*[lambda k=k: probe.nvml("nvmlDeviceGetNvLinkState", index, k) for k in range(1, MAX_LINKS)])
    return {0: first, **dict(enumerate(rest, start=1))}


async def collect(probe: Probe) -> NvlinkFacts:
    inventory = await collect_gpus(probe)
    platform = await detect_platform(probe)
    indices = inventory.nvml_indices
    per_gpu = await probe.gather(*[lambda i=i: _links(probe, i) for i in indices])
    states = dict(zip(indices, per_gpu, strict=True))
    active = [(i, k) for i, links in states.items() for k, r in links.items() if r.ok and r.value == 1]
    wanted = [(i, k, c) for i, k in active for c in COUNTERS]
    values = await probe.gather(*[lambda w=w: probe.nvml("nvmlDeviceGetNvLinkErrorCounter", *w) for w in wanted])
    counters = {w: r.value for w, r in zip(wanted, values, strict=True) if r.ok and isinstance(r.value, int)}
    return NvlinkFacts(inventory, platform, states, counters)


def _short_names(inventory: GpuInventory) -> str:
    names = sorted({g.name.removeprefix("NVIDIA ").strip() for g in inventory.gpus})
    return ", ".join(names) or "these GPUs"


def _no_nvlink(f: NvlinkFacts) -> str:
    return (
        f"NVML reports no NVLink on {_short_names(f.inventory)} (NOT_SUPPORTED on link 0): a PCIe-only card, "
        "or NVLink not exposed to this machine (a single GPU passed into a VM)"
    )


def judge_links(f: NvlinkFacts) -> Finding:
    check, title = "nvlink.links", "NVLink links"
    if why := nvml_unusable(f.inventory):
        return unknown(check, AREA, title, why)
    refs = tuple(nvml_ref("nvmlDeviceGetNvLinkState", (i, k)) for i, links in f.states.items() for k in links)
    first = {i: links[0] for i, links in f.states.items()}
    if all(r.error == "NOT_SUPPORTED" for r in first.values()):
        return not_applicable(check, AREA, title, _no_nvlink(f), evidence=refs)
    active: dict[int, set[int]] = {}
    present: dict[int, set[int]] = {}
    unread: list[str] = []
    for index, links in f.states.items():
        active[index], present[index] = set(), set()
        for link, result in links.items():
            if result.ok:
                present[index].add(link)
                if result.value == 1:
                    active[index].add(link)
            elif result.error not in _ABSENT:
                error = "not recorded in this snapshot" if result.error == "NOT_RECORDED" else result.error
                unread.append(f"{label(f.inventory, index)} link {link}: {error}")
    if not any(present.values()):
        return unknown(check, AREA, title, "NVLink state not readable: " + "; ".join(unread[:4]), evidence=refs)
    if not any(active.values()):
        return unknown(
            check,
            AREA,
            title,
            "NVLink-capable GPUs report no active link: either no NVLink bridge or NVSwitch is fitted, or the fabric is "
            "down (SXM boards: see driver.fabricmanager)",
            evidence=refs,
        )
    peers_active = set().union(*active.values())
    down = {i: sorted((present[i] & peers_active) - active[i]) for i in active}
    down = {i: links for i, links in down.items() if links}
    counts = sorted({len(v) for v in active.values()})
    summary = f"{'/'.join(map(str, counts))} active links per GPU on {len(active)} GPUs"
    if not down:
        note = f"; not readable: {'; '.join(unread[:4])}" if unread else ""
        return ok(
            check,
            AREA,
            title,
            f"{summary}, every link active on its peers is active here{note}",
            expected="the same links active on every GPU",
            evidence=refs,
        )
    parts = [f"{label(f.inventory, i)}: link {', '.join(map(str, links))} inactive" for i, links in down.items()]
    return problem(
        check,
        AREA,
        title,
        "high",
        f"{'; '.join(parts)} ({summary})",
        "the same links active on every GPU",
        "An NVLink that is down where its peers have it up removes that share of the GPU's NVLink bandwidth, and "
        "NCCL's rings and trees run at the pace of the weakest GPU.",
        _hardware_fix(f),
        subjects=labels(f.inventory, sorted(down)),
        evidence=refs,
    )


def _hardware_fix(f: NvlinkFacts) -> Fix:
    return Fix(
        kind="hardware",
        where="hypervisor" if f.platform.is_guest else "host",
        summary="Reset the affected GPUs; if links stay down or counters keep rising, reseat (SXM: baseboard) and RMA",
        actions=(
            CommandAction(description="record the state", argv=("nvidia-smi", "nvlink", "-s")),
            CommandAction(description="record the error counters", argv=("nvidia-smi", "nvlink", "-e")),
            CommandAction(description="with the server stopped, reset the GPUs or reboot; reseat or RMA if it persists"),
        ),
        risk="medium",
        verify="nvidia-smi nvlink -s shows every link up at full speed; nvidia-smi nvlink -e counters stop rising under load",
        revert="none",
        persist="hardware changes persist",
    )


def judge_errors(f: NvlinkFacts) -> Finding:
    check, title = "nvlink.errors", "NVLink error counters"
    if why := nvml_unusable(f.inventory):
        return unknown(check, AREA, title, why)
    first = {i: links[0] for i, links in f.states.items()}
    state_refs = tuple(nvml_ref("nvmlDeviceGetNvLinkState", (i, 0)) for i in f.states)
    if all(r.error == "NOT_SUPPORTED" for r in first.values()):
        return not_applicable(check, AREA, title, _no_nvlink(f), evidence=state_refs)
    active = [(i, k) for i, links in f.states.items() for k, r in links.items() if r.ok and r.value == 1]
    if not active:
        return unknown(check, AREA, title, "no active NVLink to read counters from (see nvlink.links)", evidence=state_refs)
    refs = tuple(nvml_ref("nvmlDeviceGetNvLinkErrorCounter", key) for key in f.counters)
    if not f.counters:
        return unknown(
            check,
            AREA,
            title,
            f"nvmlDeviceGetNvLinkErrorCounter gave no value for {len(active)} active links",
            evidence=tuple(nvml_ref("nvmlDeviceGetNvLinkErrorCounter", (i, k, 0)) for i, k in active[:8]),
        )
    errors = {key: v for key, v in f.counters.items() if v > 0}
    links_read = len({(i, k) for i, k, _ in f.counters})
    if not errors:
        return ok(
            check,
            AREA,
            title,
            f"replay, recovery and CRC counters 0 on {links_read} active links",
            expected="error counters 0",
            explanation="Counters are cumulative since the last driver load or reset; read them again under load.",
            evidence=refs,
        )
    by_gpu: dict[int, list[str]] = {}
    for (i, link, counter), value in sorted(errors.items()):
        by_gpu.setdefault(i, []).append(f"link {link} {COUNTERS[counter]}={value}")
    observed = "; ".join(f"{label(f.inventory, i)}: {', '.join(items)}" for i, items in by_gpu.items())
    if all(c in CRC_COUNTERS for _, _, c in errors):
        # Seen on healthy H200s: CRC counts on every link, no replay or recovery. Retry corrects them.
        return ok(
            check,
            AREA,
            title,
            f"CRC counts only, no replay or recovery on {links_read} active links: {observed}",
            expected="no replays or recoveries; CRC counts that do not climb fast under load",
            explanation="Receive CRC errors are detected and corrected by link-level retry; healthy NVLink4 links "
            "accumulate some, and one reading cannot show a rate. Read `nvidia-smi nvlink -e` before and after a load: "
            "CRC counts climbing by thousands, or any replay or recovery, point at a marginal link.",
            evidence=refs,
        )
    severity: Severity = "medium" if any(c in SERIOUS_COUNTERS for _, _, c in errors) else "low"
    return problem(
        check,
        AREA,
        title,
        severity,
        observed,
        "error counters 0",
        "NVLink error counters are cumulative since the last reset: CRC errors are detected and corrected by "
        "link-level retry (replays), costing a little bandwidth, and healthy links accumulate some; recoveries mean "
        "the link retrained, stalling every transfer on it. Compare two readings under load: CRC counts that climb "
        "fast, or any recoveries, point at a marginal link, connector or bridge and precede Xid 74 and link loss.",
        _hardware_fix(f),
        subjects=labels(f.inventory, sorted(by_gpu)),
        evidence=refs,
    )


def judge(f: NvlinkFacts) -> list[Finding]:
    return [judge_links(f), judge_errors(f)]


DOCS = {
    "nvlink.links": CheckDoc(
        "NVLink links",
        "NVML NvLink state per link",
        "a link inactive where its peers have it active; PCIe-only cards: not applicable",
        "reset; reseat or RMA",
        ("hardware",),
    ),
    "nvlink.errors": CheckDoc(
        "NVLink error counters",
        "NVML NvLink error counters (replay, recovery, CRC flit, CRC data) of every active link",
        "any counter above 0 (medium for recoveries; CRC and replay counts, corrected by link-level retry, low)",
        "reset; reseat or RMA if they keep rising",
        ("hardware",),
    ),
}


INVESTIGATOR = Investigator(area=AREA, title="NVLink links and errors", checks=CHECKS, collect=collect, judge=judge, docs=DOCS)
