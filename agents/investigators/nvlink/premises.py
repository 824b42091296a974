"""nvlink's premises: the facts its verdicts rest on (:mod:`rigaudit.agents.premise`), read off :class:`NvlinkFacts`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rigaudit.agents.facts import premise_reads as reads
from rigaudit.agents.premise import Premise, Reading, held

if TYPE_CHECKING:
    from rigaudit.agents.investigators.nvlink.facts import NvlinkFacts


def _nvlink(facts: NvlinkFacts) -> Reading:
    links = sum(len(s) for s in facts.states.values())
    pending = f"; fabric pending on {len(facts.fabric_pending)} GPU(s)" if facts.fabric_pending else ""
    return held(f"{links} link state(s) on {len(facts.states)} GPU(s){pending}")


PLATFORM = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.platform))
GPUS = Premise("gpus", reads.GPUS_READS, lambda f: reads.gpus(f.inventory))
NVML = Premise("nvml", reads.NVML_READS, lambda f: reads.nvml(f.inventory))
NVLINK = Premise("nvlink", "NVML NvLink state per link, fabric info", _nvlink)
