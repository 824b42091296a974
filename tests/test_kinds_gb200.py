"""The GB200 NVL72 compute tray: two Grace CPUs and four Blackwell GPUs whose NVLink goes to the rack's switch trays
(their NVOS runs the fabric manager and NVLSM), with IMEX for multi-node NVLink memory. Healthy as generated; the
driver rules judge the tray as a tray, not as an NVSwitch host missing its fabric manager."""

from __future__ import annotations

from tests.hostgen.build import build
from tests.hostgen.kinds import KINDS
from tests.support.kinds import by_check, serious

TRAY = KINDS["gb200-nvl72-tray"]


def test_the_tray_is_generated_as_nvidia_smi_shows_one() -> None:
    tree = build(TRAY).tree
    smi = tree.commands[("nvidia-smi",)]["stdout"]
    assert smi.count("NVIDIA GB200") == 4 and "00000008:01:00.0" in smi and "00000019:01:00.0" in smi
    assert "189471MiB" in smi
    assert "NV18" in tree.commands[("nvidia-smi", "topo", "-m")]["stdout"]
    fabric = tree.nvml_result("nvmlDeviceGetGpuFabricInfo", 0)
    assert fabric["state"] == 3 and fabric["clusterUuid"] != "00000000-0000-0000-0000-000000000000"
    assert tree.text("/etc/nvidia-imex/nodes_config.cfg") is not None
    assert "nvidia-caps-imex-channels" in (tree.text("/proc/devices") or "")
    assert not any(p.startswith("/dev/nvidia-nvswitch") for p in tree.unreadable)


def test_the_healthy_tray_has_no_serious_problem() -> None:
    assert serious(TRAY) == {}


def test_the_tray_runs_no_fabric_manager_by_design() -> None:
    """Before: ok for the wrong reason ('an NVSwitch fabric; nvidia-fabricmanager inactive on this host'), and
    driver.fabricmanager_version unknown for want of a fabric manager package the tray never has."""
    found = by_check(TRAY)
    fm = found["driver.fabricmanager"]
    assert fm.status == "ok" and "compute tray" in fm.observed and "switch trays" in (fm.explanation or ""), fm.observed
    version = found["driver.fabricmanager_version"]
    assert version.status == "not_applicable" and "switch trays" in version.observed, version.observed
