"""power.gpu_pstate: a busy GPU stuck in a low performance state."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.agents.investigators.power import INVESTIGATOR
from rigaudit.tools.schema.finding import Finding
from tests.support.investigators import audit_snapshot
from tests.support.mutate import light_copy, remove_nvml, set_nvml


@pytest.fixture
def snap(seed_dir: Path, tmp_path: Path) -> Path:
    return light_copy(seed_dir, tmp_path / "snap")


def pstate(root: Path) -> Finding:
    return audit_snapshot(INVESTIGATOR, root)["power.gpu_pstate"]


def test_idle_gpus_in_p8_are_ok(seed_dir: Path) -> None:
    finding = pstate(seed_dir)
    assert finding.status == "ok"
    assert finding.observed == "idle (0% utilization at most) in P8: normal at idle on 8/8 GPUs"


def test_busy_gpu_in_p8_is_medium(snap: Path) -> None:
    set_nvml(snap, "nvmlDeviceGetUtilizationRates", [4], {"gpu": 97, "memory": 60})
    finding = pstate(snap)
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert finding.observed == "GPU4 (0000:83:00.0): P8 at 97% utilization"
    assert finding.fix is not None and finding.fix.kind == "runtime" and finding.fix.where == "host"


def test_busy_gpus_in_p0_are_ok(snap: Path) -> None:
    for gpu in range(8):
        set_nvml(snap, "nvmlDeviceGetUtilizationRates", [gpu], {"gpu": 99, "memory": 70})
        set_nvml(snap, "nvmlDeviceGetPerformanceState", [gpu], 0)
    finding = pstate(snap)
    assert finding.status == "ok" and finding.observed.startswith("8 busy GPUs in P0–P2")


def test_unrecorded_pstate_is_unknown(snap: Path) -> None:
    remove_nvml(snap, "nvmlDeviceGetPerformanceState")
    finding = pstate(snap)
    assert finding.status == "unknown" and "not recorded in this snapshot" in finding.observed
