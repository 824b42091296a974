"""Whether the audit runs inside a scheduler's job step, and which GPUs that step was given.

A Slurm job step (``srun``, a batch script) runs in a cgroup slurmstepd made for it: ``.../slurmstepd.scope/job_N/
step_M/...`` on cgroup v2, ``/slurm/uid_U/job_N/step_M`` on v1. With ``ConstrainDevices=yes`` in cgroup.conf, the
step's device cgroup allows only the GRES it was allocated (cgroup.conf(5)), so NVML inside it lists those GPUs
and no others while the node's PCI bus (sysfs is not namespaced) still shows every GPU. ``ConstrainDevices``
defaults to no, and cgroup.conf lives beside slurm.conf, whose folder is the build's (``/etc/slurm`` packaged,
``/usr/local/etc/slurm`` from source, ``/etc/slurm-llnl`` on older Debian) or ``SLURM_CONF``'s. Slurm names the
step's GPUs by their global IDs in ``SLURM_STEP_GPUS`` (an ``srun`` step) or ``SLURM_JOB_GPUS`` (a batch or
interactive step), not relative to the device cgroup (srun(1)); a step that asked for no GPU gets neither, and
neither does an ssh login pam_slurm_adopt put in a job's ``extern`` step (its environment is sshd's).

Whether NVML here shows the step's GPUs alone is taken from what agrees (:meth:`JobStep.confines`), never from an
unread file: a step whose NVML shows more GPUs than it was given is not confined, and is judged as the host.

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
CGROUP_CONFS = (
    "/etc/slurm/cgroup.conf",
    "/usr/local/etc/slurm/cgroup.conf",
    "/etc/slurm-llnl/cgroup.conf",
    "/var/spool/slurmd/conf-cache/cgroup.conf",
)
"""Where cgroup.conf is looked for after ``SLURM_CONF``'s folder: packaged, from source, older Debian, configless."""
_V2 = r"/slurmstepd\.scope/job_(\d+)/step_([A-Za-z0-9_]+)(?:/|$)"
_V1 = r"/slurm[^/]*/uid_\d+/job_(\d+)/step_([A-Za-z0-9_]+)(?:/|$)"
_GPU_ID = r"[0-9]{1,4}"
_CONSTRAIN = r"(?im)^[ \t]*ConstrainDevices[ \t]*=[ \t]*(\S+)"
STEP_VARIABLES = ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS")
"""Where Slurm names a step's GPUs (global IDs): ``SLURM_STEP_GPUS`` in an srun step, ``SLURM_JOB_GPUS`` in the
batch and interactive steps only (srun's steps inherit the job's, whatever they were given)."""


class JobStep(Record):
    """The Slurm job step the audit runs in."""

    job: str
    step: str
    """``0``, ``1``... for srun steps; ``batch``, ``interactive``, ``extern``."""
    gpus: tuple[str, ...]
    """The global IDs of the GPUs the step was given (empty: none)."""
    gpus_from: str
    """The variable that said so (``SLURM_STEP_GPUS``...), or ``""`` when none did (given none, or not known)."""
    constrained: bool | None
    """cgroup.conf's ``ConstrainDevices``: ``True`` yes, ``False`` no, ``None`` not read."""
    conf: str
    """The cgroup.conf read, or those tried (comma-separated) when none could be."""
    how: str
    evidence: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"Slurm job {self.job} step {self.step}"

    def confines(self, shown: int | None, on_bus: int) -> bool | None:
        """Whether NVML here shows the step's GPUs alone, from what agrees: ``True`` judge the step's GPUs, ``False``
        judge as the host, ``None`` cannot tell (no GPU named, NVML shows some but not all of the bus's).

        ``shown``: NVML's device count (``None``: NVML unusable); ``on_bus``: the NVIDIA GPUs on the PCI bus."""
        if self.constrained is False:
            return False
        if shown is None:
            return self.constrained
        if not self.gpus:
            return True if shown == 0 else (False if shown >= on_bus else None)
        return shown <= len(self.gpus)  # more than it was given: not confined (fewer: one of its own is missing)

    @property
    def given(self) -> str:
        """``GPUs 2,3 (SLURM_STEP_GPUS)`` or ``no GPU``."""
        if not self.gpus:
            return "no GPU"
        return f"GPU{'s' if len(self.gpus) > 1 else ''} {','.join(self.gpus)} ({self.gpus_from})"

    @property
    def constraint(self) -> str:
        if self.constrained is None:
            return f"cgroup.conf not read ({self.conf}): judged by what NVML shows"
        return f"ConstrainDevices={'yes' if self.constrained else 'no'} in {self.conf}"


def step_of(cgroup: str | None) -> tuple[str, str] | None:
    """``(job, step)`` from a ``/proc/PID/cgroup``'s text, when a line names a Slurm job step."""
    for line in (cgroup or "").splitlines():
        path = line.split(":", 2)[-1]
        for pattern in (_V2, _V1):
            if m := re.search(pattern, path):
                return m.group(1), m.group(2)
    return None


def _gpus(env: dict[str, str], step: str) -> tuple[tuple[str, ...], str]:
    """The GPUs ``step`` was given and the variable that says so: an srun step (``0``, ``1``...) by its own
    variable alone, since the job's is in its environment too, however few it was given."""
    for name in STEP_VARIABLES[:1] if step.isdecimal() else STEP_VARIABLES:
        value = env.get(name, "").strip()
        if value:
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
    gpus, source = _gpus(env, step)
    slurm_conf = env.get("SLURM_CONF", "")
    beside = (posixpath.join(posixpath.dirname(slurm_conf), "cgroup.conf"),) if slurm_conf.startswith("/") else ()
    tried = tuple(dict.fromkeys((*beside, *CGROUP_CONFS)))
    texts = await probe.gather(*[lambda c=c: probe.text(c) for c in tried])
    read = next(((c, t) for c, t in zip(tried, texts, strict=True) if t is not None), None)
    conf = read[0] if read else ", ".join(tried)
    constrained = constrain_devices(read[1] if read else None)
    how = f"{SELF_CGROUP} names {'slurmstepd.scope/' if 'slurmstepd.scope' in (self_cgroup or '') else ''}job_{job}/step_{step}"
    evidence = (file_ref(SELF_CGROUP), file_ref(SELF_ENVIRON), *(file_ref(c) for c in ((read[0],) if read else tried)))
    return JobStep(job, step, gpus, source, constrained, conf, how, evidence)


__all__ = ["CGROUP_CONFS", "STEP_VARIABLES", "JobStep", "constrain_devices", "detect_job_step", "step_of"]
