"""container.memlock: the locked-memory limit of GPU containers and servers."""

from __future__ import annotations

import re

from rigaudit.agents.check import Check
from rigaudit.agents.facts.lxc import LxcConfig
from rigaudit.agents.investigators.container import premises
from rigaudit.agents.investigators.container.facts import (
    ContainerFacts,
    lxc_fix,
    no_gpu_here,
    rdma_devices_here,
    servers_runtime,
)
from rigaudit.tools.hosts.probe import dir_ref, file_ref
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix


def parse_memlock(limits: str | None) -> str | None:
    """The soft limit of ``Max locked memory`` in /proc/PID/limits (``unlimited`` or bytes)."""
    match = re.search(r"^Max locked memory\s+(\S+)\s+(\S+)", limits or "", re.MULTILINE)
    return match.group(1) if match else None


def _unlimited(value: str) -> bool:
    return value.split(":", maxsplit=1)[0].strip().lower() in ("unlimited", "infinity", "-1")


MEMLOCK_CHECK = Check(
    "container.memlock",
    "Locked-memory limit",
    reads="`/proc/PID/limits` of the servers, `/proc/self/limits` in a container, LXC `lxc.prlimit.memlock`",
    problem="limited (RDMA registration and pinned buffers fail or shrink)",
    fix="raise it to unlimited",
    kinds=("restart",),
    premises=(premises.PLATFORM_FIX, premises.SERVERS, premises.RDMA),
    layer="workload",
)


def _read_limits(f: ContainerFacts) -> tuple[list[str], list[str], list[str], LxcConfig | None]:
    """(limited, unlimited, refs, the first LXC config to fix) from the LXC configs and the servers' limits."""
    limited: list[str] = []
    seen: list[str] = []
    refs: list[str] = []
    lxc_fix_config: LxcConfig | None = None
    for config in f.lxc.gpu_configs:
        refs.append(config.ref)
        value = config.memlock
        if value is not None and _unlimited(value):
            seen.append(f"container {config.ctid}: lxc.prlimit.memlock {value}")
        else:
            limited.append(f"container {config.ctid}: lxc.prlimit.memlock {value or 'not set (inherits the LXC default)'}")
            lxc_fix_config = lxc_fix_config or config
    for server in f.scan.servers[:16]:
        soft = parse_memlock(f.server_limits.get(server.pid))
        if soft is None:
            continue
        refs.append(file_ref(f"/proc/{server.pid}/limits"))
        (seen if _unlimited(soft) else limited).append(f"{server.label}: max locked memory {soft}")
    return limited, seen, refs, lxc_fix_config


_UNLIMITED_BY = {
    "docker": "recreate the container with --ulimit memlock=-1:-1",
    "podman": "recreate the container with --ulimit memlock=-1:-1",
    "lxc": "set lxc.prlimit.memlock: unlimited in its config",
}
"""How each container runtime is given an unlimited locked-memory limit."""


def _raise_limit_fix(f: ContainerFacts, lxc_fix_config: LxcConfig | None) -> Fix:
    """lxc.prlimit.memlock for an LXC container; else the runtime's own way (a Kubernetes node's containerd unit)."""
    if lxc_fix_config is not None:
        return lxc_fix(
            lxc_fix_config,
            None,
            f"Set lxc.prlimit.memlock: unlimited for container {lxc_fix_config.ctid}",
            ["lxc.prlimit.memlock: unlimited"],
        )
    runtime = servers_runtime(f)
    k8s = runtime in ("kubernetes", "k8s", "containerd")
    how = _UNLIMITED_BY.get(
        runtime, "docker: --ulimit memlock=-1:-1; systemd unit: LimitMEMLOCK=infinity; LXC: lxc.prlimit.memlock"
    )
    if k8s:
        how = (
            "a pod cannot raise its own RLIMIT_MEMLOCK: containers inherit the container runtime's, so set "
            "LimitMEMLOCK=infinity for containerd (systemctl edit containerd) on the node, restart it, then the pod"
        )
    if f.rootless.rootless:
        return _rootless_fix(f)
    inside = f.platform.in_container or any(s.container for s in f.scan.servers)
    return Fix(
        kind="restart",
        where="container_host" if k8s else "container_config" if inside else "host",
        summary="Raise the locked-memory limit of the server to unlimited",
        actions=(CommandAction(description=how + "; then restart the server"),),
        risk="low",
        verify="grep 'Max locked memory' /proc/PID/limits of the server shows unlimited",
        revert="restore the previous limit and restart",
        persist="the container or unit config",
    )


