"""driver: user-space libraries vs the kernel module, DKMS builds, Secure Boot, fabric manager version."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.agents.investigators.driver import INVESTIGATOR
from rigaudit.tools.schema.finding import CommandAction, Finding
from tests.support.investigators import audit_snapshot
from tests.support.mutate import (
    add_process,
    light_copy,
    remove_file,
    remove_unreadable,
    set_command,
    set_file,
    set_link,
    set_nvml,
)

SB_VAR = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
RUNNING = "6.8.12-11-pve"
NVIDIA_DEP = "updates/dkms/nvidia.ko:\nupdates/dkms/nvidia-uvm.ko: updates/dkms/nvidia.ko\n"
OTHER_DEP = "kernel/drivers/net/ethernet/intel/ice/ice.ko:\n"


@pytest.fixture
def snap(seed_dir: Path, tmp_path: Path) -> Path:
    return light_copy(seed_dir, tmp_path / "snap")


def audit(root: Path) -> dict[str, Finding]:
    return audit_snapshot(INVESTIGATOR, root, evidence_read=True)


def drop_module(root: Path, name: str) -> None:
    lines = (root / "files/proc/modules").read_text().splitlines()
    set_file(root, "/proc/modules", "\n".join(x for x in lines if x.split()[0] != name) + "\n")


def test_seed_new_driver_checks(seed_dir: Path) -> None:
    found = audit(seed_dir)
    assert found["driver.library_mismatch"].status == "ok"
    assert found["driver.library_mismatch"].observed == "kernel module 580.95.05; user-space (NVML) 580.95.05"
    assert found["driver.dkms"].status == "ok"
    assert found["driver.dkms"].observed == f"nvidia.ko in modules.dep of the running kernel {RUNNING}"
    secure = found["driver.secure_boot"]
    assert secure.status == "ok" and "Secure Boot state unreadable (EACCES)" in secure.observed
    assert found["driver.fabricmanager_version"].status == "not_applicable"


def test_container_libraries_of_another_version_fire(snap: Path) -> None:
    set_link(snap, "/proc/self/ns/mnt", "mnt:[4026531841]")
    add_process(
        snap,
        5000,
        ["/usr/bin/python3", "-m", "sglang.launch_server"],
        cgroup="0::/lxc/101/ns/init.scope\n",
        mnt_ns="mnt:[4026532999]",
    )
    set_link(snap, "/proc/5000/root/usr/lib/x86_64-linux-gnu/libcuda.so.1", "libcuda.so.575.57.08")
    finding = audit(snap)["driver.library_mismatch"]
    assert (finding.status, finding.severity) == ("problem", "high")
    assert "pid 5000 (sglang in lxc 101): /usr/lib/x86_64-linux-gnu/libcuda.so.1 575.57.08" in finding.observed
    assert finding.fix is not None and (finding.fix.kind, finding.fix.where) == ("restart", "container")
    assert "link:/proc/5000/root/usr/lib/x86_64-linux-gnu/libcuda.so.1" in finding.evidence


def test_host_library_link_matching_is_ok(snap: Path) -> None:
    set_link(snap, "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "libnvidia-ml.so.580.95.05")
    finding = audit(snap)["driver.library_mismatch"]
    assert finding.status == "ok"
    assert "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 580.95.05" in finding.observed


def test_newer_kernel_without_the_module_is_medium(snap: Path) -> None:
    set_file(snap, "/lib/modules/6.8.12-15-pve/modules.dep", OTHER_DEP)
    set_file(snap, "/boot/vmlinuz-6.8.12-15-pve", b"\x00")
    set_file(snap, "/lib/modules/6.8.12-4-pve/modules.dep", OTHER_DEP)
    set_file(snap, "/boot/vmlinuz-6.8.12-4-pve", b"\x00")
    finding = audit(snap)["driver.dkms"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert finding.subjects == ("6.8.12-15-pve",)
    assert finding.fix is not None and finding.fix.kind == "runtime"
    assert (
        CommandAction(
            description="install the kernel headers of 6.8.12-15-pve and build the NVIDIA module for it",
            argv=("dkms", "autoinstall", "-k", "6.8.12-15-pve"),
        )
        in finding.fix.actions
    )


def test_leftover_module_dir_without_a_kernel_image_is_ignored(snap: Path) -> None:
    set_file(snap, "/lib/modules/6.8.12-15-pve/modules.dep", OTHER_DEP)
    assert audit(snap)["driver.dkms"].status == "ok"


def test_running_kernel_without_the_module_is_high(snap: Path) -> None:
    set_file(snap, f"/lib/modules/{RUNNING}/modules.dep", OTHER_DEP)
    for name in ("nvidia_uvm", "nvidia_drm", "nvidia_modeset", "nvidia"):
        drop_module(snap, name)
    finding = audit(snap)["driver.dkms"]
    assert (finding.status, finding.severity) == ("problem", "high")
    assert "the nvidia module is not loaded" in finding.observed


def test_secure_boot_rejecting_the_module_is_high(snap: Path) -> None:
    remove_unreadable(snap, SB_VAR)
    set_file(snap, SB_VAR, b"\x06\x00\x00\x00\x01")
    for name in ("nvidia_uvm", "nvidia_drm", "nvidia_modeset", "nvidia"):
        drop_module(snap, name)
    set_command(
        snap,
        ["dmesg"],
        "[   12.66] Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7\n",
        any_args=True,
    )
    finding = audit(snap)["driver.secure_boot"]
    assert (finding.status, finding.severity) == ("problem", "high")
    assert "Secure Boot on" in finding.observed and "Lockdown" in finding.observed
    assert finding.fix is not None and finding.fix.kind == "reboot"
    assert finding.fix.actions[0] == CommandAction(
        description="enroll the DKMS signing key (Ubuntu/Debian: /var/lib/dkms/mok.pub; set a one-time password)",
        argv=("mokutil", "--import", "/var/lib/dkms/mok.pub"),
    )


def test_secure_boot_off_is_not_the_cause(snap: Path) -> None:
    remove_unreadable(snap, SB_VAR)
    set_file(snap, SB_VAR, b"\x06\x00\x00\x00\x00")
    drop_module(snap, "nvidia")
    finding = audit(snap)["driver.secure_boot"]
    assert finding.status == "ok" and "not the cause" in finding.observed


def nvswitch_host(root: Path, packages: str) -> None:
    set_nvml(root, "nvmlDeviceGetGpuFabricInfo", [0], {"state": 3, "status": 0})
    set_command(root, ["systemctl", "is-active", "nvidia-fabricmanager"], "active\n")
    set_command(root, ["dpkg-query", "-W", "nvidia-fabricmanager*"], packages)


def test_fabric_manager_of_another_version_is_high(snap: Path) -> None:
    nvswitch_host(snap, "nvidia-fabricmanager-575\t575.57.08-1\n")
    found = audit(snap)
    assert found["driver.fabricmanager"].status == "ok"
    finding = found["driver.fabricmanager_version"]
    assert (finding.status, finding.severity) == ("problem", "high")
    assert finding.observed == "driver 580.95.05; nvidia-fabricmanager-575 575.57.08"
    assert finding.fix is not None and finding.fix.kind == "restart"


def test_fabric_manager_of_the_driver_version_is_ok(snap: Path) -> None:
    nvswitch_host(snap, "nvidia-fabricmanager-580\t580.95.05-1\n")
    set_file(snap, "/var/log/fabricmanager.log", "[Nov 27 2026 09:00:00] [INFO] Fabric Manager version 580.95.05 is running\n")
    finding = audit(snap)["driver.fabricmanager_version"]
    assert finding.status == "ok"
    assert "running (per /var/log/fabricmanager.log) 580.95.05" in finding.observed


def test_module_tree_missing_inside_a_container_is_unknown(snap: Path) -> None:
    set_command(snap, ["systemd-detect-virt", "--container"], "lxc\n")
    remove_file(snap, f"/lib/modules/{RUNNING}/modules.dep")
    finding = audit(snap)["driver.dkms"]
    assert finding.status == "unknown" and "belong to the host" in finding.observed
