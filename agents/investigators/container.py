"""container: where the audit runs, and whether containers get their GPUs, locked memory and /dev/shm.

The facts live in :mod:`rigaudit.agents.investigators._container_facts`; the rules in ``_container_platform``
(container.platform), ``_container_devices`` (container.gpu_devices), ``_container_memlock`` (container.memlock),
``_container_shm`` (container.shm) and ``_container_cpu`` (container.cgroup_cpu).
"""

from __future__ import annotations

from rigaudit.agents.investigator import CheckDoc, Investigator
from rigaudit.agents.investigators._container_cpu import judge_cgroup_cpu
from rigaudit.agents.investigators._container_devices import CTL_MINOR, judge_gpu_devices
from rigaudit.agents.investigators._container_facts import AREA, NO_GPU, PCT_LIST, ContainerFacts, collect, uvm_major
from rigaudit.agents.investigators._container_memlock import judge_memlock, parse_memlock
from rigaudit.agents.investigators._container_platform import judge_platform
from rigaudit.agents.investigators._container_shm import SHM_MIN, judge_shm, shm_size
from rigaudit.tools.model.finding import Finding

__all__ = [
    "AREA",
    "CHECKS",
    "CTL_MINOR",
    "INVESTIGATOR",
    "NO_GPU",
    "PCT_LIST",
    "SHM_MIN",
    "ContainerFacts",
    "collect",
    "judge",
    "judge_gpu_devices",
    "judge_memlock",
    "judge_platform",
    "judge_shm",
    "parse_memlock",
    "shm_size",
    "uvm_major",
]
CHECKS = ("container.platform", "container.gpu_devices", "container.memlock", "container.shm", "container.cgroup_cpu")


def judge(f: ContainerFacts) -> list[Finding]:
    return [judge_platform(f), judge_gpu_devices(f), judge_memlock(f), judge_shm(f), judge_cgroup_cpu(f.cpu)]


DOCS = {
    "container.platform": CheckDoc(
        "Where the audit runs",
        "`systemd-detect-virt`, `/proc/cpuinfo` hypervisor flag, `/proc/1/environ`, `/.dockerenv`, "
        "`/etc/pve/lxc/*.conf`, `pct list`",
        "never a problem: says where the audit runs and where fixes must go",
        "—",
    ),
    "container.gpu_devices": CheckDoc(
        "GPU device nodes in containers",
        "`/dev/nvidia*`; LXC `lxc.cgroup2.devices.allow`, `lxc.mount.entry`, `devN:` entries; `/proc/devices`",
        "a GPU, nvidiactl or nvidia-uvm not passed in or not allowed by the cgroup",
        "edit the container config",
        ("restart",),
    ),
    "container.memlock": CheckDoc(
        "Locked-memory limit",
        "`/proc/PID/limits` of the servers, `/proc/self/limits` in a container, LXC `lxc.prlimit.memlock`",
        "limited (RDMA registration and pinned buffers fail or shrink)",
        "raise it to unlimited",
        ("restart",),
    ),
    "container.shm": CheckDoc(
        "/dev/shm size in containers",
        "`/proc/mounts`, `/proc/PID/mounts` of the servers",
        "under 1 GiB in a container running NCCL",
        "`--shm-size` / `--ipc=host` / a larger tmpfs",
        ("restart",),
    ),
    "container.cgroup_cpu": CheckDoc(
        "CPU quota and CPUs of the serving container",
        "LXC `cpulimit`, `cores`, `lxc.cgroup2.cpu.max`, `lxc.cgroup2.cpuset.cpus`; inside: `/sys/fs/cgroup/cpu.max`, "
        "`cpu.stat`, `cpuset.cpus.effective`",
        "a CFS CPU quota on the container (throttling stalls GPU workers), or fewer than 2 CPUs per GPU",
        "remove the quota, give it more cores",
        ("restart",),
    ),
}


INVESTIGATOR = Investigator(
    area=AREA, title="Platform and container GPU access and limits", checks=CHECKS, collect=collect, judge=judge, docs=DOCS
)
