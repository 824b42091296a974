"""nvlink facts: NVML NvLink state and error counters of every link of every GPU; plus the helpers the nvlink rules share."""

from __future__ import annotations

import re
from collections.abc import Iterable

from rigaudit.agents.check import Check
from rigaudit.agents.facts.gpus import GpuInventory, collect_gpus
from rigaudit.agents.facts.nvml_reads import nvml_unusable
from rigaudit.agents.facts.p2p_context import FABRIC_COMPLETED
from rigaudit.agents.facts.platform import Platform, detect_platform
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.investigators.cloud import for_cloud
from rigaudit.agents.investigators.driver.facts import RACK_GPUS
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import NvmlResult
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.schema.finding import Area, CommandAction, Finding, Fix

AREA: Area = "nvlink"


MAX_LINKS = 18


COUNTERS = {0: "DL_REPLAY", 1: "DL_RECOVERY", 2: "DL_CRC_FLIT", 3: "DL_CRC_DATA"}


SERIOUS_COUNTERS = frozenset({1})


CRC_COUNTERS = frozenset({2, 3})
"""CRC counts alone (no replay, no recovery) are judged ok: retry corrects them.

Recoveries (the link retrained) weigh more than replays and CRC errors, which link-level retry corrects and one
reading cannot turn into a rate (real H200s show CRC-data counts in the tens on healthy links)."""


ABSENT_STATES = frozenset({"NOT_SUPPORTED", "INVALID_ARGUMENT"})


class NvlinkFacts(Record):
    inventory: GpuInventory
    platform: Platform
    states: dict[int, dict[int, NvmlResult]]
    """GPU index -> link -> nvmlDeviceGetNvLinkState result (only links that were asked)."""
    counters: dict[tuple[int, int, int], int]
    """(GPU, link, counter) -> value, for the counters that were read."""
    fabric_pending: tuple[int, ...] = ()
    """GPUs whose NVSwitch fabric NVML reports not completed (the fabric manager trains and programs it)."""


async def _links(probe: Probe, index: int) -> dict[int, NvmlResult]:
    first = await probe.nvml("nvmlDeviceGetNvLinkState", index, 0)
    if first.error in ABSENT_STATES:
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
    fabric = await probe.gather(*[lambda i=i: probe.nvml("nvmlDeviceGetGpuFabricInfo", i) for i in indices])
    pending = tuple(
        i
        for i, r in zip(indices, fabric, strict=True)
        if r.ok and isinstance(r.value, dict) and r.value.get("state") not in (None, 0, FABRIC_COMPLETED)
    )
    return NvlinkFacts(inventory, platform, states, counters, pending)


def _short_names(inventory: GpuInventory) -> str:
    names = sorted({g.name.removeprefix("NVIDIA ").strip() for g in inventory.gpus})
    return ", ".join(names) or "these GPUs"


def no_nvlink_reason(f: NvlinkFacts) -> str:
    return (
        f"NVML reports no NVLink on {_short_names(f.inventory)} (NOT_SUPPORTED on link 0): a PCIe-only card, "
        "or NVLink not exposed to this machine (a single GPU passed into a VM)"
    )


def without_nvlink(check: Check, f: NvlinkFacts, evidence: tuple[str, ...]) -> Finding | None:
    """``check``'s verdict where no link can be judged: unknown where NVML is unusable, not applicable where no GPU
    has NVLink (its first link NOT_SUPPORTED); None where the links are to be judged."""
    if why := nvml_unusable(f.inventory):
        return check.unknown(why)
    if all(links[0].error == "NOT_SUPPORTED" for links in f.states.values()):
        return check.not_applicable(no_nvlink_reason(f), evidence=evidence)
    return None


def hardware_fix(f: NvlinkFacts, indices: Iterable[int] = ()) -> Fix:
    """Reset, reseat, RMA; on a rack's compute tray the link's other end, the rack's NVLink switch tray and its
    cable cartridge, is checked too; on a cloud instance a stop and start and a report naming the GPUs at ``indices``."""
    tray = any(re.search(RACK_GPUS, g.name or "") for g in f.inventory.gpus)
    last = (
        "with the server stopped, reset the GPUs or reboot; if it persists, check the other end of the link on the "
        "rack's NVLink switch tray (its NVOS port state) and the rack's cable cartridge, then RMA the tray or the "
        "switch tray"
        if tray
        else "with the server stopped, reset the GPUs or reboot; reseat or RMA if it persists"
    )
    fix = Fix(
        kind="hardware",
        where=layer_where(f.platform, "hardware"),
        summary="Reset the affected GPUs; if links stay down or counters keep rising, "
        + ("check the rack's NVLink switch tray at the other end, then RMA" if tray else "reseat (SXM: baseboard) and RMA"),
        actions=(
            CommandAction(description="record the state", argv=("nvidia-smi", "nvlink", "-s")),
            CommandAction(description="record the error counters", argv=("nvidia-smi", "nvlink", "-e")),
            CommandAction(description=last),
        ),
        risk="medium",
        verify="nvidia-smi nvlink -s shows every link up at full speed; nvidia-smi nvlink -e counters stop rising under load",
        revert="none",
        persist="hardware changes persist",
    )
    wanted = set(indices)
    return for_cloud(fix, f.platform, [g for g in f.inventory.gpus if g.index in wanted])
