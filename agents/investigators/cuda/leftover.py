"""Whose fault GPU memory held by others is: a workload's (a server or a job that runs owns its process), or the
node's (a process no job owns any more, or memory no process holds), the epilog's classic drain.

On a host (not from inside a container), a GPU process that is no server, whose parent is init (``PPid: 1``: its job's
step daemon or shell is gone) and that is no service of a systemd unit is left over from a job that ended; memory in
use while NVML lists no process is a context nothing owns. Either keeps the next job from that memory until someone
stops it or resets the GPU: draining is the fix, not an image change.
"""

from __future__ import annotations

import re

from rigaudit.agents.facts.platform import Platform
from rigaudit.agents.facts.processes import GpuProcess

_SERVICE = r"\.service(/|$)"
"""A cgroup path inside a systemd service unit: a daemon started on purpose, not a job's orphan."""


def _in_service(cgroup: str | None) -> bool:
    return any(re.search(_SERVICE, line.rpartition(":")[2].strip()) for line in (cgroup or "").splitlines())


def left_over(p: GpuProcess, ppid: int | None, platform: Platform) -> bool:
    """``p`` belongs to no job or server any more: on a host, no server, reparented to init, in no service unit."""
    if platform.in_container or p.contained or p.server:
        return False
    return ppid == 1 and not _in_service(p.cgroup)


LEFTOVER_WHY = "left over (no server; parent pid 1: the job that started it is gone; no service unit): the node's"
NO_PROCESS_WHY = "held by no process NVML lists, seen from the host: a context nothing owns: the node's"

__all__ = ["LEFTOVER_WHY", "NO_PROCESS_WHY", "left_over"]
