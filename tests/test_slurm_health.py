"""deploy/slurm/rigaudit-health as a real slurmd runs it (HealthCheckProgram, Prolog, Epilog), against the
real slurmctld of a private one-node cluster (Debian's packages, ``tests.support.fleet.OneNodeSlurm``).

A node whose snapshot has a problem is drained with rigaudit's reason; a healthy one stays idle; nothing is
drained without --drain, nor when the check could not be made. The snapshot is injected through the
wrapper's configuration (``--snapshot``), as an administrator would pass any other option. The faulty node
is the 2x H200 VM with GPU0's link trained at Gen4 x8: a medium problem (its GPUs talk over NVLink), so the
wrapper's settings judge with ``--fail-on medium``.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest

from tests.support.fleet import RIGAUDIT, OneNodeSlurm, degrade_link, require_slurm
from tests.support.mutate import light_copy, set_nvml

pytestmark = pytest.mark.timeout(400)  # two waits for slurmd's schedule (see wait_for) fit in a test

REPO = Path(__file__).resolve().parent.parent
WRAPPER = REPO / "deploy" / "slurm" / "rigaudit-health"
HEALTHY = Path(__file__).parent / "fixtures" / "h200x2-vm"
MODES = ("health", "prolog", "epilog")


@dataclass
class Hooks:
    """The wrapper as each of slurmd's hooks: a shim per mode that points it at that mode's settings file."""

    folder: Path
    slurm_conf: Path | None = None

    def shim(self, mode: str) -> Path:
        """A run holds its mode's lock from the moment it reads the off switch until it ends, so that
        turning a mode off (``switch``) can wait for a run slurmd had already started. When it ends it
        records the job it ran for (``jobs``: a prolog or epilog is slurmd's for one job, by its id)."""
        path = self.folder / f"{mode}-shim"
        off = self.folder / f"{mode}.off"
        conf = self.folder / f"{mode}.conf"
        runs = self.folder / f"{mode}.jobs"
        run = (
            f"[ -e {off} ] && exit 0; RIGAUDIT_SLURM_CONF={conf} {WRAPPER}; status=$?; "
            f'echo "${{SLURM_JOB_ID:--}}" >>{runs}; exit "$status"'
        )
        path.write_text(f"#!/bin/sh\nexec flock {self.lock_path(mode)} /bin/sh -c {shlex.quote(run)}\n")
        path.chmod(0o755)
        return path

    def lock_path(self, mode: str) -> Path:
        return self.folder / f"{mode}.lock"

    def configure(self, mode: str, snapshot: Path, *, drain: bool, args: str = "", rigaudit: Path = RIGAUDIT) -> None:
        lines = [
            f"RIGAUDIT={rigaudit}",
            f"RIGAUDIT_DRAIN={int(drain)}",
            f'RIGAUDIT_ARGS="--snapshot {snapshot} --only pcie --fail-on medium --deadline 15 {args}"',
            f"RIGAUDIT_LOG={self.log_path(mode)}",
        ]
        if self.slurm_conf is not None:
            lines.append(f"SLURM_CONF={self.slurm_conf}; export SLURM_CONF")
        # Whole or not at all: slurmd may start this mode's hook at any moment (a job's epilog runs after
        # srun has returned), and a hook that read a file being rewritten in place ran without settings,
        # logging nothing.
        conf = self.folder / f"{mode}.conf"
        draft = conf.with_suffix(".conf.new")
        draft.write_text("\n".join(lines) + "\n")
        draft.replace(conf)

    def log_path(self, mode: str) -> Path:
        return self.folder / f"{mode}.log"

    def log(self, mode: str) -> list[str]:
        path = self.log_path(mode)
        return path.read_text().splitlines() if path.exists() else []

    def jobs(self, mode: str) -> list[str]:
        """The job of each run of the wrapper as ``mode`` that has ended, in order (``-``: a health check's, of no job)."""
        path = self.folder / f"{mode}.jobs"
        return path.read_text().split() if path.exists() else []

    def switch(self, mode: str, on: bool) -> None:
        """Turn a mode's runs on or off; off returns once no run of it is in flight (a run slurmd started
        before the switch would otherwise act on the node during the next test)."""
        off = self.folder / f"{mode}.off"
        if on:
            off.unlink(missing_ok=True)
            return
        off.touch()
        with self.lock_path(mode).open("a") as lock:
            wait_for(lambda: _locked(lock), f"the {mode} run in flight to end")
            fcntl.flock(lock, fcntl.LOCK_UN)


def _locked(lock: IO[str]) -> bool:
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@dataclass
class Cluster:
    slurm: OneNodeSlurm
    hooks: Hooks
    degraded: Path

    def scontrol(self, *args: str) -> str:
        done = subprocess.run(["scontrol", *args], env=self.slurm.env, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def node(self) -> dict[str, str]:
        """``scontrol -o show node``'s fields (Reason keeps its spaces)."""
        line = self.scontrol("-o", "show", "node", self.slurm.node).strip()
        head, _, reason = line.partition(" Reason=")
        fields = dict(item.split("=", 1) for item in head.split() if "=" in item)
        if reason:
            fields["Reason"] = reason.rsplit(" [", 1)[0]
        return fields

    def drained(self) -> bool:
        return "DRAIN" in self.node()["State"]

    def schedulable(self) -> bool:
        """Idle, not drained, and answering slurmctld: a node just resumed can read ``IDLE`` while slurmctld still
        flags it not responding (``*`` or ``+NOT_RESPONDING``) until slurmd answers its ping; a job asked for then
        pends with no node and ``srun --immediate`` gives up ("Requested nodes are busy")."""
        state = self.node()["State"]
        flags = state.replace("*", "+NOT_RESPONDING").split("+")
        return flags[0] == "IDLE" and not {"DRAIN", "NOT_RESPONDING"} & set(flags[1:])

    def resume(self) -> None:
        if self.drained():
            self.scontrol("update", f"nodename={self.slurm.node}", "state=resume")
        wait_for(self.schedulable, "the node to be idle, undrained and responding again")

    def srun(self) -> subprocess.CompletedProcess[str]:
        """A one-task job; a job that ran prints its id (``SLURM_JOB_ID``) on stdout."""
        argv = ["srun", "--nodes=1", "--immediate=30", "printenv", "SLURM_JOB_ID"]
        return subprocess.run(argv, env=self.slurm.env, capture_output=True, text=True, timeout=90)

    def said(self, job: subprocess.CompletedProcess[str]) -> str:
        """What an assertion about ``job`` shows: srun's words, the node's state, the daemons' last lines."""
        logs = sorted((self.slurm.root / "log").glob("*.log"))
        tails = [f"{p.name}: " + " | ".join(p.read_text(errors="replace").splitlines()[-6:]) for p in logs]
        return "\n".join([f"srun exit {job.returncode}: {job.stderr.strip()}", f"node: {self.node()}", *tails])

    def epilog_of(self, job: subprocess.CompletedProcess[str]) -> None:
        """Wait until the epilog of the job ``srun`` ran has ended (slurmd runs it once per job, after srun returned)."""
        job_id = job.stdout.strip()
        assert job_id.isdigit(), job
        wait_for(lambda: job_id in self.hooks.jobs("epilog"), f"the epilog of job {job_id}")

    def settle(self) -> None:
        """Wait until every job whose prolog ran has had its epilog: no hook of a job outlives the test that ran it."""
        wait_for(lambda: set(self.hooks.jobs("prolog")) <= set(self.hooks.jobs("epilog")), "the epilogs of the jobs that ran")

    def run_wrapper(self, mode: str, *options: str) -> subprocess.CompletedProcess[str]:
        """The wrapper as slurmd starts a HealthCheckProgram: no environment but SLURMD_NODENAME."""
        env = {"SLURMD_NODENAME": self.slurm.node, "RIGAUDIT_SLURM_CONF": str(self.hooks.folder / f"{mode}.conf")}
        return subprocess.run(["/bin/sh", str(WRAPPER), *options], env=env, capture_output=True, text=True, timeout=90)


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 150.0) -> None:
    """Poll a daemon's state until ``condition`` holds (slurmd acts on its own schedule: every 2 s it starts a
    check that takes a second or two, far longer on a loaded machine, so the bound is wide; it returns at once)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    require_slurm()
    folder = tmp_path_factory.mktemp("hooks")
    degraded = light_copy(HEALTHY, folder / "degraded")
    degrade_link(degraded, "0000:00:06.0", 0)
    hooks = Hooks(folder)
    for mode in MODES:
        hooks.configure(mode, HEALTHY, drain=True)
    extra = [
        f"HealthCheckProgram={hooks.shim('health')}",
        "HealthCheckInterval=2",
        f"Prolog={hooks.shim('prolog')}",
        f"Epilog={hooks.shim('epilog')}",
        "MessageTimeout=60",  # a prolog runs inside the launch request; this machine's CPUs are shared
    ]
    # The fixture's two H200s, as GRES: slurmd counts a gpu's File= entries (it logs that these are no devices)
    root = tmp_path_factory.mktemp("slurm")
    (root / "dev").mkdir()
    for n in (0, 1):
        (root / "dev" / f"nvidia{n}").touch()
    extra.append("GresTypes=gpu")
    gres = f"Name=gpu Type=h200 File={root}/dev/nvidia[0-1]\n"
    with OneNodeSlurm.start(root, extra, node="Gres=gpu:h200:2", gres=gres) as slurm:
        hooks.slurm_conf = Path(slurm.env["SLURM_CONF"])
        for mode in MODES:
            hooks.configure(mode, HEALTHY, drain=True)
        yield Cluster(slurm, hooks, degraded)


@pytest.fixture
def idle(cluster: Cluster) -> Iterator[Cluster]:
    """The cluster with its node idle, the periodic health check off and no job's hook in flight, before and after
    the test."""
    cluster.hooks.switch("health", on=False)
    cluster.settle()
    for mode in MODES:
        cluster.hooks.configure(mode, HEALTHY, drain=True)
    cluster.resume()
    yield cluster
    cluster.hooks.switch("health", on=False)
    cluster.settle()
    for mode in MODES:
        cluster.hooks.configure(mode, HEALTHY, drain=True)
    cluster.resume()


def test_a_healthy_node_stays_idle_through_every_hook(cluster: Cluster) -> None:
    hooks = cluster.hooks
    wait_for(lambda: len(hooks.log("health")) >= 1, "slurmd's first health check")
    hooks.switch("health", on=False)
    job = cluster.srun()
    assert job.returncode == 0, cluster.said(job)
    cluster.epilog_of(job)
    cluster.settle()  # the epilog of the cluster's first job (OneNodeSlurm's readiness srun) too
    for mode in MODES:
        assert len(hooks.log(mode)) == len(hooks.jobs(mode)), (mode, hooks.jobs(mode), hooks.log(mode))  # each run said one line
        assert all(" exit=0 action=none healthy: " in line for line in hooks.log(mode)), hooks.log(mode)
    fields = cluster.node()
    assert "DRAIN" not in fields["State"] and fields["State"].startswith("IDLE")
    assert "Reason" not in fields


def test_slurmd_health_check_drains_a_faulty_node_and_resumes_it_when_healthy(idle: Cluster) -> None:
    hooks = idle.hooks
    hooks.configure("health", idle.degraded, drain=True)
    hooks.switch("health", on=True)
    wait_for(idle.drained, "slurmd's health check to drain the node")
    reason = idle.node()["Reason"]
    assert reason.startswith("rigaudit: pcie.link medium: GPU0 (0000:00:06.0)"), reason
    assert any(" exit=1 action=drained pcie.link medium" in line for line in hooks.log("health"))
    hooks.configure("health", HEALTHY, drain=True)
    wait_for(lambda: not idle.drained(), "slurmd's health check to resume the node")
    assert "Reason" not in idle.node()
    assert any(" action=resumed healthy: " in line for line in hooks.log("health"))


def test_an_administrators_drain_is_left_alone(idle: Cluster) -> None:
    idle.scontrol("update", f"nodename={idle.slurm.node}", "state=drain", "reason=maintenance")
    done = idle.run_wrapper("health")
    assert done.returncode == 0
    assert idle.drained() and idle.node()["Reason"] == "maintenance"


@pytest.mark.parametrize(
    ("case", "drain", "args", "logged"),
    [
        ("problem without --drain", False, "", "exit=1 action=none (no --drain) pcie.link medium"),
        ("could not check", True, "--replay-latency-ms 400 --deadline 0.2", "exit=3 action=none (could not check"),
        ("usage error", True, "--only nothing.here", "exit=2 action=none (could not check"),
        ("rigaudit missing", True, "", "exit=127 action=none (could not check"),
    ],
)
def test_never_drained_without_drain_or_when_the_check_was_not_made(
    idle: Cluster, case: str, drain: bool, args: str, logged: str
) -> None:
    rigaudit = Path("/nonexistent/rigaudit") if case == "rigaudit missing" else RIGAUDIT
    idle.hooks.configure("health", idle.degraded, drain=drain, args=args, rigaudit=rigaudit)
    done = idle.run_wrapper("health")
    assert done.returncode == 0, done.stderr
    assert logged in idle.hooks.log("health")[-1], idle.hooks.log("health")[-1]
    assert not idle.drained()


def test_a_node_short_of_the_gpus_its_gres_promises_is_drained_naming_them(idle: Cluster, tmp_path: Path) -> None:
    """slurm.conf and gres.conf promise two H200s; one fell off the bus (NVML counts one, the PCI bus shows two):
    the gate reads the promise from the Slurm configuration slurmd runs with, no --expect file."""
    lost = light_copy(HEALTHY, tmp_path / "lost")
    set_nvml(lost, "nvmlDeviceGetCount", [], 1)
    idle.hooks.configure("health", lost, drain=False, args="--only promised")
    done = idle.run_wrapper("health", "--drain")
    assert done.returncode == 0, done.stderr
    reason = idle.node()["Reason"]
    assert reason.startswith("rigaudit: promised.slurm critical"), reason
    assert f": 1 of the 2 gpu:h200 Slurm's GRES promises {idle.slurm.node} missing, 1 usable GPU(s)" in reason, reason


def test_drain_on_the_command_line(idle: Cluster) -> None:
    idle.hooks.configure("health", idle.degraded, drain=False)
    done = idle.run_wrapper("health", "--drain")
    assert done.returncode == 0
    assert idle.node()["Reason"].startswith("rigaudit: pcie.link medium")


def test_a_faulty_prolog_keeps_the_job_off_and_drains_the_node(idle: Cluster) -> None:
    idle.hooks.configure("prolog", idle.degraded, drain=True)
    job = idle.srun()
    assert job.returncode != 0 and "prolog" in job.stderr.lower(), idle.said(job)
    assert idle.drained()
    assert idle.node()["Reason"].startswith("rigaudit: pcie.link medium: GPU0")
    assert " exit=1 action=drained " in idle.hooks.log("prolog")[-1]


def test_a_faulty_prolog_without_drain_lets_the_job_run(idle: Cluster) -> None:
    idle.hooks.configure("prolog", idle.degraded, drain=False)
    job = idle.srun()
    assert job.returncode == 0, idle.said(job)
    assert " exit=1 action=none (no --drain) " in idle.hooks.log("prolog")[-1]
    assert not idle.drained()


def test_a_faulty_epilog_drains_the_node_after_the_job(idle: Cluster) -> None:
    idle.hooks.configure("epilog", idle.degraded, drain=True)
    job = idle.srun()
    assert job.returncode == 0, idle.said(job)  # the job itself ran
    idle.epilog_of(job)
    assert idle.drained()
    assert " exit=1 action=drained " in idle.hooks.log("epilog")[-1]
    assert idle.node()["Reason"].startswith("rigaudit: pcie.link medium")


def test_the_wrapper_explains_itself_and_refuses_unknown_options(tmp_path: Path) -> None:
    helped = subprocess.run(["/bin/sh", str(WRAPPER), "--help"], capture_output=True, text=True, timeout=30)
    assert helped.returncode == 0 and "HealthCheckProgram" in helped.stdout and "NEVER drained" in helped.stdout
    refused = subprocess.run(["/bin/sh", str(WRAPPER), "--drian"], capture_output=True, text=True, timeout=30)
    assert refused.returncode == 2 and "unknown option --drian" in refused.stderr
    assert os.access(WRAPPER, os.X_OK)
    assert shlex.split(WRAPPER.read_text().splitlines()[0]) == ["#!/bin/sh"]


def test_the_scripts_pass_shellcheck() -> None:
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (Debian package shellcheck): run .ci/fleet-setup.sh")
    scripts = [WRAPPER, *sorted((REPO / "deploy" / "slurm").glob("*.sh"))]
    done = subprocess.run([shellcheck, "--shell=sh", *map(str, scripts)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout
