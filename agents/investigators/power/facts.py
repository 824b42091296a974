"""power facts: the CPU side (:mod:`.cpu_facts`) and the GPU side (:mod:`.gpu`) of power management."""

from __future__ import annotations

from rigaudit.agents.facts.platform import detect_platform
from rigaudit.agents.investigators.power.cpu_facts import CpuPowerFacts, collect_cpu
from rigaudit.agents.investigators.power.gpu import GpuPowerFacts, collect_gpu
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe


class PowerFacts(Record):
    cpu: CpuPowerFacts
    gpu: GpuPowerFacts


async def collect(probe: Probe) -> PowerFacts:
    cpu = await collect_cpu(probe)
    gpu = await collect_gpu(probe, await detect_platform(probe))
    return PowerFacts(cpu, gpu)
