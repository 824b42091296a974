"""container.cgroup_cpu: CPU quota and CPU count of the container that runs the server."""

from __future__ import annotations

import re

from rigaudit.agents.check import Check
from rigaudit.agents.facts.cpulist import parse_cpulist
from rigaudit.agents.facts.lxc import LxcConfig, LxcConfigs
from rigaudit.agents.facts.numbers import count
from rigaudit.agents.facts.platform import Platform
from rigaudit.agents.investigators.container import premises
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, file_ref
from rigaudit.tools.schema.finding import SEVERITY_ORDER, CommandAction, Finding, Fix, Severity

CGROUP = "/sys/fs/cgroup"
CGROUP_V1 = "/sys/fs/cgroup/cpu"
PER_GPU = 2
"""CPUs a tensor-parallel server wants per GPU: the worker's launch loop plus its share of scheduler, tokenizer, I/O."""
_GPU_NODE = r"^/dev/nvidia(\d+)$"


class CpuLimit(Record):
    who: str
    """``container 101`` or ``this container``."""
    quota_cpus: float | None
    """CPUs worth of CFS quota (None: no quota)."""
    cpus: int | None
    """CPUs it may run on (cores / cpuset), None when unknown."""
    gpus: int
    throttled: tuple[int, int] | None
    """(periods throttled, periods) from cpu.stat, inside a container."""
    ref: str
    config: LxcConfig | None = None
    note: str = ""
    """Why there is no quota, where that is itself read (a cgroup without the cpu controller)."""
    v1: bool = False
    """Read from cgroup v1's cpu controller (``cpu.cfs_quota_us``), which has no ``cpu.max``."""


class CgroupCpuFacts(Record):
    platform: Platform
    limits: tuple[CpuLimit, ...]
    error: str | None


def _quota(text: str | None) -> float | None:
    """``cpu.max`` (``max 100000`` / ``400000 100000``) -> CPUs of quota."""
    fields = (text or "").split()
    quota, period = (count(fields[0]), count(fields[1])) if len(fields) == 2 else (None, None)
    return quota / period if quota is not None and period else None


def _stat(text: str | None) -> tuple[int, int] | None:
    values = dict(line.split(maxsplit=1) for line in (text or "").splitlines() if len(line.split()) == 2)
    throttled, periods = count(values.get("nr_throttled")), count(values.get("nr_periods"))
    return (throttled, periods) if throttled is not None and periods is not None else None


async def _cgroup_v1(probe: Probe) -> tuple[float | None, str] | None:
    """(CPUs of quota or None, evidence ref) from cgroup v1's cpu.cfs_quota_us / cpu.cfs_period_us."""
    quota_path = f"{CGROUP_V1}/cpu.cfs_quota_us"
    quota, period = await probe.gather(lambda: probe.text(quota_path), lambda: probe.text(f"{CGROUP_V1}/cpu.cfs_period_us"))
    if quota is None:
        return None
    value = quota.strip()
    if value == "-1":
        return None, file_ref(quota_path)
    return _quota(f"{value} {(period or '100000').strip()}"), file_ref(quota_path)


def _lxc_limit(config: LxcConfig) -> CpuLimit:
    gpus = len({m.group(1) for n in config.mounted_nodes | config.dev_nodes if (m := re.match(_GPU_NODE, n))})
    quota: float | None = None
    for value in config.values("cpulimit"):
        try:
            quota = float(value) or None
        except ValueError:
            continue
    for value in config.values("lxc.cgroup2.cpu.max"):
        quota = _quota(value) or quota
    cpus = None
    for value in config.values("cores"):
        cpus = count(value.strip()) if count(value.strip()) is not None else cpus
    for value in config.values("lxc.cgroup2.cpuset.cpus"):
        cpus = len(parse_cpulist(value) or []) or cpus
    return CpuLimit(f"container {config.ctid}", quota, cpus, gpus, None, config.ref, config)


