"""container.shm: the size of /dev/shm in containers running NCCL."""

from __future__ import annotations

import re

from rigaudit.agents.check import Check
from rigaudit.agents.facts.serving import largest_tp
from rigaudit.agents.investigators.container import premises
from rigaudit.agents.investigators.container.facts import ContainerFacts, gpu_nodes, no_gpu_here, servers_runtime
from rigaudit.tools.hosts.probe import file_ref
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix, Severity

SHM_MIN = 2**30


def shm_size(mounts: str | None) -> tuple[str, int | None] | None:
    """(options, size in bytes or None for the tmpfs default) of /dev/shm in a mounts file; None if not mounted."""
    for line in (mounts or "").splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[1] == "/dev/shm":
            match = re.search(r"(?:^|,)size=(\d+)([kmgKMG%]?)", fields[3])
            if not match or match.group(2) == "%":
                return fields[3], None
            scale = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}[match.group(2).lower()]
            return fields[3], int(match.group(1)) * scale
    return None


SHM_CHECK = Check(
    "container.shm",
    "/dev/shm size in containers",
    reads="`/proc/mounts`, `/proc/PID/mounts` of the servers",
    problem="under 1 GiB in a container running NCCL",
    fix="`--shm-size` / `--ipc=host` / a larger tmpfs",
    kinds=("restart",),
    premises=(premises.PLATFORM, premises.SERVERS),
    layer="workload",
)


def _gpus_of(f: ContainerFacts, who: str) -> int:
    """GPUs the container behind a reading uses: NVML's processes of its servers, else what it is given."""
    if who == "this container":
        nodes = [e for e in f.dev_entries or () if re.fullmatch(r"nvidia\d+", e)]
        return len(f.inventory.nvml_indices) or len(nodes)
    server = next((s for s in f.scan.servers if s.label == who), None)
    label = server.container if server else None
    pids = {s.pid for s in f.scan.servers if s.container == label}
    used = {p.gpu_index for p in f.scan.gpu_processes if p.pid in pids}
    if used:
        return len(used)
    config = next((c for c in f.lxc.gpu_configs if label == f"lxc {c.ctid}"), None)
    return len(gpu_nodes(config)) if config else len(f.inventory.gpus)


def _may_serve_here(f: ContainerFacts) -> bool:
    """Whether this container's own /dev/shm is a workload's: a server runs in it, or none is visible and this
    container could not see one elsewhere. A health check's container (a DaemonSet's, with ``hostPID``) whose
    servers all run in other containers serves nothing: its default 64 MiB is not a fault of the node."""
    if any(s.foreign_mnt_ns is False for s in f.scan.servers):
        return True
    return not f.scan.servers and not f.host_pids


_Reading = tuple[str, str, int | None]
"""(whose /dev/shm, its mount options, its size in bytes or None for the tmpfs default)."""


def _readings(f: ContainerFacts) -> tuple[list[_Reading], list[str]]:
    """The /dev/shm of each server's container, and of this container where a workload may run in it."""
    readings: list[_Reading] = []
    refs: list[str] = []
    for server in f.scan.servers[:16]:
        text = f.server_mounts.get(server.pid)
        if server.foreign_mnt_ns is False or text is None or (found := shm_size(text)) is None:
            continue
        refs.append(file_ref(f"/proc/{server.pid}/mounts"))
        readings.append((server.label, *found))
    own = shm_size(f.mounts) if f.platform.in_container else None
    if own is not None and _may_serve_here(f):
        refs.append(file_ref("/proc/mounts"))
        readings.append(("this container", *own))
    return readings, refs


