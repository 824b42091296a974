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
from tests.hostgen.workload import torch_newer_than_driver

DEPLOY = Path(__file__).parent.parent / "deploy"
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


@pytest.mark.parametrize("script", ["prolog.sh", "epilog.sh"])
def test_the_prolog_and_epilog_select_node_checks_alone(script: str) -> None:
    """The prolog and epilog judge the node's areas; the health mode (every check) lists the workload's without
    draining: the three modes drain on the same faults."""
    text = (DEPLOY / "slurm" / script).read_text()
    only = re.search(r"--only (\S+)", text)
    assert only is not None
    chosen = select(catalog(), only=",".join(a for a in only.group(1).split(",") if a not in ("promised", "expect")))
    assert [c.id for c in chosen.checks if c.layer == "workload"] == []
