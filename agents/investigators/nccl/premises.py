"""nccl's premises: the facts its verdicts rest on (:mod:`rigaudit.agents.premise`), read off :class:`NcclFacts`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rigaudit.agents.facts import premise_reads as reads
from rigaudit.agents.premise import Premise, Reading, held

if TYPE_CHECKING:
    from rigaudit.agents.investigators.nccl.facts import NcclFacts


def _packages(facts: NcclFacts) -> Reading:
    installs = facts.version.installs
    if not installs:
        return held(f"no torch install (searched {', '.join(facts.version.searched[:3]) or 'nothing'})")
    return held("; ".join(f"torch {i.torch.version or '?'} pins {i.pin or 'no NCCL'}" for i in installs[:3]))


def _gpus(facts: NcclFacts) -> Reading:
    gpus = facts.p2p.gpus
    return held(f"{len(gpus)} GPU(s): {', '.join(dict.fromkeys(g.name for g in gpus))}" if gpus else "no NVIDIA GPU")


def _rdma(facts: NcclFacts) -> Reading:
    return held(", ".join(facts.ib_devices) or "no InfiniBand device")


PLATFORM = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.version.platform))
PLATFORM_FIX = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.version.platform), guards=("problem",))
"""Where a fix runs (this host, the hypervisor, the container's host): a problem rests on it, an ok does not."""
SERVERS = Premise("servers", reads.SERVERS_READS, lambda f: reads.servers(f.scan))
PACKAGES = Premise("packages", "torch's and the nvidia-nccl wheel's dist-info", _packages)
RDMA = Premise("rdma", reads.RDMA_READS, _rdma)
GPUS = Premise("gpus", reads.GPUS_READS, _gpus)
