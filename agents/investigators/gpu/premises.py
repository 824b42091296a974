"""gpu's premises: the facts its verdicts rest on (:mod:`rigaudit.agents.premise`), read off :class:`GpuHealthFacts`."""

from __future__ import annotations

from rigaudit.agents.facts import premise_reads as reads
from rigaudit.agents.premise import Premise

PLATFORM = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.platform))
PLATFORM_FIX = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.platform), guards=("problem",))
"""Where a fix runs (this host, the hypervisor, the container's host): a problem rests on it, an ok does not."""
GPUS = Premise("gpus", reads.GPUS_READS, lambda f: reads.gpus(f.inventory))
NVML = Premise("nvml", reads.NVML_READS, lambda f: reads.nvml(f.inventory))
GPU_CONFIG = Premise("gpu_config", "NVML virtualization mode", lambda f: reads.gpu_config(f.inventory))
KERNEL_LOG = Premise(
    "kernel_log", reads.KERNEL_LOG_READS, lambda f: reads.kernel_log(f.dmesg, in_container=f.platform.in_container)
)
