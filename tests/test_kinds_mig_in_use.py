"""MIG partitions that NVML shows processes on are deliberate, even where the instances cannot be listed (a
container without the driver's capabilities tree, NVML enumerating no MIG device handle)."""

from __future__ import annotations

from pathlib import Path

from rigaudit.agents.investigators.cuda import INVESTIGATOR
from tests.hostgen import ARCHETYPES
from tests.hostgen.cache import snapshot
from tests.support.investigators import audit_snapshot
from tests.support.mutate import light_copy, remove_tree, set_nvml

DGX = ARCHETYPES["dgx-a100-mig"]


def test_processes_on_mig_instances_are_not_no_instance(tmp_path: Path) -> None:
    """Before: high 'no GPU instance created on GPU0-3: create instances or turn MIG off' while eight servers ran."""
    root = light_copy(snapshot(DGX), tmp_path / "copy")
    remove_tree(root, "/proc/driver/nvidia/capabilities")
    for gpu in range(4):
        for j in range(7):
            set_nvml(root, "nvmlDeviceGetMigDeviceHandleByIndex", (gpu, j), error="NOT_FOUND")
    mig = audit_snapshot(INVESTIGATOR, root, problem_has_fix=True)["cuda.mig"]
    assert mig.status == "ok", (mig.observed, mig.explanation)
    assert "mig-user-guide" in mig.explanation


def test_mig_on_with_no_instance_and_no_process_is_still_the_high(tmp_path: Path) -> None:
    root = light_copy(snapshot(DGX), tmp_path / "copy")
    remove_tree(root, "/proc/driver/nvidia/capabilities")
    for gpu in range(4):
        for j in range(7):
            set_nvml(root, "nvmlDeviceGetMigDeviceHandleByIndex", (gpu, j), error="NOT_FOUND")
        set_nvml(root, "nvmlDeviceGetComputeRunningProcesses", (gpu,), [])
    mig = audit_snapshot(INVESTIGATOR, root, problem_has_fix=True)["cuda.mig"]
    assert (mig.status, mig.severity) == ("problem", "high"), mig.observed
