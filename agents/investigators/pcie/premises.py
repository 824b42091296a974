"""pcie's premises: the facts its verdicts rest on (:mod:`rigaudit.agents.premise`), read off :class:`PcieFacts`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rigaudit.agents.facts import premise_reads as reads
from rigaudit.agents.premise import Premise, Reading, held, missing

if TYPE_CHECKING:
    from rigaudit.agents.investigators.pcie.facts import PcieFacts


def _gpus(facts: PcieFacts) -> Reading:
    if not facts.gpus:
        return held("no NVIDIA GPU" + (f"; NVML: {facts.nvml_error}" if facts.nvml_error else ""))
    return held(f"{len(facts.gpus)} GPU(s): {', '.join(dict.fromkeys(g.name for g in facts.gpus))}")


def _topology(facts: PcieFacts) -> Reading:
    unread = [g.bdf for g in facts.gpus if (c := facts.chains.get(g.bdf)) is None or c.chain is None]
    if unread:
        return missing(f"the sysfs path of {', '.join(unread[:4])} is unreadable; its /sys/bus/pci/devices link would tell")
    bridges = {b for c in facts.chains.values() for b in c.bridges}
    return held(f"{len(bridges)} bridge(s) above {len(facts.gpus)} GPU(s)")


PLATFORM = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.platform))
PLATFORM_FIX = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.platform), guards=("problem",))
"""Where a fix runs (this host, the hypervisor, the container's host): a problem rests on it, an ok does not."""
GPUS = Premise("gpus", reads.GPUS_READS, _gpus)
TOPOLOGY = Premise("pci_topology", "the `/sys/bus/pci/devices/BDF` links of the GPUs", _topology)
