"""``rigaudit check`` and the audit inside a Slurm job step, on generated hosts (tests/hostgen/jobstep.py).

Under cgroup.conf's ``ConstrainDevices=yes`` a step sees only the GPUs it was given: NVML lists those, the PCI bus
all of the node's. The gate judges the step's GPUs, never drains for the others (another job's), says it could not
look where the step was given none, and still drains for a GPU really lost, seen from the host or from the step.
A step is taken as confined only where NVML agrees (it shows no more GPUs than the step was given), never because
cgroup.conf went unread; one whose environment names no GPU (an ssh login adopted into the extern step) is never ok
with a GPU missing; a healthy step that saw some of the node's GPUs says how many it judged.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import anyio
import pytest

from rigaudit.agents.facts.job_step import JobStep, constrain_devices, step_of
from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.fleet.runner import _steps_without_gpus
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.remote.slurm import SlurmJob
from rigaudit.tools.schema.audit import AuditResult
from tests.hostgen import ARCHETYPES
from tests.hostgen.cache import snapshot
from tests.hostgen.jobstep import lose_gpu, slurm_step, step_cgroup

HGX = ARCHETYPES["hgx-h100-jammy"]


def check(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, list[str]]:
    code = main(["check", "--snapshot", str(root), "-v", *args])
    return code, capsys.readouterr().out.splitlines()


def line(lines: list[str], check_id: str) -> str:
    return next(ln for ln in lines if ln.split()[:1] == [check_id])


def audit(root: Path) -> AuditResult:
    async def go() -> AuditResult:
        host = SnapshotHost(root)
        try:
            return await run_audit(host)
        finally:
            await host.aclose()

    return anyio.run(go)


@pytest.mark.parametrize("v1", [False, True], ids=["cgroup-v2", "cgroup-v1"])
def test_a_step_given_two_gpus_is_judged_by_them_not_the_node_bus(capsys: pytest.CaptureFixture[str], v1: bool) -> None:
    code, lines = check(capsys, snapshot(slurm_step(HGX, (2, 3), v1=v1)))
    assert code == 0, lines[0]  # was 1: "promised.pci critical: NVML shows 2 of the 8 NVIDIA GPU functions"
    pci = line(lines, "promised.pci")
    assert " ok " in pci and "inside Slurm job 481516 step 0" in pci and "GPUs 2,3 (SLURM_STEP_GPUS)" in pci
    assert "of the 8 on the PCI bus" in pci
    platform = line(lines, "container.platform")
    assert "Slurm job 481516 step 0 on bare metal" in platform and "ConstrainDevices=yes" in platform


def test_a_step_given_all_eight_gpus_is_healthy(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = check(capsys, snapshot(slurm_step(HGX, tuple(range(8)))))
    assert code == 0 and lines[0].startswith("healthy: no problem at or above high")
    assert "NVML shows the 8 GPU(s) the step was given" in line(lines, "promised.pci")


def test_a_step_given_no_gpu_could_not_check_and_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    """What `rigaudit audit --slurm` collected before it could ask srun for GPUs: a step with none."""
    root = snapshot(slurm_step(HGX, ()))
    code, lines = check(capsys, root)
    assert code == 3, lines[0]  # was 1: "promised.pci critical: NVML shows 0 of the 8"; never a drain
    assert lines[0].startswith("could not check: promised.pci (in Slurm job 481516 step 0, which was given no GPU")
    clocks = line(lines, "gpu.clocks")
    assert "unknown" in clocks and "NVML reports no GPU: this runs in Slurm job 481516 step 0" in clocks
    result = audit(root)
    assert "given no GPU" in result.host.facts["job_step"]
    assert "NVML shows none of the node's 8 GPU(s)" in result.host.facts["job_step"]
    warned = _steps_without_gpus(SimpleNamespace(audits={"gpu07": SimpleNamespace(result=result)}), SlurmJob())  # type: ignore[arg-type]
    assert len(warned) == 1 and "saw no GPU on 1 node(s) (gpu07)" in warned[0] and "--slurm-gres gpu:N" in warned[0]


def test_a_step_that_constrains_nothing_is_judged_as_the_host(capsys: pytest.CaptureFixture[str]) -> None:
    """ConstrainDevices=no: the step sees every GPU, so a GPU missing from NVML is the node's."""
    code, lines = check(capsys, snapshot(slurm_step(HGX, (2, 3), constrain="no")))
    assert code == 0 and "NVML shows the 8 NVIDIA GPU function(s) on the PCI bus" in line(lines, "promised.pci")
    lost = replace(slurm_step(HGX, (2, 3), constrain="no"), platform=replace(HGX.platform, visible_gpus=tuple(range(7))))
    code, lines = check(capsys, snapshot(lost))
    assert code == 1 and lines[0].startswith("promised.pci critical: NVML shows 7 of the 8")


