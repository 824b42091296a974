"""cuda's premises: the facts its verdicts rest on (:mod:`rigaudit.agents.premise`), read off :class:`CudaFacts`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rigaudit.agents.facts import premise_reads as reads
from rigaudit.agents.premise import Premise, Reading, missing

if TYPE_CHECKING:
    from rigaudit.agents.investigators.cuda.facts import CudaFacts


UNANSWERED = ("NOT_SUPPORTED", "NOT_FOUND")
"""NVML's answers that a GPU has no MIG mode (not a failure to read it)."""


def _gpu_config(facts: CudaFacts) -> Reading:
    unread = {i: e for i, e in facts.mig.failed().items() if e not in UNANSWERED}
    if unread and facts.inventory.nvml_ok:
        shown = ", ".join(f"GPU{i}: {e or 'no answer'}" for i, e in sorted(unread.items())[:4])
        return missing(f"MIG mode unread ({shown}); nvmlDeviceGetMigMode (nvidia-smi -q -d MIG) would tell")
    return reads.gpu_config(facts.inventory, sum(1 for m in facts.mig_states if m.current == 1))


PLATFORM = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.platform))
PLATFORM_FIX = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.platform), guards=("problem",))
"""Where a fix runs (this host, the hypervisor, the container's host): a problem rests on it, an ok does not."""
GPUS = Premise("gpus", reads.GPUS_READS, lambda f: reads.gpus(f.inventory))
NVML = Premise("nvml", reads.NVML_READS, lambda f: reads.nvml(f.inventory))
SERVERS = Premise("servers", reads.SERVERS_READS, lambda f: reads.servers(f.scan))
GPU_CONFIG = Premise("gpu_config", "NVML MIG mode, virtualization mode", _gpu_config)
