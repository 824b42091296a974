"""CUDA forward compatibility: the cuda-compat libcuda of a newer branch in a container over an older driver is
NVIDIA's supported way to run a newer CUDA on data-center GPUs, and unsupported on GeForce (CUDA init fails with
error 804), where the fix drops the compat path instead of installing libraries."""

from __future__ import annotations

from pathlib import Path

import anyio

from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.tools.hosts.snapshot import SnapshotHost
from tests.hostgen.cache import snapshot
from tests.hostgen.faults import driver_upgraded_without_reboot
from tests.hostgen.kinds import KINDS
from tests.support.kinds import by_check, serious
from tests.support.mutate import light_copy, set_file

DC = KINDS["docker-h100-forward-compat"]
GEFORCE = KINDS["geforce-container-forward-compat"]


def test_forward_compat_on_data_center_gpus_is_deliberate() -> None:
    """Before: driver.library_mismatch high ('install the user-space libraries of version 535 in the container'),
    runtime.cuda_driver_compat low (CUDA 12.8 over a 12.2 driver)."""
    assert serious(DC) == {}
    found = by_check(DC)
    library = found["driver.library_mismatch"]
    assert library.status == "ok", library.observed
    assert "forward compatibility" in library.observed and "/usr/local/cuda-12.8/compat" in library.observed
    assert "docs.nvidia.com/deploy/cuda-compatibility" in library.explanation
    runtime = found["runtime.cuda_driver_compat"]
    assert runtime.status == "ok", runtime.observed
    assert "forward compatibility lifts it to 12.8" in runtime.observed


def test_forward_compat_on_geforce_drops_the_compat_path() -> None:
    """Before: high with 'install the user-space driver libraries of version 535 in the container' (NVIDIA-Linux
    .run --no-kernel-module), which leaves the compat libcuda first on the path and CUDA init failing."""
    assert serious(GEFORCE) == {"driver.library_mismatch": "high@container"}
    library = by_check(GEFORCE)["driver.library_mismatch"]
    assert library.fix is not None
    assert "Drop the CUDA forward-compatibility path" in library.fix.summary
    described = " ".join(getattr(a, "description", "") for a in library.fix.actions)
    assert "LD_LIBRARY_PATH" in described and "--no-kernel-module" not in described
    assert "804" in library.explanation


def test_libraries_the_toolkit_binds_from_the_host_are_the_hosts_to_fix(tmp_path: Path) -> None:
    """A driver upgraded on the host without a reboot, seen from a container whose libraries the NVIDIA container
    toolkit binds from the host (one mount each in /proc/mounts): the host's reboot fixes it, not libraries installed
    into the image. The same versions baked into the image (no such mounts) stay the container's to fix."""
    upgraded = driver_upgraded_without_reboot(DC, new="535.247.01")
    bound = by_check(upgraded)["driver.library_mismatch"]
    assert (bound.status, bound.severity, bound.fix.where if bound.fix else None) == ("problem", "high", "host")
    assert bound.fix is not None and "reboot" in bound.fix.summary and "container toolkit" in bound.observed
    baked = light_copy(snapshot(upgraded), tmp_path / "baked")
    path = SnapshotHost(baked).resolve("/proc/mounts")  # /proc/self/mounts
    mounts = (baked / "files" / path.lstrip("/")).read_text()
    set_file(baked, path, "".join(ln for ln in mounts.splitlines(True) if ".so.535.247.01 " not in ln))
    result = anyio.run(lambda: run_audit(SnapshotHost(baked)))
    own = next(f for f in result.findings if f.check == "driver.library_mismatch")
    assert own.fix is not None and own.fix.where == "container" and "in the container" in own.fix.summary
