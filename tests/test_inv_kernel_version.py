"""kernel.version on the seed and on mutated copies of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.agents.investigators.kernel import INVESTIGATOR
from rigaudit.agents.investigators.kernel.version import parse_kernel_version, parse_nvrm
from rigaudit.tools.schema.finding import Finding
from tests.support.investigators import audit_snapshot
from tests.support.mutate import light_copy, remove_file, remove_tree, set_command, set_file

MODULES = "nvidia_uvm 1925120 8 - Live 0x0\nvfio_pci 16384 0 - Live 0x0\nzfs 6582272 6 - Live 0x0\n"


@pytest.fixture
def seed(seed_dir: Path, tmp_path: Path) -> Path:
    return light_copy(seed_dir, tmp_path / "seed")


def audit(root: Path) -> Finding:
    return audit_snapshot(INVESTIGATOR, root, evidence_read=True, problem_has_fix=True)["kernel.version"]


def _unload_nvidia(root: Path) -> None:
    remove_file(root, "/proc/driver/nvidia/version")
    remove_file(root, "/sys/module/nvidia/version")
    set_file(root, "/proc/modules", MODULES)


def _kernel(root: Path, release: str) -> None:
    set_file(root, "/proc/sys/kernel/osrelease", release + "\n")
    remove_tree(root, "/lib/modules/6.8.12-11-pve")
    set_file(root, f"/lib/modules/{release}/modules.dep", "updates/dkms/nvidia.ko:\n")


def test_seed(seed_dir: Path) -> None:
    found = audit(seed_dir)
    assert found.status == "ok"
    assert found.observed.startswith("kernel 6.8.12-11-pve; NVIDIA 580.95.05 open kernel module loaded")
    assert "/lib/modules/6.8.12-11-pve present" in found.observed


def test_module_built_for_another_kernel(seed: Path) -> None:
    _unload_nvidia(seed)
    set_file(seed, "/lib/modules/6.8.12-11-pve/modules.dep", "kernel/drivers/vfio/pci/vfio-pci.ko:\n")
    found = audit(seed)
    assert (found.status, found.severity) == ("problem", "high")
    assert "no nvidia.ko in /lib/modules/6.8.12-11-pve/modules.dep" in found.observed
    assert found.fix is not None and found.fix.kind == "reboot" and "dkms" in found.fix.actions[0].description  # type: ignore[union-attr]


def test_module_tree_of_running_kernel_removed(seed: Path) -> None:
    remove_tree(seed, "/lib/modules/6.8.12-11-pve")
    found = audit(seed)
    assert (found.status, found.severity) == ("problem", "medium")
    assert "missing although the nvidia module is loaded" in found.observed
    _unload_nvidia(seed)
    assert audit(seed).severity == "high"


def test_amd_pstate_of_the_kernel_is_noted_and_left_to_power_scaling_driver(seed: Path) -> None:
    _kernel(seed, "6.1.0-18-amd64")
    found = audit(seed)
    assert found.status == "ok"
    assert "amd_pstate has no active (EPP) mode (6.3+): see power.scaling_driver" in found.observed
    _kernel(seed, "5.15.0-91-generic")
    assert "this kernel has no amd_pstate driver (kernel 5.15.0-91-generic)" in audit(seed).observed


def test_a_kernel_booted_from_outside_the_image_has_no_module_tree(seed: Path) -> None:
    remove_tree(seed, "/lib/modules/6.8.12-11-pve")
    set_file(seed, "/proc/cmdline", "console=ttyS0 reboot=k panic=1 root=/dev/vda\n")
    found = audit(seed)
    assert found.status == "ok" and "the kernel is booted from outside it" in found.observed


def test_old_kernel_on_intel_is_fine(seed: Path) -> None:
    _kernel(seed, "5.15.0-91-generic")
    set_file(seed, "/proc/cpuinfo", (seed / "files/proc/cpuinfo").read_text().replace("AuthenticAMD", "GenuineIntel"))
    assert audit(seed).status == "ok"


def test_release_from_uname_when_osrelease_is_missing(seed: Path) -> None:
    remove_file(seed, "/proc/sys/kernel/osrelease")
    found = audit(seed)
    assert found.status == "ok" and "cmd:uname -r" in found.evidence
    set_command(seed, ["uname", "-r"], error="denied")
    assert audit(seed).status == "unknown"


def test_parsers() -> None:
    assert parse_kernel_version("6.8.12-11-pve") == (6, 8, 12)
    assert parse_kernel_version("6.11-rc1") == (6, 11, 0)
    assert parse_kernel_version("garbage") is None
    assert parse_nvrm("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build") == ("580.95.05", True)
    assert parse_nvrm("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12") == ("535.183.01", False)