def _rootless_fix(f: ContainerFacts) -> Fix:
    """A rootless container's limits are capped by its user's hard limit on the host: raise that first."""
    user = f"uid {f.rootless.host_uid}" if f.rootless.host_uid is not None else "the user that runs the container"
    return Fix(
        kind="restart",
        where="container_host" if f.platform.in_container else "host",
        summary=f"Raise the locked-memory hard limit of {user} on the host, then recreate the rootless container",
        actions=(
            CommandAction(
                description=f"on the host: a rootless container cannot raise RLIMIT_MEMLOCK above its user's hard limit "
                f"({f.rootless.how}); set it for {user}: a line '<user> - memlock unlimited' in "
                "/etc/security/limits.d/90-memlock.conf for a login session, or LimitMEMLOCK=infinity in a drop-in "
                f"for user@{f.rootless.host_uid or '<uid>'}.service when the user's systemd runs the container"
            ),
            CommandAction(
                description="log the user in again (or restart its user manager), then recreate the container with "
                "--ulimit memlock=-1:-1 and restart the server"
            ),
        ),
        risk="low",
        verify="grep 'Max locked memory' /proc/PID/limits of the server shows unlimited",
        revert="remove the limits.d line or the drop-in, and recreate the container",
        persist="the limits.d file or the user@.service drop-in, and the container's definition",
    )


def judge_memlock(f: ContainerFacts) -> Finding:
    if (none_here := no_gpu_here(MEMLOCK_CHECK, f)) is not None:
        return none_here
    limited, seen, refs, lxc_fix_config = _read_limits(f)
    if not limited and not seen and f.platform.in_container:
        soft = parse_memlock(f.self_limits)
        refs.append(file_ref("/proc/self/limits"))
        if soft is None:
            return MEMLOCK_CHECK.unknown("/proc/self/limits not readable", evidence=refs)
        (seen if _unlimited(soft) else limited).append(f"this container: max locked memory {soft}")
    if not limited and not seen:
        if f.platform.in_container or f.lxc.gpu_configs:
            return MEMLOCK_CHECK.unknown("locked-memory limit not readable", evidence=refs)
        return MEMLOCK_CHECK.not_applicable("not a container, and hosts no GPU containers", evidence=refs)
    if not limited:
        return MEMLOCK_CHECK.ok("; ".join(seen), expected="unlimited", evidence=refs)
    return _limited_problem(f, limited, refs, lxc_fix_config)


def _rdma_reach(f: ContainerFacts) -> tuple[bool, str]:
    """Whether the limit meets RDMA registrations here (medium), and why (the observed text's tail)."""
    if not f.rdma.active_nics:
        return False, "; no active RDMA NIC"
    if rdma_devices_here(f) is False:
        which = "this container" if f.platform.in_container else "the server's container (/proc/PID/root/dev)"
        return False, f"; the host's RDMA NICs are not passed into {which} (no /dev/infiniband)"
    return True, ""


def _dev_unread(f: ContainerFacts) -> str:
    if f.platform.in_container:
        return f"this container's /dev could not be listed ({f.dev_error or 'not read'})"
    unread = [f"/proc/{pid}/root/dev" for pid, d in f.server_dev.items() if d is None]
    return f"the server's container's /dev could not be listed ({', '.join(unread)})"


def _limited_problem(f: ContainerFacts, limited: list[str], refs: list[str], lxc_fix_config: LxcConfig | None) -> Finding:
    if f.rdma.active_nics and rdma_devices_here(f) is None:
        return MEMLOCK_CHECK.unknown(
            "; ".join(limited) + f"; {_dev_unread(f)}, so whether "
            "the host's active RDMA NICs are passed in is unread: medium if /dev/infiniband is there (NCCL's "
            "registrations hit the limit), low if not; `ls /dev/infiniband` in the container would tell",
            subjects=tuple(s.split(":")[0] for s in limited),
            evidence=(*refs, *f.rdma.refs, dir_ref("/dev")),
        )
    rdma, why = _rdma_reach(f)
    return MEMLOCK_CHECK.problem_at(
        "medium" if rdma else "low",
        "; ".join(limited) + why,
        "unlimited",
        "RDMA memory registration (NCCL over InfiniBand/RoCE, GPUDirect) and mlock-based pinned buffers count "
        "against RLIMIT_MEMLOCK; with a small limit they fail or fall back to slower paths. CUDA's own pinned "
        "allocations (cudaHostAlloc) are not bound by it. "
        + (
            "This host has active RDMA NICs, so NCCL's registrations hit the limit (medium)."
            if rdma
            else "This host has active RDMA NICs, but this container is given no RDMA device (/dev/infiniband), so its "
            "server cannot register memory with them: little here counts against the limit (low)."
            if f.rdma.active_nics
            else "This host has no active RDMA NIC, so little here registers memory against the limit (low)."
        ),
        _raise_limit_fix(f, lxc_fix_config),
        subjects=tuple(s.split(":")[0] for s in limited),
        evidence=(*refs, *f.rdma.refs, *((dir_ref("/dev"),) if f.platform.in_container else ())),
    )
