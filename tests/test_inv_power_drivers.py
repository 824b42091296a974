"""power.scaling_driver looks at the frequency drivers the running kernel has before it advises a boot option,
and changes the boot line the way this distribution does."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.agents.investigators.power import INVESTIGATOR
from rigaudit.tools.schema.finding import CommandAction, Finding
from tests.support.investigators import audit_snapshot
from tests.support.mutate import light_copy, remove_tree, set_file
from tests.support.platforms import as_docker

UBUNTU = 'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\n'
RHEL = 'PRETTY_NAME="Rocky Linux 9.4 (Blue Onyx)"\nID="rocky"\nID_LIKE="rhel centos fedora"\n'


@pytest.fixture
def seed(seed_dir: Path, tmp_path: Path) -> Path:
    return light_copy(seed_dir, tmp_path / "seed")


def _distro(root: Path, os_release: str, release: str, cmdline: str) -> None:
    remove_tree(root, "/etc/pve")
    set_file(root, "/etc/os-release", os_release)
    set_file(root, "/proc/sys/kernel/osrelease", release + "\n")
    set_file(root, "/proc/cmdline", cmdline + "\n")


def driver(root: Path) -> Finding:
    return audit_snapshot(INVESTIGATOR, root, evidence_read=True, problem_has_fix=True)["power.scaling_driver"]


def _argv(finding: Finding) -> list[tuple[str, ...]]:
    assert finding.fix is not None
    return [a.argv for a in finding.fix.actions if isinstance(a, CommandAction) and a.argv]


def test_seed_keeps_its_medium_boot_option_on_proxmox(seed_dir: Path) -> None:
    found = driver(seed_dir)
    assert (found.status, found.severity) == ("problem", "medium")
    assert ("proxmox-boot-tool", "refresh") in _argv(found)


def test_ubuntu_22_04_ga_kernel_is_told_to_change_kernel_first(seed: Path) -> None:
    _distro(seed, UBUNTU, "5.15.0-105-generic", "BOOT_IMAGE=/boot/vmlinuz-5.15.0-105-generic root=/dev/sda2 ro")
    found = driver(seed)
    assert (found.status, found.severity) == ("problem", "low")
    assert "amd_pstate absent" in found.observed and "arrived in Linux 5.17" in found.explanation
    text = " ".join(a.description for a in found.fix.actions) if found.fix else ""
    assert "linux-generic-hwe-22.04" in text
    assert ("update-grub",) in _argv(found) and ("proxmox-boot-tool", "refresh") not in _argv(found)


def test_kernel_with_passive_amd_pstate_only(seed: Path) -> None:
    _distro(seed, UBUNTU, "6.1.0-18-amd64", "BOOT_IMAGE=/boot/vmlinuz-6.1.0-18-amd64 root=/dev/sda2 ro")
    found = driver(seed)
    assert (found.status, found.severity) == ("problem", "low")
    assert "amd_pstate=passive" in found.expected


def test_enterprise_kernel_without_its_config_is_asked_about(seed: Path) -> None:
    release = "5.14.0-427.13.1.el9_4.x86_64"
    _distro(seed, RHEL, release, f"BOOT_IMAGE=(hd0,gpt2)/vmlinuz-{release} root=/dev/mapper/rl-root ro")
    found = driver(seed)
    assert (found.status, found.severity) == ("problem", "low") and "amd_pstate unknown" in found.observed
    assert f"/boot/config-{release}" in found.explanation
    set_file(seed, f"/boot/config-{release}", "CONFIG_X86_AMD_PSTATE=y\nCONFIG_X86_AMD_PSTATE_DEFAULT_MODE=3\n")
    found = driver(seed)
    assert found.severity == "medium"
    assert ("grubby", "--update-kernel=ALL", "--args=amd_pstate=active") in _argv(found)


def test_shallow_enabled_states_cost_little(seed: Path) -> None:
    for cpu in range(128):
        set_file(seed, f"/sys/devices/system/cpu/cpu{cpu}/cpuidle/state2/latency", "20\n")
    found = audit_snapshot(INVESTIGATOR, seed)["power.cstates"]
    assert (found.status, found.severity) == ("problem", "low")
    assert "costs 20 us per wake-up" in found.explanation


def test_inside_a_container_cpu_fixes_go_to_its_host(seed: Path) -> None:
    as_docker(seed)
    found = audit_snapshot(INVESTIGATOR, seed)
    for check in ("power.cstates", "power.scaling_driver"):
        fix = found[check].fix
        assert fix is not None and fix.where == "container_host", check
