"""container: where the audit runs, and whether containers get their GPUs, locked memory, /dev/shm and CPUs.

``facts`` reads the evidence (with ``cpu``); the rules: ``platform`` (container.platform), ``devices``
(container.gpu_devices), ``memlock`` (container.memlock), ``shm`` (container.shm) and ``cpu`` (container.cgroup_cpu).
"""

from __future__ import annotations

from rigaudit.agents.investigator import Investigator
from rigaudit.agents.investigators.container.cpu import CGROUP_CPU_CHECK, judge_cgroup_cpu
from rigaudit.agents.investigators.container.devices import GPU_DEVICES_CHECK, judge_gpu_devices
from rigaudit.agents.investigators.container.facts import AREA, ContainerFacts, collect
from rigaudit.agents.investigators.container.memlock import MEMLOCK_CHECK, judge_memlock
from rigaudit.agents.investigators.container.platform import PLATFORM_CHECK, judge_platform
from rigaudit.agents.investigators.container.shm import SHM_CHECK, judge_shm
from rigaudit.tools.schema.finding import Finding

ORDER = 110


def judge(f: ContainerFacts) -> list[Finding]:
    return [judge_platform(f), judge_gpu_devices(f), judge_memlock(f), judge_shm(f), judge_cgroup_cpu(f.cpu)]


INVESTIGATOR: Investigator[ContainerFacts] = Investigator(
    area=AREA,
    title="Platform and container GPU access and limits",
    checks=(PLATFORM_CHECK, GPU_DEVICES_CHECK, MEMLOCK_CHECK, SHM_CHECK, CGROUP_CPU_CHECK),
    collect=collect,
    judge=judge,
)
