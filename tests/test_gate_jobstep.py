"""``rigaudit check`` and the audit inside a Slurm job step, on generated hosts (tests/hostgen/jobstep.py).

Under cgroup.conf's ``ConstrainDevices=yes`` a step sees only the GPUs it was given: NVML lists those, the PCI bus
all of the node's. The gate judges the step's GPUs, never drains for the others (another job's), says it could not
look where the step was given none, and still drains for a GPU really lost, seen from the host or from the step.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import anyio
import pytest

from rigaudit.agents.facts.job_step import constrain_devices, step_of
from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.fleet.runner import _steps_without_gpus
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.remote.slurm import SlurmJob
from rigaudit.tools.schema.audit import AuditResult
from tests.hostgen import ARCHETYPES
from tests.hostgen.cache import snapshot
from tests.hostgen.jobstep import slurm_step, step_cgroup

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
