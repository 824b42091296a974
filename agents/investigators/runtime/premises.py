"""runtime's premises: the facts its verdicts rest on (:mod:`rigaudit.agents.premise`), read off :class:`RuntimeFacts`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rigaudit.agents.facts import premise_reads as reads
from rigaudit.agents.premise import Premise, Reading, held

if TYPE_CHECKING:
    from rigaudit.agents.investigators.runtime.facts import RuntimeFacts


def _packages(facts: RuntimeFacts) -> Reading:
    if not facts.installs:
        return held(f"no torch install (searched {', '.join(facts.searched[:3]) or 'nothing'})")
    return held("; ".join(f"torch {i.version or '?'} (CUDA {i.cuda or 'none'})" for i in facts.installs[:3]))


PLATFORM = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.platform))
PLATFORM_FIX = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.platform), guards=("problem",))
"""Where a fix runs (this host, the hypervisor, the container's host): a problem rests on it, an ok does not."""
GPUS = Premise("gpus", reads.GPUS_READS, lambda f: reads.gpus(f.inventory))
NVML = Premise("nvml", reads.NVML_READS, lambda f: reads.nvml(f.inventory))
SERVERS = Premise("servers", reads.SERVERS_READS, lambda f: reads.servers(f.scan))
PACKAGES = Premise("packages", "the serving Python's `torch/version.py`", _packages)
