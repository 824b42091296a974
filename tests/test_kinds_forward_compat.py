"""CUDA forward compatibility: the cuda-compat libcuda of a newer branch in a container over an older driver is
NVIDIA's supported way to run a newer CUDA on data-center GPUs, and unsupported on GeForce (CUDA init fails with
error 804), where the fix drops the compat path instead of installing libraries."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio

from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.finding import Fix
from tests.hostgen.cache import built, snapshot
from tests.hostgen.faults import driver_upgraded_without_reboot
from tests.hostgen.kinds import COMPAT_CUDA, KINDS
from tests.hostgen.spec import HostSpec
from tests.support.kinds import audited, by_check, serious
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
    assert serious(GEFORCE)["driver.library_mismatch"] == "high@container"
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
    # the machine that runs the container (its driver packages, its module): container_host, as driver.uvm says
    assert (bound.status, bound.severity, bound.fix.where if bound.fix else None) == ("problem", "high", "container_host")
    assert bound.fix is not None and "reboot" in bound.fix.summary and "container toolkit" in bound.observed
    baked = light_copy(snapshot(upgraded), tmp_path / "baked")
    path = SnapshotHost(baked).resolve("/proc/mounts")  # /proc/self/mounts
    mounts = (baked / "files" / path.lstrip("/")).read_text()
    set_file(baked, path, "".join(ln for ln in mounts.splitlines(True) if ".so.535.247.01 " not in ln))
    result = anyio.run(lambda: run_audit(SnapshotHost(baked)))
    own = next(f for f in result.findings if f.check == "driver.library_mismatch")
    assert own.fix is not None and own.fix.where == "container" and "in the container" in own.fix.summary


def _fix_text(fix: Fix) -> str:
    return " ".join([fix.summary, *(getattr(a, "description", "") for a in fix.actions)])


def test_forward_compat_on_geforce_is_one_verdict_at_one_layer() -> None:
    """Review W10. Before: runtime.cuda_driver_compat low @container_host 'Install a driver that supports CUDA 12.8
    (or a torch build for CUDA <= 12.2)' beside driver.library_mismatch high @container 'Drop the CUDA forward-
    compatibility path ... with a CUDA runtime no newer than that driver's', one cause at two layers and severities,
    and both over-asking: once the compat path is gone CUDA 12.8 runs on the 535 driver (minor-version
    compatibility)."""
    assert serious(GEFORCE) == {"driver.library_mismatch": "high@container", "runtime.cuda_driver_compat": "high@container"}
    found = by_check(GEFORCE)
    library, runtime = found["driver.library_mismatch"], found["runtime.cuda_driver_compat"]
    assert library.fix is not None and runtime.fix is not None
    assert runtime.fix.actions == library.fix.actions and runtime.fix.kind == library.fix.kind
    assert [(e.kind, e.check) for e in runtime.fix.edges] == [("moot_after", "driver.library_mismatch")]
    assert "driver.library_mismatch" in runtime.observed
    for fix in (library.fix, runtime.fix):
        text = _fix_text(fix)
        assert "LD_LIBRARY_PATH" in fix.summary and "ld.so.conf.d" in fix.summary, fix.summary
        assert "no newer than" not in text and "torch build" not in text and "host driver of" not in text, text
    assert "minor-version compatibility" in library.explanation and "PTX" in library.explanation
    steps = [s for s in audited(GEFORCE).plan.steps if "runtime.cuda_driver_compat" in (s.check, *s.also_checks)]
    assert [(s.check, s.also_checks) for s in steps] == [("driver.library_mismatch", ("runtime.cuda_driver_compat",))]


GEFORCE_CUDA128 = replace(
    GEFORCE,
    name="geforce-container-cuda128",
    processes=tuple(
        replace(p, compat=None, env=tuple((k, v) for k, v in p.env if not v.startswith(COMPAT_CUDA))) for p in GEFORCE.processes
    ),
)


def test_a_newer_12x_runtime_without_the_compat_path_is_minor_version_compatible() -> None:
    """Review W10. The same CUDA 12.8 image on the 535 driver (CUDA 12.2) without the compat path runs by CUDA
    minor-version compatibility (12.x on drivers >= 525.60.13): low, naming the PTX JIT caveat; before, the fix asked
    for a driver for CUDA 12.8 or another torch build, which the server does not need to start."""
    assert serious(GEFORCE_CUDA128) == {}
    found = by_check(GEFORCE_CUDA128)
    assert found["driver.library_mismatch"].status == "ok"
    runtime = found["runtime.cuda_driver_compat"]
    assert (runtime.status, runtime.severity) == ("problem", "low"), runtime.observed
    assert "minor-version compatibility" in runtime.explanation and "525.60.13" in runtime.explanation
    assert "PTX" in runtime.explanation and "JIT" in runtime.explanation
    assert runtime.fix is not None and not runtime.fix.summary.startswith("Install a driver"), runtime.fix.summary
    assert "PTX" in runtime.fix.summary


def _gpu_processes(spec: HostSpec) -> list[object]:
    tree = built(spec).tree
    return [tree.nvml_result("nvmlDeviceGetComputeRunningProcesses", i) for i in range(spec.gpus.count)]


def test_the_geforce_compat_server_failed_cuda_init_and_holds_no_gpu_memory() -> None:
    """Review R1. Before: four vLLM processes held 22 GB each on the RTX 4090s although cuInit fails there with the
    compat libcuda (CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE): the server's process stays (its maps name the compat
    libcuda), NVML lists no compute process. The supported cases keep theirs."""
    assert _gpu_processes(GEFORCE) == [[]] * 4
    assert all(rows for rows in _gpu_processes(DC))
    assert all(rows for rows in _gpu_processes(GEFORCE_CUDA128))
    assert "/usr/local/cuda-12.8/compat" in by_check(GEFORCE)["driver.library_mismatch"].observed
