"""container's premises: the facts its verdicts rest on (:mod:`rigaudit.agents.premise`), read off :class:`ContainerFacts`."""

from __future__ import annotations

from rigaudit.agents.facts import premise_reads as reads
from rigaudit.agents.premise import Premise

PLATFORM = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.platform))
PLATFORM_FIX = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.platform), guards=("problem",))
"""Where a fix runs (this host, the hypervisor, the container's host): a problem rests on it, an ok does not."""
GPUS = Premise("gpus", reads.GPUS_READS, lambda f: reads.gpus(f.inventory))
SERVERS = Premise("servers", reads.SERVERS_READS, lambda f: reads.servers(f.scan))
RDMA = Premise("rdma", reads.RDMA_READS, lambda f: reads.rdma(f.rdma))
