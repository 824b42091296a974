"""cuda's premises: the facts its verdicts rest on (:mod:`rigaudit.agents.premise`), read off :class:`CudaFacts`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rigaudit.agents.facts import premise_reads as reads
from rigaudit.agents.premise import Premise, Reading

if TYPE_CHECKING:
    from rigaudit.agents.investigators.cuda.facts import CudaFacts


def _gpu_config(facts: CudaFacts) -> Reading:
    return reads.gpu_config(facts.inventory, sum(1 for m in facts.mig_states if m.current == 1))


PLATFORM = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.platform))
GPUS = Premise("gpus", reads.GPUS_READS, lambda f: reads.gpus(f.inventory))
NVML = Premise("nvml", reads.NVML_READS, lambda f: reads.nvml(f.inventory))
SERVERS = Premise("servers", reads.SERVERS_READS, lambda f: reads.servers(f.scan))
GPU_CONFIG = Premise("gpu_config", "NVML MIG mode, virtualization mode", _gpu_config)
