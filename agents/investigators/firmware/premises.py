"""firmware's premises: the facts its verdicts rest on (:mod:`rigaudit.agents.premise`), read off :class:`FirmwareFacts`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rigaudit.agents.facts import premise_reads as reads
from rigaudit.agents.premise import Premise, Reading, held, missing

if TYPE_CHECKING:
    from rigaudit.agents.investigators.firmware.facts import FirmwareFacts


def _gpus(facts: FirmwareFacts) -> Reading:
    names = dict.fromkeys(g.gpu.name for g in facts.gpus)
    return held(f"{len(facts.gpus)} GPU(s): {', '.join(names)}" if facts.gpus else "no NVIDIA GPU")


def _cpu(facts: FirmwareFacts) -> Reading:
    if facts.cpu is None or facts.cpu.vendor is None:
        return missing("/proc/cpuinfo (vendor_id, cpu family, model) would tell")
    return held(facts.cpu.model_name or facts.cpu.vendor)


def _kernel(facts: FirmwareFacts) -> Reading:
    return reads.kernel(facts.drivers.release if facts.drivers is not None else None)


def _p2p(facts: FirmwareFacts) -> Reading:
    if facts.context is None:
        return missing("NVML P2P status, NVLink state and /sys/class/infiniband would tell what reaches GPU memory")
    return reads.p2p_context(facts.context)


PLATFORM = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.platform))
GPUS = Premise("gpus", reads.GPUS_READS, _gpus)
CPU = Premise("cpu", "`/proc/cpuinfo`", _cpu)
KERNEL = Premise("kernel", reads.KERNEL_READS, _kernel, guards=("problem",))
"""CPPC serves only amd_pstate: a missing CPPC is a fault only on a kernel that has it (present CPPC is ok anyway)."""
P2P = Premise("p2p", "NVML P2P status, NVLink state, RDMA NICs", _p2p, guards=("problem",))
