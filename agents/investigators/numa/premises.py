"""numa's premises: the facts its verdicts rest on (:mod:`rigaudit.agents.premise`), read off :class:`NumaFacts`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rigaudit.agents.facts import premise_reads as reads
from rigaudit.agents.premise import Premise, Reading, held, missing

if TYPE_CHECKING:
    from rigaudit.agents.investigators.numa.facts import NumaFacts


def _numa(facts: NumaFacts) -> Reading:
    if facts.nodes is None:
        return missing("/sys/devices/system/node would tell")
    return held(f"{len(facts.nodes)} node(s)")


def _gpus(facts: NumaFacts) -> Reading:
    if facts.gpus:
        return held(f"{len(facts.gpus)} GPU(s): {', '.join(dict.fromkeys(g.name for g in facts.gpus))}")
    return held(facts.gpu_error or "no NVIDIA GPU")


def _rdma(facts: NumaFacts) -> Reading:
    nics = facts.devices.nics
    if nics is None:
        return missing(f"/sys/class/infiniband: {facts.devices.nics_error or 'not listable'}; listing it would tell")
    return held(", ".join(n.name for n in nics) or "no RDMA NIC")


PLATFORM = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.platform))
PLATFORM_FIX = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.platform), guards=("problem",))
"""Where a fix runs (this host, the hypervisor, the container's host): a problem rests on it, an ok does not."""
NUMA = Premise("numa", "`/sys/devices/system/node`", _numa)
GPUS = Premise("gpus", "`/sys/bus/pci/devices/*/{numa_node,local_cpulist}`", _gpus)
RDMA = Premise("rdma", reads.RDMA_READS, _rdma)
SERVERS = Premise(
    "servers",
    reads.SERVERS_READS + ", their `/proc/PID/status` (`Cpus_allowed_list`, `Mems_allowed_list`)",
    lambda f: reads.servers(f.scan),
)
OS = Premise("os", reads.OS_READS, lambda f: reads.os_image(f.platform.image), guards=())
"""How a fix persists (systemctl and /etc, or an image-based OS's own configuration): recorded, guarding no verdict."""
