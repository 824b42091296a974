"""A host audited from inside a Slurm job step.

``slurm_step(spec, gpus=(2, 3))`` is ``spec`` with the audit (``rigaudit snapshot`` or ``check``) run by
``srun --gres=gpu:2`` under cgroup.conf's ``ConstrainDevices=yes``: the audit's process in the step's cgroup
(``.../slurmstepd.scope/job_N/step_M`` on cgroup v2, ``/slurm/uid_U/job_N/step_M`` on v1), Slurm's variables in its
environment (``SLURM_STEP_GPUS`` the global GPU IDs, ``CUDA_VISIBLE_DEVICES`` 0..n-1 relative to the device cgroup),
NVML listing only the step's GPUs while the PCI bus shows all of them. ``gpus=()`` is the step ``rigaudit audit
--slurm`` runs without ``--gres``: NVML lists none. The generator builds at least one visible GPU, so that case takes
NVML's last device away after the build (its records, the count, nvidia-smi), as the device cgroup does.

``conf_dir`` is where slurm.conf and cgroup.conf live (``/usr/local/etc/slurm`` for Slurm built from source; a folder
the audit does not look in, without ``slurm_conf``, leaves cgroup.conf unread), ``slurm_conf`` puts ``SLURM_CONF`` in
the step's environment, ``adopted`` is an ssh login pam_slurm_adopt put in the job's step (``step="extern"``): the
job's devices, sshd's environment (no ``SLURM_*`` variable). :func:`lose_gpu` takes a GPU off NVML, the bus keeping it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from tests.hostgen.procs import write_proc
from tests.hostgen.spec import Fault, HostSpec

if TYPE_CHECKING:
    from tests.hostgen.build import Built

CGROUP_CONF = "/etc/slurm/cgroup.conf"


def _named(spec: HostSpec, suffix: str, summary: str, apply: object = None) -> HostSpec:
    faults = (*spec.faults, Fault(suffix, summary, apply)) if apply is not None else spec.faults  # type: ignore[arg-type]
    return replace(spec, name=f"{spec.name}+{suffix}", summary=f"{spec.summary}; FAULT: {summary}", faults=faults)


def step_cgroup(job: int, step: str, *, v1: bool = False, uid: int = 0) -> str:
    """``/proc/PID/cgroup`` of a task of the step, as slurmstepd's cgroup plugin makes it."""
    if not v1:
        return f"0::/system.slice/slurmstepd.scope/job_{job}/step_{step}/user/task_0\n"
    path = f"/slurm/uid_{uid}/job_{job}/step_{step}"
    controllers = ((12, "pids"), (11, "cpuset"), (10, "devices"), (9, "memory"), (8, "cpu,cpuacct"), (1, "name=systemd"))
    return "".join(f"{n}:{c}:{path if c in ('cpuset', 'devices', 'memory', 'name=systemd') else '/'}\n" for n, c in controllers)


def _hide_nvml_device(built: Built, index: int) -> None:
    """NVML and nvidia-smi as a device cgroup that allows none of the GPUs leaves them: no device, count 0."""
    tree = built.tree
    for key in [k for k in tree.nvml if k[0].startswith("nvmlDevice") and k[1][:1] == (index,)]:
        del tree.nvml[key]
    for fn in ("nvmlDeviceGetCount", "nvmlDeviceGetCount_v2"):
        if (fn, ()) in tree.nvml:
            tree.call(fn, (), 0)
    for key in [k for k in tree.commands if k and k[0] == "nvidia-smi"]:
        tree.command(key, "No devices were found\n", exit_code=6)


def slurm_step(
    spec: HostSpec,
    gpus: tuple[int, ...] = (2, 3),
    *,
    job: int = 481516,
    step: str = "0",
    constrain: str | None = "yes",
    v1: bool = False,
    node: str = "hgx-h100-01",
    conf_dir: str = "/etc/slurm",
    slurm_conf: bool = False,
    adopted: bool = False,
) -> HostSpec:
    """``spec`` audited from inside Slurm job ``job``'s step ``step``, given the node's GPUs ``gpus`` (global IDs, bus
    order). ``constrain``: cgroup.conf's ``ConstrainDevices`` in ``conf_dir`` (``None``: no cgroup.conf, the step
    confined); with ``no`` the step sees every GPU. The server runs in the same step on the step's GPUs."""
    count = spec.gpus.count
    confined = constrain == "yes" or constrain is None
    shown = gpus if confined else tuple(range(count))
    visible = None if len(shown) == count else (shown or (0,))
    cgroup = step_cgroup(job, step, v1=v1)
    env = {"SLURM_JOB_ID": str(job), "SLURM_STEP_ID": step, "SLURMD_NODENAME": node, "SLURM_JOB_NAME": "rigaudit"}
    if slurm_conf:
        env["SLURM_CONF"] = f"{conf_dir}/slurm.conf"
    if adopted:
        env = {}
    if gpus and not adopted:
        env |= {"SLURM_STEP_GPUS": ",".join(map(str, gpus)), "SLURM_JOB_GPUS": ",".join(map(str, gpus))}
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(len(gpus))) if confined else ",".join(map(str, gpus))
    server_gpus = tuple(range(len(gpus))) if confined else gpus
    procs = spec.processes
    if procs and gpus:
        first = procs[0]
        procs = (replace(first, gpus=server_gpus, cgroup=cgroup, env=(*first.env, *env.items())), *procs[1:])
    base = replace(spec, processes=procs, platform=replace(spec.platform, visible_gpus=visible))

    def apply(built: Built) -> None:
        tree = built.tree
        me = built.procs[int(tree.links["/proc/self"])]
        me.cgroup = cgroup
        me.env = {**me.env, **env}
        write_proc(tree, me)
        if constrain is not None:
            tree.remove(CGROUP_CONF)
            tree.file(f"{conf_dir}/cgroup.conf", f"CgroupPlugin=autodetect\nConstrainCores=yes\nConstrainDevices={constrain}\n")
        if not shown:
            _hide_nvml_device(built, 0)

    given = f"GPUs {','.join(map(str, gpus))}" if gpus else "no GPU"
    how = f"ConstrainDevices={constrain} in {conf_dir}, cgroup v{1 if v1 else 2}" + (", ssh adopted" if adopted else "")
    summary = f"audited in Slurm job {job} step {step} given {given} ({how})"
    suffix = f"slurm-step-{len(gpus)}gpu" + (f"-{conf_dir.strip('/').replace('/', '-')}" if conf_dir != "/etc/slurm" else "")
    return _named(base, suffix + ("-adopted" if adopted else ""), summary, apply)


def lose_gpu(spec: HostSpec, index: int | None = None) -> HostSpec:
    """``spec`` with GPU ``index`` (default the last) fallen off NVML in what the audit sees, the PCI bus keeping it."""
    count = spec.gpus.count
    lost = count - 1 if index is None else index
    shown = spec.platform.visible_gpus if spec.platform.visible_gpus is not None else tuple(range(count))
    platform = replace(spec.platform, visible_gpus=tuple(i for i in shown if i != lost))
    summary = f"{spec.summary}; FAULT: GPU{lost} off NVML"
    return replace(spec, name=f"{spec.name}+gpu{lost}-off-nvml", summary=summary, platform=platform)


__all__ = ["lose_gpu", "slurm_step", "step_cgroup"]
