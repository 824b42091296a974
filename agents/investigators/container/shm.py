"""container.shm: the size of /dev/shm in containers running NCCL."""

from __future__ import annotations

import re

from rigaudit.agents.check import Check
from rigaudit.agents.findings import not_applicable, ok, problem, unknown
from rigaudit.agents.investigators.container.facts import AREA, NO_GPU, ContainerFacts, no_gpu_on_this_machine
from rigaudit.tools.model.finding import CommandAction, Finding, Fix
from rigaudit.tools.probe import dir_ref, file_ref

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
)


def judge_shm(f: ContainerFacts) -> Finding:
    check, title = SHM_CHECK.id, SHM_CHECK.title
    if no_gpu_on_this_machine(f):
        return not_applicable(check, AREA, title, NO_GPU, evidence=(dir_ref("/sys/bus/pci/devices"),))
    readings: list[tuple[str, str, int | None]] = []
    refs: list[str] = []
    for server in f.scan.servers[:16]:
        text = f.server_mounts.get(server.pid)
        if server.foreign_mnt_ns is False or text is None or (found := shm_size(text)) is None:
            continue
        refs.append(file_ref(f"/proc/{server.pid}/mounts"))
        readings.append((server.label, *found))
    if f.platform.in_container and (found := shm_size(f.mounts)) is not None:
        refs.append(file_ref("/proc/mounts"))
        readings.append(("this container", *found))
    if not readings:
        if f.platform.in_container:
            return unknown(check, AREA, title, "/dev/shm not found in /proc/mounts", evidence=(file_ref("/proc/mounts"),))
        if f.lxc.gpu_configs:
            ids = ", ".join(c.ctid for c in f.lxc.gpu_configs)
            return unknown(
                check,
                AREA,
                title,
                f"measure inside container {ids}: its /dev/shm is its own tmpfs, not "
                "visible from the host while no server process runs there",
                evidence=tuple(c.ref for c in f.lxc.gpu_configs),
            )
        return not_applicable(check, AREA, title, "not a container: /dev/shm is the host's tmpfs (half of RAM by default)")
    small = [(who, size) for who, _, size in readings if size is not None and size < SHM_MIN]
    shown = "; ".join(
        f"{who}: {'default (half of RAM)' if size is None else f'{size / 2**20:.0f} MiB'}" for who, _, size in readings
    )
    if not small:
        return ok(check, AREA, title, f"/dev/shm {shown}", expected="at least 1 GiB", evidence=tuple(refs))
    docker = f.platform.kind == "docker" or any(s.container and s.container.startswith("docker") for s in f.scan.servers)
    fix = Fix(
        kind="restart",
        where="container_config",
        summary="Give the container a larger /dev/shm" + (" (--shm-size=16g or --ipc=host)" if docker else ""),
        actions=(
            CommandAction(
                description="docker: recreate with --shm-size=16g (or --ipc=host); LXC: mount a larger "
                "tmpfs on /dev/shm in the container's config; then restart"
            ),
        ),
        risk="low",
        verify="df -h /dev/shm inside the container shows the new size",
        revert="recreate/restart with the previous size",
        persist="the container's config",
    )
    return problem(
        check,
        AREA,
        title,
        "medium",
        f"/dev/shm {shown}",
        "at least 1 GiB",
        "NCCL's shared-memory transport, PyTorch's inter-process tensors and the servers' input broadcast rings live "
        "in /dev/shm. Docker's 64 MiB default makes NCCL fail with 'No space left on device' or errors such as "
        "'unhandled system error' once tensor parallelism starts.",
        fix,
        subjects=tuple(who for who, _ in small),
        evidence=tuple(refs),
    )
