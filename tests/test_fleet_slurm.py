"""The Slurm path on a real one-node cluster (slurmctld + slurmd from Debian's packages): one srun
step, ``--ntasks-per-node=1``, each task streaming its node's snapshot back over srun's stdout."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from rigaudit.orchestrator.commands._fleet import run_fleet_from_args
from rigaudit.orchestrator.commands.audit import COMMAND as AUDIT
from rigaudit.orchestrator.fleet.result import FleetResult
from rigaudit.orchestrator.fleet.runner import FleetOptions, run_slurm_fleet
from rigaudit.tools.remote.slurm import SlurmJob
from tests.support.fleet import RIGAUDIT, OneNodeSlurm, fleet_snapshots

SEED = Path(__file__).parent / "fixtures" / "seed-lxc-8x-rtxpro6000"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OneNodeSlurm]:
    with OneNodeSlurm.start(tmp_path_factory.mktemp("slurm")) as running:
        yield running


def test_slurm_audit_through_the_cli(
    cluster: OneNodeSlurm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    served = fleet_snapshots(SEED).degraded
    monkeypatch.setenv("SLURM_CONF", cluster.env["SLURM_CONF"])
    monkeypatch.setenv("RIGAUDIT_SNAPSHOT_SOURCE", str(served))  # srun passes the environment to the task
    parser = argparse.ArgumentParser()
    AUDIT.add_arguments(parser)
    out = tmp_path / "out"
    args = parser.parse_args(
        ["--slurm", "--partition", "rigaudit", "--nodes", "1", "--node-rigaudit", str(RIGAUDIT), "--out", str(out), "--no-live"]
    )
    assert run_fleet_from_args(args) == 0
    data = json.loads((out / "fleet.json").read_text())
    assert data["kind"] == "slurm" and data["failures"] == []
    [host] = data["hosts"]
    assert (host["target"], host["mode"], host["source"]) == (cluster.node, "slurm", f"slurm:{cluster.node}")
    assert host["facts"]["GPU3 PCIe link"] == "16.0 GT/s x8"  # the served snapshot came through srun intact
    assert data["matrix"]["pcie.link"][cluster.node] == "problem"
    assert (out / "hosts" / cluster.node / "system-improve.md").is_file()
    assert "1 of 1 host(s) audited" in capsys.readouterr().out


def test_slurm_node_that_cannot_collect_is_listed(cluster: OneNodeSlurm, tmp_path: Path) -> None:
    job = SlurmJob(nodelist=cluster.node)

    async def main() -> FleetResult:
        options = FleetOptions(node_rigaudit="/nonexistent/rigaudit", host_timeout_s=60, workers=0)
        return await run_slurm_fleet(job, options, env=cluster.env)

    result = anyio.run(main)
    assert result.audits == ()
    [failure] = result.failures
    assert failure.target == cluster.node and failure.stage == "collect"
    assert "exit status 127" in failure.error and "/nonexistent/rigaudit" in failure.error
