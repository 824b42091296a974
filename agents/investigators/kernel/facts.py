"""kernel facts: the boot command line and runtime knobs (:mod:`.params`) and the running kernel's version
(:mod:`.version`)."""

from __future__ import annotations

from rigaudit.agents.investigators.kernel.params import KernelParamsFacts
from rigaudit.agents.investigators.kernel.params import collect as collect_params
from rigaudit.agents.investigators.kernel.version import KernelVersionFacts
from rigaudit.agents.investigators.kernel.version import collect as collect_version
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe


class KernelFacts(Record):
    params: KernelParamsFacts
    version: KernelVersionFacts


async def collect(probe: Probe) -> KernelFacts:
    return KernelFacts(await collect_params(probe), await collect_version(probe))
