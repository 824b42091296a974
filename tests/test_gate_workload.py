"""A workload's fault is reported by ``rigaudit check``, never a drain: a node is drained only for its own faults.

A workload check (``Check.layer == "workload"``: runtime.*, container.*, nccl.*, the processes on the GPUs) judges
what runs on the node: an image's torch built for a newer CUDA than the driver's, a container's CPU quota. The audit
keeps its severity; the gate lists it below the drain line in every mode (Slurm's health check and prolog,
node-problem-detector, the DaemonSet), and a node fault beside it still drains.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rigaudit.agents.catalog import catalog
from rigaudit.agents.check import Check
from rigaudit.agents.findings import ok, problem
from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.gate.selection import Selection, select
from rigaudit.orchestrator.gate.verdict import judge_checks, reason_line, verdict_of
from rigaudit.tools.schema.audit import InvestigatorRun
from rigaudit.tools.schema.finding import Fix
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.cache import snapshot
from tests.hostgen.kinds import K8S_POD_MPS
from tests.hostgen.workload import gpu_process, memory_held_no_process, node_nccl_conf, torch_newer_than_driver

DEPLOY = Path(__file__).parent.parent / "deploy"
HGX = ARCHETYPES["hgx-h100-jammy"]
WORKLOAD_AREAS = ("runtime", "container", "nccl")


def check(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, list[str]]:
    code = main(["check", "--snapshot", str(root), *args])
    return code, capsys.readouterr().out.splitlines()


def test_an_image_built_for_a_newer_cuda_is_the_workloads_not_a_drain(capsys: pytest.CaptureFixture[str]) -> None:
    root = snapshot(torch_newer_than_driver(ARCHETYPES["hgx-h200-noble"]))
    code, lines = check(capsys, root)
    assert code == 0, lines[0]  # was 1: "runtime.cuda_driver_compat high: torch 2.9.0+cu130 ..."
    assert lines[0].startswith("healthy: the workload's, not the node's: runtime.cuda_driver_compat high; no node problem")
    shown = next(ln for ln in lines if ln.split()[:1] == ["runtime.cuda_driver_compat"])
    assert "high (workload's)" in shown and "CUDA 13.0" in shown
    code, _ = check(capsys, root, "--fail-on", "medium")
    assert code == 0
    # The audit keeps the verdict: its own --fail-on still counts it.
    assert main(["audit", "--snapshot", str(root), "--no-live", "--no-transcript", "--fail-on", "high"]) == 1
    capsys.readouterr()


def test_a_containers_cpu_quota_seen_from_inside_is_the_workloads(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = check(capsys, snapshot(faults.cpu_throttled(ARCHETYPES["docker-h100-bm"])))
    assert code == 0, lines[0]
    assert "the workload's, not the node's: container.cgroup_cpu high" in lines[0]


def test_a_node_fault_beside_a_workload_fault_still_drains_and_names_the_node_alone(
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = faults.xid(torch_newer_than_driver(ARCHETYPES["hgx-h200-noble"]), 3, 79)
    code, lines = check(capsys, snapshot(spec))
    assert code == 1
    assert lines[0].startswith("gpu.xid critical: ") and "runtime" not in lines[0]
    assert any("runtime.cuda_driver_compat" in ln and "(workload's)" in ln for ln in lines)


def test_the_verdict_never_counts_a_workload_problem() -> None:
    node = Check("pcie.link", "link", reads="r", problem="p", fix="f", kinds=("hardware",))
    image = Check("runtime.env", "env", reads="r", problem="p", fix="f", kinds=("restart",), layer="workload")
    fix = Fix(kind="restart", where="container", summary="drop it")
    findings = [
        ok("pcie.link", "pcie", "link", "fine"),
        problem("runtime.env", "runtime", "env", "critical", "CUDA_LAUNCH_BLOCKING=1", "e", "x", fix),
    ]
    runs = [InvestigatorRun(area=a, status="done", duration_s=0.1) for a in ("pcie", "runtime")]
    checks = judge_checks(Selection((node, image)), findings, runs, fail_on="high", deadline_s=20)
    assert [(c.check, c.counts, c.workload) for c in checks] == [("pcie.link", False, False), ("runtime.env", False, True)]
    verdict, code = verdict_of(checks)
    assert (verdict, code) == ("healthy", 0)
    reason = reason_line(checks, verdict, "high")
    assert reason == "healthy: the workload's, not the node's: runtime.env critical; no node problem at or above high in 2 checks"


def test_the_catalog_names_the_workload_checks() -> None:
    layers = {c.id: c.layer for c in catalog()}
    assert all(layers[i] == "workload" for i in layers if i.split(".")[0] in WORKLOAD_AREAS and i != "container.platform")
    assert {"cuda.memory_in_use", "cuda.foreign_processes", "cuda.mps"} <= {
        i for i, layer in layers.items() if layer == "workload"
    }
    node_areas = ("pcie", "gpu", "driver", "nvlink", "kernel", "firmware", "numa", "power", "p2p")
    assert all(layers[i] == "node" for i in layers if i.split(".")[0] in node_areas)
    assert "`runtime.cuda_driver_compat`" in (Path(__file__).parent.parent / "docs" / "checks.md").read_text()


@pytest.mark.parametrize(("script", "workload"), [("prolog.sh", []), ("epilog.sh", ["cuda.memory_in_use"])])
def test_the_prolog_and_epilog_select_node_checks_alone(script: str, workload: list[str]) -> None:
    """The prolog and epilog judge the node's areas; the health mode (every check) lists the workload's without
    draining: the three modes drain on the same faults. The epilog adds cuda.memory_in_use, whose findings are the
    node's where the ended job left memory behind (a process of no job, memory no process holds)."""
    text = (DEPLOY / "slurm" / script).read_text()
    only = re.search(r"--only (\S+)", text)
    assert only is not None
    chosen = select(catalog(), only=",".join(a for a in only.group(1).split(",") if a not in ("promised", "expect")))
    assert [c.id for c in chosen.checks if c.layer == "workload"] == workload


