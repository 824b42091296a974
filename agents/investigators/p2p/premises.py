"""p2p's premises: the facts its verdicts rest on (:mod:`rigaudit.agents.premise`), read off :class:`P2pFacts`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rigaudit.agents.facts import premise_reads as reads
from rigaudit.agents.premise import Premise, Reading, held, missing

if TYPE_CHECKING:
    from rigaudit.agents.investigators.p2p.facts import P2pFacts


def _benchmark(facts: P2pFacts) -> Reading:
    if facts.bench.ok:
        return held(f"{facts.bench.path} read")
    return missing(f"{facts.bench.path}: {facts.bench.error or 'absent'}; `rigaudit bench p2p` writes it")


def _gpu_config(facts: P2pFacts) -> Reading:
    return reads.gpu_config(facts.inventory, len(facts.context.mig_on))


PLATFORM = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.platform))
GPUS = Premise("gpus", reads.GPUS_READS, lambda f: reads.gpus(f.inventory))
P2P = Premise("p2p", "NVML P2P status per pair, the GPU model's product line", lambda f: reads.p2p_context(f.context))
GPU_CONFIG = Premise("gpu_config", "NVML MIG mode, virtualization mode", _gpu_config)
BENCHMARK = Premise("benchmark", "`/var/tmp/rigaudit/p2p.json`", _benchmark)