def test_a_gpu_lost_seen_from_the_host_still_drains(capsys: pytest.CaptureFixture[str]) -> None:
    lost = replace(HGX, name=HGX.name + "+gpu7-lost", platform=replace(HGX.platform, visible_gpus=tuple(range(7))))
    code, lines = check(capsys, snapshot(lost))
    assert code == 1 and lines[0].startswith("promised.pci critical: NVML shows 7 of the 8 NVIDIA GPU functions")


def test_a_gpu_the_step_was_given_and_nvml_lacks_drains(capsys: pytest.CaptureFixture[str]) -> None:
    """Given GPUs 2,3 and NVML in the step shows one: a GPU of the job is gone."""
    spec = slurm_step(HGX, (2, 3))
    spec = replace(spec, platform=replace(spec.platform, visible_gpus=(2,)))
    code, lines = check(capsys, snapshot(spec))
    assert code == 1
    assert lines[0].startswith("promised.pci critical: inside Slurm job 481516 step 0")
    assert "NVML shows 1 of the 2 GPU(s) the step was given" in lines[0]


def test_expect_gpus_counts_the_node_bus_from_a_step(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    expect = tmp_path / "expect.conf"
    expect.write_text("gpus = 8\n")
    code, lines = check(capsys, snapshot(slurm_step(HGX, (2, 3))), "--expect", str(expect))
    assert code == 0, lines[0]
    assert "8 GPU(s) on the node's PCI bus: 2 given to Slurm job 481516 step 0, 6 more" in line(lines, "expect.gpus")


def test_the_step_is_read_from_the_cgroup_path_alone() -> None:
    assert step_of(step_cgroup(7, "0")) == ("7", "0")
    assert step_of(step_cgroup(7, "batch", v1=True, uid=1000)) == ("7", "batch")
    assert step_of("0::/system.slice/slurmd.service\n") is None  # slurmd's health check, prolog and epilog
    assert step_of("0::/user.slice/user-0.slice/session-3.scope\n") is None
    assert step_of(None) is None
    assert constrain_devices("ConstrainCores=yes\nconstraindevices = YES\n") is True
    assert constrain_devices("ConstrainDevices=yes\nConstrainDevices=no\n") is False  # the last line wins
    assert constrain_devices("ConstrainCores=yes\n") is False  # Slurm's default
    assert constrain_devices(None) is None


def _fleet_warnings(result: AuditResult) -> list[str]:
    run = SimpleNamespace(audits={"gpu07": SimpleNamespace(result=result)})
    return _steps_without_gpus(run, SlurmJob(gres="gpu:2"))  # type: ignore[arg-type]


@pytest.mark.parametrize("conf_dir", ["/usr/local/etc/slurm", "/etc/slurm-llnl"])
def test_a_step_whose_cgroup_conf_is_beside_a_built_slurm_conf_drains_a_lost_gpu(
    capsys: pytest.CaptureFixture[str], conf_dir: str
) -> None:
    """Review 8 F1: Slurm built from source keeps cgroup.conf in /usr/local/etc/slurm; ConstrainDevices=no there."""
    spec = lose_gpu(slurm_step(HGX, (2, 3), constrain="no", conf_dir=conf_dir))
    code, lines = check(capsys, snapshot(spec))
    assert code == 1, lines[0]  # was 0: "(/etc/slurm/cgroup.conf not read: ConstrainDevices taken as yes)"
    assert lines[0].startswith("promised.pci critical: NVML shows 7 of the 8 NVIDIA GPU functions"), lines[0]
    assert f"ConstrainDevices=no in {conf_dir}/cgroup.conf" in line(lines, "container.platform")


def test_a_step_whose_cgroup_conf_is_unread_is_judged_by_what_nvml_shows(capsys: pytest.CaptureFixture[str]) -> None:
    """cgroup.conf where the audit does not look (no SLURM_CONF): more GPUs on NVML than given is no confinement."""
    spec = lose_gpu(slurm_step(HGX, (2, 3), constrain="no", conf_dir="/opt/slurm/etc"))
    code, lines = check(capsys, snapshot(spec))
    assert code == 1 and lines[0].startswith("promised.pci critical: NVML shows 7 of the 8"), lines[0]
    assert "taken as yes" not in "\n".join(lines)
    found = next(ln for ln in lines if "cgroup.conf not read" in ln)
    assert "/usr/local/etc/slurm/cgroup.conf" in found and "judged by what NVML shows" in found
    named = slurm_step(HGX, (2, 3), constrain="no", conf_dir="/opt/slurm/etc", slurm_conf=True)
    code, lines = check(capsys, snapshot(named))
    assert code == 0 and "ConstrainDevices=no in /opt/slurm/etc/cgroup.conf" in line(lines, "container.platform")
    code, lines = check(capsys, snapshot(lose_gpu(named)))
    assert code == 1 and lines[0].startswith("promised.pci critical: NVML shows 7 of the 8"), lines[0]


def test_a_step_confined_but_unread_is_judged_by_its_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    """No cgroup.conf read and NVML shows just the 2 GPUs given: confined, by what agrees."""
    code, lines = check(capsys, snapshot(slurm_step(HGX, (2, 3), constrain=None)))
    assert code == 0, lines[0]
    pci = line(lines, "promised.pci")
    assert "cgroup.conf not read" in pci and "NVML shows the 2 GPU(s) the step was given" in pci


def test_a_step_whose_nvml_shows_more_than_it_was_given_is_judged_as_the_host(capsys: pytest.CaptureFixture[str]) -> None:
    """ConstrainDevices=yes read, yet NVML shows 7 GPUs for a step given 2: what NVML shows wins, and one is missing."""
    spec = slurm_step(HGX, (2, 3))
    spec = replace(spec, platform=replace(spec.platform, visible_gpus=tuple(range(7))))
    code, lines = check(capsys, snapshot(spec))
    assert code == 1 and lines[0].startswith("promised.pci critical: NVML shows 7 of the 8"), lines[0]


def test_an_ssh_login_adopted_into_the_extern_step_is_never_ok_with_a_gpu_missing(capsys: pytest.CaptureFixture[str]) -> None:
    """Review 8 F2: pam_slurm_adopt's login holds the job's devices but sshd's environment: no GPU named."""
    whole = slurm_step(HGX, tuple(range(8)), job=9, step="extern", adopted=True)
    code, lines = check(capsys, snapshot(lose_gpu(whole)))
    assert code == 3, lines[0]  # was 0: "Slurm names none given to the step (...), so none can be missing"
    assert lines[0].startswith("could not check: promised.pci (inside Slurm job 9 step extern"), lines[0]
    assert "no GPU of the step named, NVML shows 7 of the 8" in lines[0]
    assert "pam_slurm_adopt" in line(lines, "promised.pci")
    code, lines = check(capsys, snapshot(slurm_step(HGX, (2, 3), job=9, step="extern", adopted=True)))
    assert code == 3 and "NVML shows 2 of the 8" in lines[0], lines[0]  # never a drain for another job's six
    code, lines = check(capsys, snapshot(whole))
    assert code == 0 and "NVML shows the 8 NVIDIA GPU function(s) on the PCI bus" in line(lines, "promised.pci"), lines[0]


def test_a_healthy_step_says_it_judged_only_its_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    """Review 8 F7: given 2 of 8, the healthy line and the fleet report say the other 6 went unjudged."""
    root = snapshot(slurm_step(HGX, (2, 3)))
    code, lines = check(capsys, root)
    assert code == 0 and lines[0].startswith("healthy: judged 2 of 8 GPUs (the job step's); no problem at or above high")
    fact = audit(root).host.facts["job_step"]
    assert "NVML shows 2 of the node's 8 GPU(s) on the PCI bus, the other 6 unjudged" in fact, fact
    warned = _fleet_warnings(audit(root))
    assert len(warned) == 1 and "judged only some GPUs on 1 node(s) (gpu07 2 of 8)" in warned[0], warned
    assert not _fleet_warnings(audit(snapshot(slurm_step(HGX, tuple(range(8))))))


@pytest.mark.parametrize(
    ("constrained", "gpus", "shown", "confines"),
    [
        (False, ("2", "3"), 2, False),
        (None, ("2", "3"), 2, True),
        (None, ("2", "3"), 7, False),
        (True, ("2", "3"), 7, False),
        (True, ("2", "3"), 1, True),
        (True, (), 0, True),
        (True, (), 8, False),
        (True, (), 7, None),
        (None, (), 2, None),
    ],
)
def test_a_step_is_confined_only_where_nvml_agrees(
    constrained: bool | None, gpus: tuple[str, ...], shown: int, confines: bool | None
) -> None:
    step = JobStep("7", "0", gpus, "SLURM_STEP_GPUS" if gpus else "", constrained, "/etc/slurm/cgroup.conf", "")
    assert step.confines(shown, 8) is confines


def test_srun_asks_for_the_gres_it_is_given() -> None:
    assert not any(a.startswith("--gres") for a in SlurmJob().argv(["x"]))
    assert "--gres=gpu:8" in SlurmJob(gres="gpu:8").argv(["x"])


@pytest.mark.parametrize("spec", ["gpu:8", "gpu:h100:8", "gpu:h100:4,gpu:a100:4"])
def test_slurm_gres_takes_srun_specs(spec: str) -> None:
    from rigaudit.orchestrator.cli import build_parser
    from rigaudit.orchestrator.commands._fleet import fleet_run

    args = build_parser().parse_args(["audit", "--slurm", "--slurm-gres", spec])
    run = fleet_run(args)
    assert run.job is not None and run.job.gres == spec


@pytest.mark.parametrize("given", [["--slurm", "--slurm-gres", "gpu:8 --x"], ["--slurm", "--slurm-gres", "8"]])
def test_slurm_gres_refuses_what_is_not_one(capsys: pytest.CaptureFixture[str], given: list[str]) -> None:
    assert main(["audit", *given]) == 2
    assert "--slurm-gres" in capsys.readouterr().err