def _nothing_read(f: ContainerFacts) -> Finding:
    """No workload's /dev/shm read: why not, or why none is to judge here."""
    if f.platform.in_container and shm_size(f.mounts) is not None:
        if f.scan.servers:
            why = "the servers run in other containers and their /dev/shm could not be read (/proc/PID/mounts)"
            return SHM_CHECK.unknown(why, evidence=(file_ref("/proc/mounts"),))
        return SHM_CHECK.not_applicable(
            "no server runs on this machine, and this container (it sees the machine's processes) serves none: "
            "its own /dev/shm is no workload's",
            evidence=(file_ref("/proc/mounts"),),
        )
    if f.platform.in_container:
        return SHM_CHECK.unknown("/dev/shm not found in /proc/mounts", evidence=(file_ref("/proc/mounts"),))
    if f.lxc.gpu_configs:
        ids = ", ".join(c.ctid for c in f.lxc.gpu_configs)
        return SHM_CHECK.unknown(
            f"measure inside container {ids}: its /dev/shm is its own tmpfs, not "
            "visible from the host while no server process runs there",
            evidence=tuple(c.ref for c in f.lxc.gpu_configs),
        )
    return SHM_CHECK.not_applicable("not a container: /dev/shm is the host's tmpfs (half of RAM by default)")


_LARGER_SHM = {
    "docker": "recreate the container with --shm-size=16g (or --ipc=host)",
    "podman": "recreate the container with --shm-size=16g (or --ipc=host)",
    "kubernetes": "mount an emptyDir volume with medium: Memory (sizeLimit: 16Gi) at /dev/shm in the pod spec",
    "k8s": "mount an emptyDir volume with medium: Memory (sizeLimit: 16Gi) at /dev/shm in the pod spec",
    "lxc": "mount a larger tmpfs on /dev/shm in the container's config (lxc.mount.entry: tmpfs dev/shm tmpfs "
    "size=16g,nosuid,nodev 0 0)",
}
"""How each container runtime is given a larger /dev/shm."""


def _larger_shm_fix(f: ContainerFacts) -> Fix:
    runtime = servers_runtime(f)
    how = _LARGER_SHM.get(
        runtime,
        "docker: --shm-size=16g or --ipc=host; Kubernetes: an emptyDir of medium Memory at /dev/shm; LXC: a larger tmpfs mount",
    )
    return Fix(
        kind="restart",
        where="container_config",
        summary="Give the container a larger /dev/shm: " + how,
        actions=(CommandAction(description=how + "; then restart it"),),
        risk="low",
        verify="df -h /dev/shm inside the container shows the new size",
        revert="recreate/restart with the previous size",
        persist="the container's config",
    )


def _small_shm_problem(f: ContainerFacts, small: list[tuple[str, int]], shown: str, refs: list[str]) -> Finding:
    """/dev/shm under 1 GiB: high where NCCL runs across GPUs, low with one GPU."""
    tp = largest_tp([s.argv for s in f.scan.servers])
    gpus = max(_gpus_of(f, who) for who, _ in small)
    multi = (tp is not None and tp > 1) or (tp is None and gpus > 1)
    severity: Severity = "high" if multi else "low"
    cost = (
        f"With {f'tensor parallelism {tp}' if tp else f'{gpus} GPUs in the container'}, NCCL's shared-memory and "
        "proxy buffers and the server's broadcast rings need far more than this: start-up or the first all-reduce "
        "fails (high)."
        if multi
        else "With one GPU in use, no NCCL communicator needs it; only data-loader workers and tokenizer pools would (low)."
    )
    return SHM_CHECK.problem_at(
        severity,
        f"/dev/shm {shown}",
        "at least 1 GiB",
        "NCCL's shared-memory transport, PyTorch's inter-process tensors and the servers' input broadcast rings live "
        "in /dev/shm. Docker's 64 MiB default (and a Kubernetes pod's, without an emptyDir of medium Memory) makes "
        "NCCL fail with 'No space left on device' or errors such as 'unhandled system error' once tensor parallelism "
        "starts. " + cost,
        _larger_shm_fix(f),
        subjects=tuple(who for who, _ in small),
        evidence=tuple(refs),
    )


def judge_shm(f: ContainerFacts) -> Finding:
    if (none_here := no_gpu_here(SHM_CHECK, f)) is not None:
        return none_here
    readings, refs = _readings(f)
    if not readings:
        return _nothing_read(f)
    small = [(who, size) for who, _, size in readings if size is not None and size < SHM_MIN]
    shown = "; ".join(
        f"{who}: {'default (half of RAM)' if size is None else f'{size / 2**20:.0f} MiB'}" for who, _, size in readings
    )
    if not small:
        return SHM_CHECK.ok(f"/dev/shm {shown}", expected="at least 1 GiB", evidence=tuple(refs))
    return _small_shm_problem(f, small, shown, refs)