async def collect_cgroup_cpu(probe: Probe, platform: Platform, lxc: LxcConfigs, gpus: int) -> CgroupCpuFacts:
    limits = [_lxc_limit(c) for c in lxc.gpu_configs]
    error = None
    if platform.in_container:
        cpu_max = await probe.read(f"{CGROUP}/cpu.max")
        stat, cpuset = await probe.gather(
            lambda: probe.text(f"{CGROUP}/cpu.stat"), lambda: probe.text(f"{CGROUP}/cpuset.cpus.effective")
        )
        cpus = len(parse_cpulist(cpuset) or []) or None
        if cpu_max.ok:
            limits.append(
                CpuLimit("this container", _quota(cpu_max.text()), cpus, gpus, _stat(stat), file_ref(f"{CGROUP}/cpu.max"))
            )
        elif (v1 := await _cgroup_v1(probe)) is not None:
            quota, ref = v1
            v1_stat = await probe.text(f"{CGROUP_V1}/cpu.stat")
            limits.append(CpuLimit("this container", quota, cpus, gpus, _stat(v1_stat), ref, v1=True))
        elif (undelegated := await _without_cpu_controller(probe, cpus, gpus)) is not None:
            limits.append(undelegated)
        else:
            error = f"{CGROUP}/cpu.max: {cpu_max.error}; {CGROUP_V1}/cpu.cfs_quota_us not readable either"
    return CgroupCpuFacts(platform, tuple(limits), error)


async def _without_cpu_controller(probe: Probe, cpus: int | None, gpus: int) -> CpuLimit | None:
    """A cgroup v2 whose controllers leave out cpu (a rootless container's: systemd delegates memory and pids to a
    user's cgroups by default): no CFS quota can apply to it. None: the controllers are unread or include cpu."""
    controllers = await probe.text(f"{CGROUP}/cgroup.controllers")
    if controllers is None or "cpu" in controllers.split():
        return None
    note = (
        f" (no cpu controller in this cgroup: cgroup.controllers is '{controllers.strip()}', so no CFS quota can "
        "apply; a rootless container gets one only where the host delegates cpu to its user)"
    )
    return CpuLimit("this container", None, cpus, gpus, None, file_ref(f"{CGROUP}/cgroup.controllers"), note=note)


CGROUP_CPU_CHECK = Check(
    "container.cgroup_cpu",
    "CPU quota and CPUs of the serving container",
    reads=(
        "LXC `cpulimit`, `cores`, `lxc.cgroup2.cpu.max`, `lxc.cgroup2.cpuset.cpus`; inside: `/sys/fs/cgroup/cpu.max`, "
        "`cpu.stat`, `cpuset.cpus.effective`"
    ),
    problem="a CFS CPU quota on the container (throttling stalls GPU workers), or fewer than 2 CPUs per GPU",
    fix="remove the quota, give it more cores",
    kinds=("restart",),
    premises=(premises.PLATFORM, premises.GPUS),
    layer="workload",
)


def _quota_text(limit: CpuLimit) -> str:
    cpus = f"{limit.cpus if limit.cpus is not None else 'all'} CPUs for {limit.gpus} GPUs"
    if limit.quota_cpus is None:
        return f"{cpus}, no CPU quota{limit.note}"
    hit, periods = limit.throttled or (0, 0)
    share = f", throttled in {hit} of {periods} periods ({hit / periods:.2%})" if periods else ""
    return f"{cpus}, CPU quota of {limit.quota_cpus:g} CPUs{share}: not enough throttling to cost anything"


def _limit_faults(limit: CpuLimit) -> list[tuple[Severity, str]]:
    """What one container's CPU limits cost its GPU workers: a throttling quota, too few CPUs."""
    faults: list[tuple[Severity, str]] = []
    need = max(limit.gpus, 1) * PER_GPU
    if limit.quota_cpus is not None:
        throttled = ""
        quota_severity: Severity = "medium"
        if limit.throttled and limit.throttled[1]:
            hit, periods = limit.throttled
            share = hit / periods
            throttled = f", throttled in {hit} of {periods} periods ({share:.1%})"
            quota_severity = "high" if share >= 0.05 else "medium" if share >= 0.01 else "low"
            if quota_severity == "low" and limit.quota_cpus >= limit.gpus + 2:
                return []  # a quota that throttles under 1% of periods, with room for the GPU workers: no cost
        if limit.quota_cpus < limit.gpus + 2:
            quota_severity = "high" if quota_severity == "high" else "medium"
        faults.append((quota_severity, f"{limit.who}: CPU quota of {limit.quota_cpus:g} CPUs{throttled}"))
    if limit.cpus is not None and limit.gpus and limit.cpus < need:
        severity: Severity = "medium" if limit.cpus < limit.gpus + 2 else "low"
        faults.append((severity, f"{limit.who}: {limit.cpus} CPUs for {limit.gpus} GPUs"))
    return faults


