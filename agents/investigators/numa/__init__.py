"""numa: automatic NUMA balancing, where each GPU, its interrupts and the RDMA NICs sit relative to the CPU sockets,
huge page reservations and zone reclaim.

``facts`` reads the evidence (with ``memory`` and ``devices``); the rules: ``balancing`` (numa.balancing),
``placement`` (numa.gpu_affinity), ``memory`` (numa.hugepages, numa.zone_reclaim) and ``devices``
(numa.irq_affinity, numa.nic_affinity).
"""

from __future__ import annotations

from rigaudit.agents.investigator import Investigator
from rigaudit.agents.investigators.numa.balancing import BALANCING_CHECK, judge_balancing
from rigaudit.agents.investigators.numa.devices import (
    IRQ_AFFINITY_CHECK,
    NIC_AFFINITY_CHECK,
    judge_irq_affinity,
    judge_nic_affinity,
)
from rigaudit.agents.investigators.numa.facts import AREA, NumaFacts, collect
from rigaudit.agents.investigators.numa.memory import HUGEPAGES_CHECK, ZONE_RECLAIM_CHECK, judge_hugepages, judge_zone_reclaim
from rigaudit.agents.investigators.numa.placement import GPU_AFFINITY_CHECK, judge_gpu_affinity
from rigaudit.tools.schema.finding import Finding

ORDER = 30


def judge(facts: NumaFacts) -> list[Finding]:
    nodes = len(facts.nodes) if facts.nodes is not None else None
    return [
        judge_balancing(facts),
        judge_gpu_affinity(facts),
        judge_hugepages(facts.memory),
        judge_zone_reclaim(facts.memory, nodes),
        judge_irq_affinity(facts.devices, nodes),
        judge_nic_affinity(facts.devices, facts.gpus, nodes),
    ]


INVESTIGATOR: Investigator[NumaFacts] = Investigator(
    area=AREA,
    title="NUMA placement: balancing, GPUs, interrupts, NICs and memory",
    checks=(BALANCING_CHECK, GPU_AFFINITY_CHECK, HUGEPAGES_CHECK, ZONE_RECLAIM_CHECK, IRQ_AFFINITY_CHECK, NIC_AFFINITY_CHECK),
    collect=collect,
    judge=judge,
)
