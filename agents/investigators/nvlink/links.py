"""nvlink.links: is every NVLink link of every GPU active?"""

from __future__ import annotations

import re

from rigaudit.agents.check import Check
from rigaudit.agents.facts.nvml_reads import label, labels
from rigaudit.agents.investigators.driver.facts import RACK_GPUS
from rigaudit.agents.investigators.nvlink import premises
from rigaudit.agents.investigators.nvlink.facts import ABSENT_STATES, NvlinkFacts, hardware_fix, without_nvlink
from rigaudit.tools.hosts.probe import nvml_ref
from rigaudit.tools.schema.finding import Finding

NVLINK_LINKS_CHECK = Check(
    "nvlink.links",
    "NVLink links",
    reads="NVML NvLink state per link",
    problem="a link inactive where its peers have it active; PCIe-only cards: not applicable",
    fix="reset; reseat or RMA (a cloud instance: stop and start it, report the GPU to the provider)",
    kinds=("hardware",),
    premises=(premises.PLATFORM, premises.GPUS, premises.NVML, premises.NVLINK),
)


def judge_links(f: NvlinkFacts) -> Finding:
    refs = tuple(nvml_ref("nvmlDeviceGetNvLinkState", (i, k)) for i, links in f.states.items() for k in links)
    if skipped := without_nvlink(NVLINK_LINKS_CHECK, f, refs):
        return skipped
    active, present, unread = _link_states(f)
    if not any(present.values()):
        return NVLINK_LINKS_CHECK.unknown("NVLink state not readable: " + "; ".join(unread[:4]), evidence=refs)
    if not any(active.values()):
        return _no_active_link(f, refs)
    return _links_against_peers(f, active, present, unread, refs)


def _link_states(f: NvlinkFacts) -> tuple[dict[int, set[int]], dict[int, set[int]], list[str]]:
    """Per GPU index, its active links and the links it has; and the links whose state was not read."""
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
            elif result.error not in ABSENT_STATES:
                error = "not recorded in this snapshot" if result.error == "NOT_RECORDED" else result.error
                unread.append(f"{label(f.inventory, index)} link {link}: {error}")
    return active, present, unread


def _no_active_link(f: NvlinkFacts, refs: tuple[str, ...]) -> Finding:
    """No link up on any GPU: one GPU has no peer; a fabric not completed brings them up later; else unknown."""
    if len(f.states) == 1:
        why = (
            "one GPU and no active NVLink: there is no GPU peer to link to (a Grace Hopper's NVLink-C2C to its CPU is "
            "not an NVLink port)"
        )
        return NVLINK_LINKS_CHECK.not_applicable(why, evidence=refs)
    tray = any(re.search(RACK_GPUS, g.name or "") for g in f.inventory.gpus)  # a rack's fabric is its switch trays'
    if f.fabric_pending:
        return NVLINK_LINKS_CHECK.unknown(
            f"no active NVLink on {len(f.states)} GPUs, and NVML reports the "
            + ("rack's NVLink fabric" if tray else "NVSwitch fabric")
            + f" of {len(f.fabric_pending)} of them "
            + (
                "not completed: on this rack's compute tray the rack's NVLink switch trays (their fabric manager on "
                "NVOS) train and program these links, so they come up with the rack's fabric (see "
                "driver.fabricmanager); judge the links once it is up"
                if tray
                else "not completed: the fabric manager trains and programs these links, so they come up with it (see "
                "driver.fabricmanager); judge the links once it runs"
            ),
            evidence=(*refs, *(nvml_ref("nvmlDeviceGetGpuFabricInfo", (i,)) for i in f.fabric_pending[:4])),
        )
    return NVLINK_LINKS_CHECK.unknown(
        "NVLink-capable GPUs report no active link: either no NVLink bridge or NVSwitch is fitted, or the fabric is "
        "down (SXM boards: see driver.fabricmanager)",
        evidence=refs,
    )


def _links_against_peers(
    f: NvlinkFacts, active: dict[int, set[int]], present: dict[int, set[int]], unread: list[str], refs: tuple[str, ...]
) -> Finding:
    """Each GPU's links against those active on its peers: a link down where the peers have it up is a problem."""
    peers_active = set().union(*active.values())
    down = {i: sorted((present[i] & peers_active) - active[i]) for i in active}
    down = {i: links for i, links in down.items() if links}
    counts = sorted({len(v) for v in active.values()})
    summary = f"{'/'.join(map(str, counts))} active links per GPU on {len(active)} GPUs"
    if not down and unread:  # a link not read may be the one down: no verdict on what was not read
        return NVLINK_LINKS_CHECK.unknown(
            f"{summary}, every link read that is active on its peers is active here; not read: {'; '.join(unread[:4])}"
            + (f" and {len(unread) - 4} more" if len(unread) > 4 else "")
            + ": reading those links' state (nvidia-smi nvlink -s) would tell",
            evidence=refs,
        )
    if not down:
        return NVLINK_LINKS_CHECK.ok(
            f"{summary}, every link active on its peers is active here",
            expected="the same links active on every GPU",
            evidence=refs,
        )
    parts = [f"{label(f.inventory, i)}: link {', '.join(map(str, links))} inactive" for i, links in down.items()]
    return NVLINK_LINKS_CHECK.problem_at(
        "high",
        f"{'; '.join(parts)} ({summary})",
        "the same links active on every GPU",
        "An NVLink that is down where its peers have it up removes that share of the GPU's NVLink bandwidth, and "
        "NCCL's rings and trees run at the pace of the weakest GPU.",
        hardware_fix(f, down),
        subjects=labels(f.inventory, sorted(down)),
        evidence=refs,
    )
