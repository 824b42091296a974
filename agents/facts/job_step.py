"""Whether the audit runs inside a scheduler's job step, and which GPUs that step was given.

A Slurm job step (``srun``, a batch script) runs in a cgroup slurmstepd made for it: ``.../slurmstepd.scope/job_N/
step_M/...`` on cgroup v2, ``/slurm/uid_U/job_N/step_M`` on v1. With ``ConstrainDevices=yes`` in cgroup.conf, the
step's device cgroup allows only the GRES it was allocated (cgroup.conf(5)), so NVML inside it lists those GPUs
and no others while the node's PCI bus (sysfs is not namespaced) still shows every GPU. Slurm names the step's GPUs
by their global IDs in ``SLURM_STEP_GPUS`` (an ``srun`` step) or ``SLURM_JOB_GPUS`` (a batch or interactive step),
not relative to the device cgroup (srun(1)); a step that asked for no GPU gets neither.

Only the audit's own process counts (``/proc/self``): a server in a job's cgroup seen from the host (a health check,
which slurmd runs outside any job's cgroup) is not confined. Prolog and epilog run outside the job's cgroup too
(Slurm's gres guide), though their environment names the job.
"""

from __future__ import annotations

import posixpath
import re

from rigaudit.agents.facts.platform_signals import environ_vars
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, file_ref

SELF_CGROUP = "/proc/self/cgroup"
SELF_ENVIRON = "/proc/self/environ"
CGROUP_CONF = "/etc/slurm/cgroup.conf"
_V2 = r"/slurmstepd\.scope/job_(\d+)/step_([A-Za-z0-9_]+)(?:/|$)"
_V1 = r"/slurm[^/]*/uid_\d+/job_(\d+)/step_([A-Za-z0-9_]+)(?:/|$)"
_GPU_ID = r"[0-9]{1,4}"
_CONSTRAIN = r"(?im)^[ \t]*ConstrainDevices[ \t]*=[ \t]*(\S+)"
NO_DEVICES = "NoDevFiles"
"""What Slurm sets CUDA_VISIBLE_DEVICES to where a job has GPUs elsewhere but none here."""
STEP_VARIABLES = ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS")


class JobStep(Record):
    """The Slurm job step the audit runs in."""

    job: str
    step: str
    """``0``, ``1``... for srun steps; ``batch``, ``interactive``, ``extern``."""
    gpus: tuple[str, ...]
    """The global IDs of the GPUs the step was given (empty: none)."""
    gpus_from: str
    """The variable that said so (``SLURM_STEP_GPUS``...), or ``""`` when none did (the step was given none)."""
    constrained: bool | None
    """cgroup.conf's ``ConstrainDevices``: ``True`` yes, ``False`` no, ``None`` not read (taken as yes)."""
    conf: str
    """The cgroup.conf read (or tried)."""
    how: str
    evidence: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"Slurm job {self.job} step {self.step}"

    @property
    def confines_gpus(self) -> bool:
        """NVML here shows the step's GPUs alone (ConstrainDevices=yes, or not read: a job step may not see more)."""
        return self.constrained is not False

    @property
    def given(self) -> str:
        """``GPUs 2,3 (SLURM_STEP_GPUS)`` or ``no GPU``."""
        if not self.gpus:
            return "no GPU"
        return f"GPU{'s' if len(self.gpus) > 1 else ''} {','.join(self.gpus)} ({self.gpus_from})"

    @property
    def constraint(self) -> str:
        if self.constrained is None:
            return f"{self.conf} not read: ConstrainDevices taken as yes"
        return f"ConstrainDevices={'yes' if self.constrained else 'no'} in {self.conf}"


def step_of(cgroup: str | None) -> tuple[str, str] | None:
    """``(job, step)`` from a ``/proc/PID/cgroup``'s text, when a line names a Slurm job step."""
    for line in (cgroup or "").splitlines():
        path = line.split(":", 2)[-1]
        for pattern in (_V2, _V1):
            if m := re.search(pattern, path):
                return m.group(1), m.group(2)
    return None


def _gpus(env: dict[str, str]) -> tuple[tuple[str, ...], str]:
    for name in STEP_VARIABLES:
        value = env.get(name, "").strip()
        if value and value != NO_DEVICES:
            ids = tuple(v.strip() for v in value.split(","))
            if all(re.fullmatch(_GPU_ID, i) for i in ids):
                return ids, name
    return (), ""


def constrain_devices(text: str | None) -> bool | None:
    """cgroup.conf's ``ConstrainDevices`` (the last line wins; Slurm's default is no), ``None`` when unread."""
    if text is None:
        return None
    values = re.findall(_CONSTRAIN, text)
    return bool(values) and values[-1].lower() in ("yes", "true", "1")


async def detect_job_step(probe: Probe, self_cgroup: str | None) -> JobStep | None:
    """The Slurm job step this process runs in, or ``None`` (no step cgroup in ``/proc/self/cgroup``)."""
    found = step_of(self_cgroup)
    if found is None:
        return None
    job, step = found
    env = environ_vars((await probe.read(SELF_ENVIRON)).data)
    gpus, source = _gpus(env)
    slurm_conf = env.get("SLURM_CONF", "")
    conf = posixpath.join(posixpath.dirname(slurm_conf), "cgroup.conf") if slurm_conf.startswith("/") else CGROUP_CONF
    constrained = constrain_devices(await probe.text(conf))
    how = f"{SELF_CGROUP} names {'slurmstepd.scope/' if 'slurmstepd.scope' in (self_cgroup or '') else ''}job_{job}/step_{step}"
    evidence = (file_ref(SELF_CGROUP), file_ref(SELF_ENVIRON), file_ref(conf))
    return JobStep(job, step, gpus, source, constrained, conf, how, evidence)


__all__ = ["STEP_VARIABLES", "JobStep", "constrain_devices", "detect_job_step", "step_of"]