_NO_QUOTA_BY = {
    "kubernetes": "raise or remove resources.limits.cpu in the pod spec (keep the request): a CPU limit is a "
    "CFS quota; with the static CPU manager and integer CPUs, pin whole cores instead",
    "docker": "recreate the container without --cpus / --cpu-quota (pin with --cpuset-cpus if needed)",
    "podman": "recreate the container without --cpus / --cpu-quota (pin with --cpuset-cpus if needed)",
}
"""How each container runtime's CPU quota is lifted."""


def _lift_quota_fix(f: CgroupCpuFacts, target: CpuLimit) -> Fix:
    """The LXC config lines of the first faulty container, else its runtime's way to lift the quota."""
    lines = ["remove 'cpulimit:' and any lxc.cgroup2.cpu.max line"] if target.quota_cpus is not None else []
    if target.cpus is not None and target.gpus and target.cpus < max(target.gpus, 1) * PER_GPU:
        lines.append(f"cores: {max(target.gpus, 1) * PER_GPU * 2} (or more)")
    config = target.config
    if config is None:
        runtime = f.platform.container_runtime or ""
        lines = [_NO_QUOTA_BY.get(runtime, "remove the container's CPU quota (docker --cpus, a pod's resources.limits.cpu)")]
    return Fix(
        kind="restart",
        where="container_config",
        summary=f"Lift the CPU quota / give {target.who} more CPUs, then restart it",
        actions=(
            *(CommandAction(description=f"in {config.path}: {line}" if config else line) for line in lines),
            CommandAction(
                description=f"restart container {config.ctid}" if config else "recreate the container without --cpus / cpu quota",
                argv=("pct", "reboot", config.ctid) if config else (),
            ),
        ),
        risk="low",
        verify=(
            f"cat {CGROUP_V1}/cpu.cfs_quota_us inside the container -> -1; nr_throttled in {CGROUP_V1}/cpu.stat "
            "stops growing; nproc shows the CPU count"
            if target.v1
            else "cat /sys/fs/cgroup/cpu.max inside the container -> 'max 100000'; nproc shows the CPU count"
        ),
        revert="restore the previous lines and restart the container",
        persist="the container config persists",
    )


def judge_cgroup_cpu(f: CgroupCpuFacts) -> Finding:
    if not f.limits:
        if f.platform.in_container:
            return CGROUP_CPU_CHECK.unknown(f"cgroup CPU limits not readable ({f.error})")
        return CGROUP_CPU_CHECK.not_applicable("not a container, and hosts no GPU containers")
    refs = tuple(dict.fromkeys(limit.ref for limit in f.limits))
    found = [(limit, severity, text) for limit in f.limits for severity, text in _limit_faults(limit)]
    if not found:
        shown = "; ".join(f"{limit.who}: {_quota_text(limit)}" for limit in f.limits)
        return CGROUP_CPU_CHECK.ok(shown, expected=f"no CPU quota; at least {PER_GPU} CPUs per GPU", evidence=refs)
    return CGROUP_CPU_CHECK.problem_at(
        min((s for _, s, _ in found), key=lambda s: SEVERITY_ORDER[s]),
        "; ".join(text for _, _, text in found),
        f"no CPU quota; at least {PER_GPU} CPUs per GPU",
        "A CFS quota lets the container's threads run only for their share of each 100 ms period: once it is used "
        "up, every thread stops until the next period, so a GPU worker waiting to launch the next kernel stalls for "
        "tens of milliseconds even when the average CPU load is low (tail latency, lower decode throughput). Each "
        "tensor-parallel worker also keeps one CPU busy driving its GPU; with fewer CPUs than GPUs plus the "
        "scheduler and tokenizer, they preempt each other.",
        _lift_quota_fix(f, found[0][0]),
        subjects=tuple(dict.fromkeys(limit.who for limit, _, _ in found)),
        evidence=refs,
    )
