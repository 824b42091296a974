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


_SESSION = r"/user\.slice/.*session-[^/]*\.scope(/|$)"
"""A login session's cgroup (systemd-logind): a user's nohup'd or double-forked process, reparented but still theirs."""


def _owned(cgroup: str | None) -> bool:
    """The cgroup still names an owner: a systemd service or a user's login session. (A job step's cgroup is kept
    while a process of its is left in it after the job ended, so it names no owner by itself.)"""
    paths = [line.rpartition(":")[2].strip() for line in (cgroup or "").splitlines()]
    return any(re.search(_SERVICE, path) or re.search(_SESSION, path) for path in paths)


def left_over(p: GpuProcess, ppid: int | None, platform: Platform) -> bool:
    """``p`` belongs to no job or server any more: on a host, no server, reparented to init, in no cgroup that names
    an owner (a service unit, a login session)."""
    if platform.in_container or p.contained or p.server:
        return False
    return ppid == 1 and not _owned(p.cgroup)


LEFTOVER_WHY = "left over (no server; parent pid 1: the job that started it is gone; in no service or login session): the node's"
NO_PROCESS_WHY = "held by no process NVML lists, seen from the host: a context nothing owns: the node's"

__all__ = ["LEFTOVER_WHY", "NO_PROCESS_WHY", "left_over"]