def test_a_node_nccl_conf_is_the_nodes_and_drains(capsys: pytest.CaptureFixture[str]) -> None:
    """/etc/nccl.conf on a host is read by every NCCL process there: a node edit fixes it (review 8, F4)."""
    code, lines = check(capsys, snapshot(node_nccl_conf(HGX)))
    assert code == 1, lines[0]  # was 0: "healthy: the workload's, not the node's: nccl.env high"
    assert lines[0].startswith("nccl.env high: NCCL_P2P_DISABLE=1 in /etc/nccl.conf")


def test_a_servers_own_nccl_override_stays_the_workloads(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = check(capsys, snapshot(faults.server_env(HGX, NCCL_P2P_DISABLE="1")))
    assert code == 0, lines[0]
    assert "the workload's, not the node's: nccl.env high" in lines[0]


def test_the_device_plugins_mps_daemon_down_is_the_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    """Every MPS-shared pod on the node fails CUDA until the plugin's daemon serves again (review 8, F5)."""
    code, lines = check(capsys, snapshot(faults.mps_daemon_not_serving(K8S_POD_MPS)))
    assert code == 1, lines[0]  # was 0: "healthy: the workload's, not the node's: cuda.mps high"
    assert lines[0].startswith("cuda.mps high: /mps/nvidia.com/gpu/pipe: no control socket")


def test_a_dead_jobs_process_on_an_idle_node_drains(capsys: pytest.CaptureFixture[str]) -> None:
    """No server; a dead job's process (parent pid 1) holds 70 GiB: the classic epilog drain (review 8, F6)."""
    code, lines = check(capsys, snapshot(gpu_process(faults.no_server(HGX))))
    assert code == 1, lines[0]  # was 0: cuda.memory_in_use unknown
    assert lines[0].startswith("cuda.memory_in_use high: pid 4242 (python3 train.py) 70.0 GiB on GPU3 (1 left over")
    only = re.search(r"--only (\S+)", (DEPLOY / "slurm" / "epilog.sh").read_text())
    assert only is not None
    areas = ",".join(a for a in only.group(1).split(",") if a != "expect")  # expect needs --expect FILE
    code, lines = check(capsys, snapshot(gpu_process(faults.no_server(HGX))), "--only", areas)
    assert code == 1 and lines[0].startswith("cuda.memory_in_use high"), lines[0]  # the epilog drains it


def test_memory_no_process_holds_on_an_idle_host_drains(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = check(capsys, snapshot(memory_held_no_process(faults.no_server(HGX))))
    assert code == 1, lines[0]  # was 0: cuda.memory_in_use unknown
    assert lines[0].startswith("cuda.memory_in_use high: GPU3 (") and "the node's" in lines[0]


def test_a_leftover_beside_a_server_is_the_nodes_at_medium(capsys: pytest.CaptureFixture[str]) -> None:
    root = snapshot(gpu_process(HGX, gib=6))
    code, lines = check(capsys, root)
    assert code == 0, lines[0]
    assert "(workload's)" not in "".join(ln for ln in lines if "cuda.memory_in_use" in ln)
    code, lines = check(capsys, root, "--fail-on", "medium")
    assert code == 1, lines[0]  # was 0: "the workload's, not the node's: cuda.memory_in_use medium, ..."
    assert lines[0].startswith("cuda.memory_in_use medium, cuda.foreign_processes medium: pid 4242")


def test_a_running_jobs_process_beside_a_server_stays_the_workloads(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = check(capsys, snapshot(gpu_process(HGX, gib=6, ppid=5151)), "--fail-on", "medium")
    assert code == 0, lines[0]
    assert "the workload's, not the node's: cuda.memory_in_use medium" in lines[0]


def test_a_findings_own_layer_outranks_its_checks() -> None:
    image = Check("nccl.env", "env", reads="r", problem="p", fix="f", kinds=("restart",), layer="workload")
    fix = Fix(kind="restart", where="host", summary="edit /etc/nccl.conf")
    found = problem("nccl.env", "nccl", "env", "high", "NCCL_P2P_DISABLE=1 in /etc/nccl.conf", "e", "x", fix)
    runs = [InvestigatorRun(area="nccl", status="done", duration_s=0.1)]
    for layer, code in (("node", 1), ("workload", 0), (None, 0)):
        checks = judge_checks(
            Selection((image,)), [found.model_copy(update={"layer": layer})], runs, fail_on="high", deadline_s=20
        )
        assert verdict_of(checks)[1] == code and checks[0].workload is (code == 0)


def test_a_users_nohup_process_in_a_login_session_is_not_left_over() -> None:
    """Before: a process reparented to init in an ssh session's scope was 'left over', a drain on an idle node."""
    from rigaudit.agents.facts.platform import Platform
    from rigaudit.agents.facts.processes import GpuProcess
    from rigaudit.agents.investigators.cuda.leftover import left_over

    host = Platform(layers=())
    session = "0::/user.slice/user-1000.slice/session-12.scope\n"
    step = "0::/system.slice/slurmstepd.scope/job_77/step_0/user/task_0\n"
    assert not left_over(GpuProcess(4242, 3, 6 << 30, ("python3",), False, cgroup=session), 1, host)
    assert left_over(GpuProcess(4242, 3, 6 << 30, ("python3",), False, cgroup=step), 1, host)
