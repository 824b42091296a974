"""The driver investigator: NVIDIA driver version, modules and services."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rigaudit.agents.facts.nvidia_driver import kernel_version
from rigaudit.agents.investigators.driver import INVESTIGATOR
from rigaudit.tools.schema.finding import CommandAction, Finding, ModuleLoadAction, ServiceStartAction
from tests.support.investigators import audit_snapshot
from tests.support.mutate import add_dir, light_copy, ram_dir, set_command, set_file, set_nvml

PROC_VERSION = "/proc/driver/nvidia/version"
PROPRIETARY = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  {v}  Release Build  (dvs-builder@U22)  Tue Sep 30 22:03:10 UTC 2025\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14+deb12u1)\n"
)
OPEN = PROPRIETARY.replace("UNIX x86_64 Kernel Module", "UNIX Open Kernel Module for x86_64")


@pytest.fixture
def seed(tmp_path: Path, seed_dir: Path) -> Iterator[Path]:
    with ram_dir(tmp_path) as base:
        yield light_copy(seed_dir, base / "seed")


def audit(root: Path) -> dict[str, Finding]:
    return audit_snapshot(INVESTIGATOR, root, evidence_read=True)


def _modules(root: Path, *, add: str = "", drop: str = "") -> None:
    text = (root / "files/proc/modules").read_text()
    lines = [line for line in text.splitlines() if not (drop and line.split()[0] == drop)]
    if add:
        lines.append(f"{add} 16384 0 - Live 0x0000000000000000")
    set_file(root, "/proc/modules", "\n".join(lines) + "\n")


def _driver(root: Path, version: str, *, open_module: bool) -> None:
    set_file(root, PROC_VERSION, (OPEN if open_module else PROPRIETARY).format(v=version))
    set_file(root, "/sys/module/nvidia/version", version + "\n")
    set_nvml(root, "nvmlSystemGetDriverVersion", [], version)


def test_kernel_version_parses_both_flavors() -> None:
    assert kernel_version(OPEN.format(v="580.95.05")) == ("580.95.05", True)
    assert kernel_version(PROPRIETARY.format(v="550.54.15")) == ("550.54.15", False)
    assert kernel_version(None) == (None, None)


def test_seed_driver(seed_dir: Path) -> None:
    found = audit(seed_dir)
    assert found["driver.version"].status == "ok"
    assert found["driver.version"].observed == "580.95.05 (open kernel module); NVML 580.95.05 on Blackwell GPUs"
    assert found["driver.persistence"].status == "ok"
    assert found["driver.persistence"].observed == "enabled on 8/8 GPUs; nvidia-persistenced active"
    peermem = found["driver.peermem"]
    assert peermem.status == "not_applicable"
    assert "no RDMA NIC" in peermem.observed and "GPU-to-GPU P2P" in peermem.explanation
    assert found["driver.nouveau"].status == "ok"
    assert found["driver.uvm"].status == "ok"
    assert found["driver.fabricmanager"].status == "not_applicable"
    assert not any(f.status == "problem" for f in found.values())


def test_proprietary_module_on_blackwell_fires(seed: Path) -> None:
    _driver(seed, "580.95.05", open_module=False)
    finding = audit(seed)["driver.version"]
    assert (finding.status, finding.severity) == ("problem", "high")
    assert "open kernel module" in finding.expected
    assert finding.fix is not None and finding.fix.kind == "reboot"
    assert len(finding.subjects) == 8


def test_branch_too_old_for_blackwell_fires(seed: Path) -> None:
    _driver(seed, "560.35.03", open_module=True)
    finding = audit(seed)["driver.version"]
    assert (finding.status, finding.severity) == ("problem", "high")
    assert finding.expected.startswith("branch >= 570")


def test_driver_library_mismatch_fires(seed: Path) -> None:
    set_nvml(seed, "nvmlInit", [], error="LIB_RM_VERSION_MISMATCH")
    found = audit(seed)
    assert found["driver.version"].status == "unknown"
    finding = found["driver.library_mismatch"]
    assert (finding.status, finding.severity) == ("problem", "high")
    assert finding.fix is not None and (finding.fix.kind, finding.fix.where) == ("reboot", "host")


def test_driver_library_mismatch_inside_a_container_is_fixed_in_the_container(seed: Path) -> None:
    set_command(seed, ["systemd-detect-virt", "--container"], "lxc\n")
    set_nvml(seed, "nvmlSystemGetDriverVersion", [], "575.57.08")
    finding = audit(seed)["driver.library_mismatch"]
    assert finding.status == "problem"
    assert "kernel module 580.95.05; user-space (NVML) 575.57.08" in finding.observed
    assert finding.fix is not None and (finding.fix.kind, finding.fix.where) == ("restart", "container")


def test_persistence_off_fires_with_service_start(seed: Path) -> None:
    set_nvml(seed, "nvmlDeviceGetPersistenceMode", [2], 0)
    set_command(seed, ["systemctl", "is-active", "nvidia-persistenced"], "inactive\n", exit_code=3)
    finding = audit(seed)["driver.persistence"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert finding.subjects == ("GPU2 (0000:43:00.0)",)
    assert finding.fix is not None and finding.fix.kind == "runtime"
    assert finding.fix.actions == (ServiceStartAction(unit="nvidia-persistenced"),)
    assert "-pm" not in finding.fix.model_dump_json()


def _ib(root: Path, state: str = "4: ACTIVE") -> None:
    set_file(root, "/sys/class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n")
    set_file(root, "/sys/class/infiniband/mlx5_0/ports/1/state", state + "\n")


def test_peermem_missing_with_ofed_and_the_proprietary_module_fires(seed: Path) -> None:
    _ib(seed)
    _driver(seed, "580.95.05", open_module=False)
    _modules(seed, add="mlx_compat")
    finding = audit(seed)["driver.peermem"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert finding.fix is not None and finding.fix.kind == "runtime"
    assert finding.fix.actions == (ModuleLoadAction(module="nvidia_peermem"),)
    assert "/etc/modules-load.d/" in finding.fix.persist


def test_inbox_rdma_stack_needs_the_open_module_not_peermem(seed: Path) -> None:
    _ib(seed)
    _driver(seed, "580.95.05", open_module=False)
    finding = audit(seed)["driver.peermem"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert finding.fix is not None and finding.fix.kind == "reboot" and "open NVIDIA kernel module" in finding.fix.summary


def test_dma_buf_serves_gpudirect_without_peermem(seed: Path) -> None:
    _ib(seed)  # the seed runs the open kernel module on Linux 6.8
    finding = audit(seed)["driver.peermem"]
    assert finding.status == "ok" and "DMA-BUF" in finding.observed


def test_rdma_ports_all_down_need_no_gpudirect(seed: Path) -> None:
    _ib(seed, "1: DOWN")
    _driver(seed, "580.95.05", open_module=False)
    assert audit(seed)["driver.peermem"].status == "ok"


def test_peermem_loaded_with_an_rdma_nic_is_ok(seed: Path) -> None:
    add_dir(seed, "/sys/class/infiniband/mlx5_0")
    _modules(seed, add="nvidia_peermem")
    assert audit(seed)["driver.peermem"].status == "ok"


def test_nouveau_loaded_fires(seed: Path) -> None:
    _modules(seed, add="nouveau")
    finding = audit(seed)["driver.nouveau"]
    assert (finding.status, finding.severity) == ("problem", "high")
    assert finding.fix is not None and finding.fix.kind == "reboot"
    argvs = [a.argv for a in finding.fix.actions if isinstance(a, CommandAction)]
    assert ("update-initramfs", "-u", "-k", "all") in argvs
    assert any("blacklist nouveau" in " ".join(argv) for argv in argvs)


def test_uvm_module_missing_fires(seed: Path) -> None:
    _modules(seed, drop="nvidia_uvm")
    finding = audit(seed)["driver.uvm"]
    assert (finding.status, finding.severity) == ("problem", "high")
    assert finding.fix is not None and finding.fix.kind == "runtime"
    assert ModuleLoadAction(module="nvidia_uvm") in finding.fix.actions


def test_uvm_device_node_missing_on_a_container_host_fires(seed: Path) -> None:
    set_file(seed, "/dev/nvidiactl", "")
    finding = audit(seed)["driver.uvm"]
    assert (finding.status, finding.severity) == ("problem", "high")  # the seed feeds LXC container 101
    assert "/dev/nvidia-uvm absent" in finding.observed
    set_file(seed, "/dev/nvidia-uvm", "")
    assert audit(seed)["driver.uvm"].status == "ok"


def _nvswitch(root: Path) -> None:
    set_file(root, "/sys/bus/pci/devices/0000:e1:00.0/vendor", "0x10de\n")
    set_file(root, "/sys/bus/pci/devices/0000:e1:00.0/class", "0x068000\n")


def test_fabricmanager_down_on_an_nvswitch_system_fires(seed: Path) -> None:
    _nvswitch(seed)
    finding = audit(seed)["driver.fabricmanager"]
    assert (finding.status, finding.severity) == ("problem", "critical")
    assert finding.subjects == ("0000:e1:00.0",)
    assert finding.fix is not None and finding.fix.kind == "runtime"
    assert finding.fix.actions == (ServiceStartAction(unit="nvidia-fabricmanager"),)


def test_fabricmanager_active_on_an_nvswitch_system_is_ok(seed: Path) -> None:
    _nvswitch(seed)
    set_command(seed, ["systemctl", "is-active", "nvidia-fabricmanager"], "active\n")
    assert audit(seed)["driver.fabricmanager"].status == "ok"


def test_fabric_state_from_nvml_reveals_an_nvswitch(seed: Path) -> None:
    set_nvml(seed, "nvmlDeviceGetGpuFabricInfo", [0], {"state": 1, "status": 0})
    assert audit(seed)["driver.fabricmanager"].status == "problem"
