"""The power investigator: CPU frequency scaling, idle states, GPU power limits."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rigaudit.agents.facts.cpulist import cpu_ranges, parse_cpulist
from rigaudit.agents.investigators.power import INVESTIGATOR
from rigaudit.tools.schema.finding import CommandAction, Finding, SysfsWriteAction
from tests.support.investigators import audit_snapshot
from tests.support.mutate import light_copy, ram_dir, remove_file, remove_tree, set_command, set_file, set_nvml

CPU = "/sys/devices/system/cpu"


@pytest.fixture
def seed(tmp_path: Path, seed_dir: Path) -> Iterator[Path]:
    """A copy-on-write copy of the seed, in RAM where possible (a full copy of its 3,700 files is slow)."""
    with ram_dir(tmp_path) as base:
        yield light_copy(seed_dir, base / "seed")


def audit(root: Path) -> dict[str, Finding]:
    return audit_snapshot(INVESTIGATOR, root, evidence_read=True)


def _all_cpus(root: Path, rel: str, value: str, cpus: range = range(128)) -> None:
    for cpu in cpus:
        set_file(root, f"{CPU}/cpu{cpu}/{rel}", value + "\n")


def _as_lxc(root: Path) -> None:
    set_command(root, ["systemd-detect-virt", "--container"], "lxc\n")


def _as_vm_without_cpu_knobs(root: Path) -> None:
    set_command(root, ["systemd-detect-virt", "--vm"], "kvm\n")
    for cpu in range(128):
        for sub in ("cpufreq", "cpuidle", "acpi_cppc"):
            remove_tree(root, f"{CPU}/cpu{cpu}/{sub}")
    remove_file(root, f"{CPU}/cpufreq/boost")


def test_cpulist_helpers() -> None:
    assert cpu_ranges([0, 1, 2, 3, 8, 10, 11]) == "cpu0-3,8,10-11"
    assert cpu_ranges([5]) == "cpu5"
    assert parse_cpulist("0-2,7\n") == [0, 1, 2, 7]
    assert parse_cpulist("garbage") is None


def test_seed_power(seed_dir: Path) -> None:
    found = audit(seed_dir)
    assert found["power.governor"].status == "ok"
    assert found["power.governor"].observed == "performance on cpu0-127"
    assert found["power.epp"].status == "not_applicable"
    assert found["power.boost"].status == "ok"
    assert found["power.gpu_power_limit"].status == "ok"
    assert "8/8 GPUs" in found["power.gpu_power_limit"].observed

    driver = found["power.scaling_driver"]
    assert (driver.status, driver.severity) == ("problem", "medium")
    assert driver.fix is not None and driver.fix.kind == "reboot" and driver.fix.where == "host"
    assert all(isinstance(a, CommandAction) for a in driver.fix.actions)
    argvs = [" ".join(a.argv) for a in driver.fix.actions if isinstance(a, CommandAction)]
    assert any("amd_pstate=active" in a and "/etc/default/grub" in a for a in argvs)  # GRUB: BOOT_IMAGE= in /proc/cmdline
    assert "proxmox-boot-tool refresh" in argvs
    assert "amd_pstate/status" in driver.explanation

    cstates = found["power.cstates"]
    # Low, not medium: no server is visible on the seed, so whether it serves at batch 1 (the premise of the medium)
    # is unread, and an unread premise does not raise the severity (docs/validation/archetypes-review.md, W7).
    assert (cstates.status, cstates.severity) == ("problem", "low")
    assert "no server visible: medium if it serves at batch 1" in cstates.explanation
    assert cstates.subjects == ("cpu0-127",)
    assert "C2 (400 us)" in cstates.observed
    assert cstates.fix is not None and (cstates.fix.kind, cstates.fix.risk, cstates.fix.where) == ("runtime", "low", "host")
    (action,) = cstates.fix.actions
    assert isinstance(action, SysfsWriteAction) and action.value == "1"
    assert len(action.paths) == 128 and all(p.endswith("/cpuidle/state2/disable") for p in action.paths)
    assert f"{CPU}/cpu127/cpuidle/state2/disable" in action.paths
    assert "0" in cstates.fix.revert and "processor.max_cstate=1" in cstates.fix.persist


def test_governor_fires_with_compact_ranges(seed: Path) -> None:
    _all_cpus(seed, "cpufreq/scaling_governor", "powersave", range(64, 96))
    _all_cpus(seed, "cpufreq/scaling_governor", "schedutil", range(3, 4))
    finding = audit(seed)["power.governor"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert finding.observed == "powersave on cpu64-95; schedutil on cpu3"
    assert finding.subjects == ("cpu3,64-95",)
    assert finding.fix is not None and finding.fix.kind == "runtime"
    (action,) = finding.fix.actions
    assert isinstance(action, SysfsWriteAction) and action.value == "performance" and len(action.paths) == 128


def test_scaling_driver_quiet_under_amd_pstate(seed: Path) -> None:
    set_file(seed, f"{CPU}/cpu0/cpufreq/scaling_driver", "amd-pstate-epp\n")
    _all_cpus(seed, "cpufreq/energy_performance_preference", "performance")
    found = audit(seed)
    assert found["power.scaling_driver"].status == "ok"
    assert found["power.epp"].status == "ok"


def test_scaling_driver_quiet_without_cppc(seed: Path) -> None:
    remove_tree(seed, f"{CPU}/cpu0/acpi_cppc")
    assert audit(seed)["power.scaling_driver"].status == "ok"


def test_scaling_driver_runtime_when_status_exists(seed: Path) -> None:
    set_file(seed, f"{CPU}/amd_pstate/status", "disable\n")
    finding = audit(seed)["power.scaling_driver"]
    assert finding.status == "problem" and finding.fix is not None
    assert finding.fix.kind == "runtime" and "amd_pstate=active" in finding.fix.persist
    assert finding.fix.actions == (SysfsWriteAction(paths=(f"{CPU}/amd_pstate/status",), value="active"),)
    assert finding.fix.revert == f"echo disable > {CPU}/amd_pstate/status"


def test_epp_fires_under_amd_pstate_epp(seed: Path) -> None:
    set_file(seed, f"{CPU}/cpu0/cpufreq/scaling_driver", "amd-pstate-epp\n")
    _all_cpus(seed, "cpufreq/energy_performance_preference", "balance_performance")
    finding = audit(seed)["power.epp"]
    assert (finding.status, finding.severity) == ("problem", "low")
    assert finding.fix is not None and finding.fix.kind == "runtime"
    (action,) = finding.fix.actions
    assert isinstance(action, SysfsWriteAction) and action.value == "performance" and len(action.paths) == 128
    _all_cpus(seed, "cpufreq/energy_performance_preference", "power", range(2))
    assert audit(seed)["power.epp"].severity == "medium"


def test_boost_off_fires(seed: Path) -> None:
    set_file(seed, f"{CPU}/cpufreq/boost", "0\n")
    finding = audit(seed)["power.boost"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert finding.fix is not None
    assert finding.fix.actions == (SysfsWriteAction(paths=(f"{CPU}/cpufreq/boost",), value="1"),)
    assert finding.fix.revert == f"echo 0 > {CPU}/cpufreq/boost"


def test_boost_absent_is_unknown(seed: Path) -> None:
    remove_file(seed, f"{CPU}/cpufreq/boost")
    assert audit(seed)["power.boost"].status == "unknown"


def test_cstates_quiet_when_deep_states_disabled(seed: Path) -> None:
    _all_cpus(seed, "cpuidle/state2/disable", "1")
    finding = audit(seed)["power.cstates"]
    assert finding.status == "ok"
    assert "deepest allowed: 1 us" in finding.observed and "C2 (400 us) on cpu0-127" in finding.observed


def test_cstates_partial_lists_only_enabled_cpus(seed: Path) -> None:
    _all_cpus(seed, "cpuidle/state2/disable", "1", range(64))
    finding = audit(seed)["power.cstates"]
    assert finding.status == "problem" and finding.subjects == ("cpu64-127",)
    assert finding.fix is not None
    (action,) = finding.fix.actions
    assert isinstance(action, SysfsWriteAction) and len(action.paths) == 64


def test_fixes_belong_to_the_containers_host_inside_lxc(seed: Path) -> None:
    _as_lxc(seed)
    found = audit(seed)
    for check in ("power.cstates", "power.scaling_driver"):
        fix = found[check].fix
        assert fix is not None and fix.where == "container_host"


def test_vm_guest_without_cpufreq_is_unknown_never_a_problem(seed: Path) -> None:
    _as_vm_without_cpu_knobs(seed)
    found = audit(seed)
    for check in ("power.governor", "power.scaling_driver", "power.epp", "power.boost"):
        assert found[check].status == "unknown", check
        assert "no cpufreq in this guest; check on the hypervisor" in found[check].observed
    assert found["power.cstates"].status == "unknown"
    assert "hypervisor" in found["power.cstates"].observed


def test_gpu_power_limit_below_default_fires(seed: Path) -> None:
    set_nvml(seed, "nvmlDeviceGetEnforcedPowerLimit", [3], 450000)
    set_nvml(seed, "nvmlDeviceGetPowerManagementLimit", [3], 450000)
    finding = audit(seed)["power.gpu_power_limit"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert finding.subjects == ("GPU3 (0000:44:00.0)",)
    assert "450 W of 600 W" in finding.observed
    assert finding.fix is not None and finding.fix.kind == "runtime"
    # rigaudit never changes GPU settings itself: only described commands.
    assert finding.fix.actions == (
        CommandAction(
            description=finding.fix.actions[0].description,  # type: ignore[union-attr]
            argv=("nvidia-smi", "-i", "3", "-pl", "600"),
        ),
    )
    assert "never" in finding.fix.summary


def test_gpu_power_limit_unknown_without_nvml(seed: Path) -> None:
    set_nvml(seed, "nvmlInit", [], error="LIBRARY_NOT_FOUND")
    finding = audit(seed)["power.gpu_power_limit"]
    assert finding.status == "unknown" and "LIBRARY_NOT_FOUND" in finding.observed
