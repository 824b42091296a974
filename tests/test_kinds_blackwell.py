"""HGX B200: NVLink 5 with the fabric manager (and NVLSM), Blackwell on the open kernel module it requires. A
proprietary module on it is told from the kernel log's reason, and the fix is the module's flavor, not a modprobe."""

from __future__ import annotations

from pathlib import Path

from rigaudit.agents.investigators.driver import INVESTIGATOR as DRIVER
from rigaudit.tools.schema.finding import ServiceStartAction
from tests.hostgen import faults
from tests.hostgen.cache import built as build_once
from tests.hostgen.cache import snapshot
from tests.hostgen.kinds import KINDS
from tests.support.investigators import audit_snapshot
from tests.support.kinds import by_check, serious
from tests.support.mutate import light_copy, set_command, set_nvml

B200 = KINDS["hgx-b200-noble"]


def test_hgx_b200_is_healthy() -> None:
    assert serious(B200) == {}
    found = by_check(B200)
    assert found["driver.fabricmanager"].status == "ok", found["driver.fabricmanager"].observed
    assert found["driver.version"].status == "ok" and "open kernel module" in found["driver.version"].observed
    assert found["nvlink.links"].status == "ok", found["nvlink.links"].observed


def test_hgx_b200_is_the_xeon_platform_its_chassis_is() -> None:
    """Before: a Supermicro SYS-A21GE-NBRT (an Intel Xeon platform: Supermicro's SYS- prefix; its AMD systems are AS-)
    with 2x EPYC 9354 and amd_pstate."""
    tree = build_once(B200).tree
    assert tree.text("/sys/devices/virtual/dmi/id/product_name") == "SYS-A21GE-NBRT\n"
    cpuinfo = tree.text("/proc/cpuinfo") or ""
    assert "GenuineIntel" in cpuinfo and "XEON(R) PLATINUM 8570" in cpuinfo  # Emerald Rapids names itself in capitals
    assert tree.text("/sys/devices/system/cpu/cpufreq/policy0/scaling_driver") == "intel_pstate\n"
    assert "amd_pstate" not in (tree.text("/proc/cmdline") or "")


def test_a_refused_fabric_manager_package_carries_its_own_branch() -> None:
    """Before: nvidia-fabricmanager-570 at version 550.127.08; a versioned package's name carries its branch."""
    tree = build_once(faults.fabricmanager_version_refused(B200)).tree
    packages = tree.commands[("dpkg-query", "-W", "nvidia-fabricmanager*")]["stdout"]
    assert packages == "nvidia-fabricmanager-550\t550.127.08-1\n", packages
    version = by_check(faults.fabricmanager_version_refused(B200))["driver.fabricmanager_version"]
    assert version.subjects == ("nvidia-fabricmanager-550", "running (per /var/log/fabricmanager.log)"), version.subjects
    assert version.fix is not None and "nvidia-fabricmanager-570=570.133.20-1" in version.fix.actions[0].description


def test_nvlsm_runs_beside_the_fabric_manager_as_its_start_script_starts_it() -> None:
    tree = build_once(B200).tree
    pid = (tree.text("/var/run/nvlsm.pid") or "").strip()
    assert tree.text(f"/proc/{pid}/comm") == "nvlsm\n"
    assert "Binding to port 0x" in (tree.text("/var/log/nvlsm.log") or "")
    assert "/opt/nvidia/nvlsm/sbin/nvlsm" in tree.files


def test_hgx_b200_without_its_fabric_manager() -> None:
    """Before: p2p.status ok ('28/28 pairs OK for read and write') on a fabric NVML reports not completed, beside a
    server holding 165 GB of every GPU: CUDA refuses work there (cudaErrorSystemNotReady, 802)."""
    broken = faults.fabricmanager_down(B200)
    assert serious(broken) == {"driver.fabricmanager": "critical@host", "p2p.status": "critical@host"}
    p2p = by_check(broken)["p2p.status"]
    assert p2p.fix is not None and "see driver.fabricmanager" in p2p.fix.summary


def test_a_fabric_not_completed_leaves_no_cuda_work_and_no_peers() -> None:
    """The generator: with the fabric manager down on a Blackwell NVSwitch system CUDA initialization fails, so no
    compute process holds GPU memory and no pair peers (as on HGX H100)."""
    tree = build_once(faults.fabricmanager_down(B200)).tree
    assert tree.nvml_result("nvmlDeviceGetGpuFabricInfo", 0)["state"] != 3
    assert all(tree.nvml_result("nvmlDeviceGetComputeRunningProcesses", i) == [] for i in range(8))
    assert all(tree.nvml_result("nvmlDeviceGetP2PStatus", 0, b, 0) != 0 for b in range(1, 8))


def test_the_proprietary_module_on_blackwell_is_told_by_the_kernel_log() -> None:
    """Before: driver.version unknown (no module, no NVML) and driver.uvm high 'load nvidia_uvm', which cannot load
    while nvidia.ko itself refuses the GPUs."""
    broken = faults.proprietary_on_blackwell(B200)
    assert serious(broken) == {"driver.version": "critical@host"}
    version = by_check(broken)["driver.version"]
    assert version.fix is not None and "open kernel module flavor" in version.fix.summary
    assert "requires use of the NVIDIA open kernel modules" in version.observed
    assert by_check(broken)["driver.uvm"].status == "unknown"


def _rack_tray(tmp_path: Path, state: int) -> Path:
    """The B200 snapshot as a GB200 NVL compute tray sees its GPUs: NVML names them GB200, no fabric manager is
    installed on the tray (the rack's switch trays run it), the fabric in ``state``. A mutated copy, for want of a
    Grace + Blackwell tray in the generator."""
    root = light_copy(snapshot(B200), tmp_path / "tray")
    for gpu in range(8):
        set_nvml(root, "nvmlDeviceGetName", (gpu,), "NVIDIA GB200")
        fabric = {"clusterUuid": "5c1a3b2e-0000-4000-8000-000000000001", "status": 0, "cliqueId": 1, "state": state}
        set_nvml(root, "nvmlDeviceGetGpuFabricInfo", (gpu,), fabric)
    set_command(root, ("systemctl", "is-active", "nvidia-fabricmanager"), "inactive\n", exit_code=3)
    return root


def test_a_rack_compute_tray_runs_no_fabric_manager(tmp_path: Path) -> None:
    found = audit_snapshot(DRIVER, _rack_tray(tmp_path, 3), problem_has_fix=True)["driver.fabricmanager"]
    assert found.status == "ok", found.observed


def test_a_rack_tray_whose_fabric_is_down_is_sent_to_the_switch_trays(tmp_path: Path) -> None:
    """Before: critical 'Start nvidia-fabricmanager' on a tray that has none to start."""
    found = audit_snapshot(DRIVER, _rack_tray(tmp_path, 1), problem_has_fix=True)["driver.fabricmanager"]
    assert (found.status, found.severity) == ("problem", "critical"), found.observed
    assert found.fix is not None and "switch trays" in found.fix.summary
    assert not any(isinstance(a, ServiceStartAction) for a in found.fix.actions)


def test_deep_cstates_with_no_server_visible_stay_low() -> None:
    """Before: medium on B200 with MIG left on and nothing running ('no server is visible here to tell whether it
    batches'): the premise of the medium (decode latency-bound) unread, and the severity raised on it."""
    idle = faults.mig_unused(B200)
    cstates = by_check(idle)["power.cstates"]
    assert (cstates.status, cstates.severity) == ("problem", "low"), cstates.explanation
    assert "no server visible: medium if it serves at batch 1" in cstates.explanation
    assert "power.cstates" not in serious(idle)
