"""The pcie investigator on the seed and on mutated copies of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.agents.investigators.pcie import INVESTIGATOR
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.pci import register_offset
from rigaudit.tools.pci.sysfs import config_path
from rigaudit.tools.schema.finding import CommandAction, Finding, PciRegisterAction
from tests.support.apply import GPUS
from tests.support.investigators import audit_snapshot
from tests.support.mutate import light_copy, set_command, set_file, set_link, set_nvml

GPU0, GPU1, GPU3 = "0000:03:00.0", "0000:04:00.0", "0000:44:00.0"
DEV = "/sys/bus/pci/devices"


@pytest.fixture
def seed(seed_dir: Path, tmp_path: Path) -> Path:
    return light_copy(seed_dir, tmp_path / "seed")


def audit(root: Path) -> dict[str, Finding]:
    return audit_snapshot(INVESTIGATOR, root, evidence_read=True, problem_has_fix=True)


def _config(root: Path, bdf: str) -> tuple[str, bytearray]:
    resolved = SnapshotHost(root).resolve(config_path(bdf))
    return resolved, bytearray((root / "files" / resolved.lstrip("/")).read_bytes())


def set_dev_file(root: Path, bdf: str, name: str, content: str) -> None:
    """Write a device attribute where the snapshot's links lead (/sys/devices/...)."""
    set_file(root, SnapshotHost(root).resolve(f"{DEV}/{bdf}/{name}"), content)


def _edit_u16(root: Path, bdf: str, offset: int, value: int, mask: int = 0xFFFF) -> None:
    path, data = _config(root, bdf)
    old = int.from_bytes(data[offset : offset + 2], "little")
    data[offset : offset + 2] = ((old & ~mask) | (value & mask)).to_bytes(2, "little")
    set_file(root, path, bytes(data))


def _add_acs(root: Path, bdf: str, control: int) -> None:
    """Chain an ACS capability (0x160) after the port's AER capability."""
    path, data = _config(root, bdf)
    data[0x102:0x104] = (0x1602).to_bytes(2, "little")  # AER v2, next 0x160
    data[0x160:0x168] = bytes.fromhex("0d000100") + (0x5F).to_bytes(2, "little") + control.to_bytes(2, "little")
    set_file(root, path, bytes(data))


def _nvml_state(root: Path, index: int, *, pstate: int | None, reasons: int | None, util: int | None) -> None:
    for fn, value in (
        ("nvmlDeviceGetPerformanceState", pstate),
        ("nvmlDeviceGetCurrentClocksEventReasons", reasons),
        ("nvmlDeviceGetCurrentClocksThrottleReasons", reasons),
    ):
        if value is None:
            set_nvml(root, fn, [index], error="NOT_SUPPORTED")
        else:
            set_nvml(root, fn, [index], value)
    if util is None:
        set_nvml(root, "nvmlDeviceGetUtilizationRates", [index], error="NOT_SUPPORTED")
    else:
        set_nvml(root, "nvmlDeviceGetUtilizationRates", [index], {"gpu": util, "memory": util})


def test_seed(seed_dir: Path) -> None:
    found = audit(seed_dir)
    assert found["pcie.link"].status == "ok"
    assert found["pcie.link"].observed == "8/8 GPUs at full link (32 GT/s x16)"
    assert found["pcie.mps"].status == "ok" and "256 bytes on 8/8 GPUs" in found["pcie.mps"].observed
    assert found["pcie.acs"].status == "ok" and "no ACS redirect" in found["pcie.acs"].observed
    assert found["pcie.aer"].status == "ok"
    assert [f.check for f in found.values() if f.status == "problem"] == ["pcie.mrrs"]


def test_seed_mrrs_fix_is_exact(seed_dir: Path) -> None:
    mrrs = audit(seed_dir)["pcie.mrrs"]
    assert (mrrs.status, mrrs.severity) == ("problem", "medium")
    assert mrrs.observed == "MaxReadReq 512 bytes on 8/8 GPUs"
    assert mrrs.fix is not None and (mrrs.fix.kind, mrrs.fix.where, mrrs.fix.risk) == ("runtime", "host", "medium")
    assert mrrs.fix.actions == (PciRegisterAction(devices=GPUS, capability="exp", offset=8, width=2, value=0x5000, mask=0x7000),)
    assert f"setpci -s {GPU0} CAP_EXP+8.w=2000:7000" in mrrs.fix.revert
    assert "setpci" in mrrs.fix.persist and mrrs.fix.verify
    assert len(mrrs.subjects) == 8 and "Extended Tags are off" in mrrs.explanation


def test_mrrs_quiet_at_4096_and_unknown_when_unprivileged(seed: Path) -> None:
    for bdf in GPUS:
        _edit_u16(seed, bdf, 0x80, 0x5000, 0x7000)
    found = audit(seed)["pcie.mrrs"]
    assert found.status == "ok" and found.observed == "MaxReadReq 4096 bytes on 8/8 GPUs"
    for bdf in GPUS:
        path, data = _config(seed, bdf)
        set_file(seed, path, bytes(data[:64]))
    found = audit(seed)["pcie.mrrs"]
    assert found.status == "unknown" and "needs root" in found.observed


def test_link_width_down_is_a_hardware_problem(seed: Path) -> None:
    set_dev_file(seed, GPU3, "current_link_width", "8\n")
    link = audit(seed)["pcie.link"]
    assert (link.status, link.severity) == ("problem", "high")
    assert link.subjects == ("GPU3 (0000:44:00.0)",) and "x8" in link.observed
    assert link.fix is not None and link.fix.kind == "hardware"


def test_link_trained_down_at_idle_is_ok(seed: Path) -> None:
    set_dev_file(seed, GPU0, "current_link_speed", "2.5 GT/s PCIe\n")
    link = audit(seed)["pcie.link"]  # the seed's GPUs are in P8 with the idle clocks event reason
    assert link.status == "ok" and link.subjects == ("GPU0 (0000:03:00.0)",)
    assert "7/8 GPUs at full link" in link.observed and "idle" in link.explanation


def test_link_trained_down_while_busy_is_a_problem(seed: Path) -> None:
    set_dev_file(seed, GPU0, "current_link_speed", "16.0 GT/s PCIe\n")
    _nvml_state(seed, 0, pstate=0, reasons=0, util=95)
    link = audit(seed)["pcie.link"]
    assert (link.status, link.severity) == ("problem", "high")
    assert "16 GT/s x16" in link.observed and "busy" in link.observed


def test_link_down_with_unknown_load_is_low_and_asks_for_a_recheck(seed: Path) -> None:
    set_dev_file(seed, GPU0, "current_link_speed", "16.0 GT/s PCIe\n")
    _nvml_state(seed, 0, pstate=None, reasons=None, util=None)
    link = audit(seed)["pcie.link"]
    assert (link.status, link.severity) == ("problem", "low")
    assert link.fix is not None and "under load" in link.fix.summary


def test_link_limited_by_the_slot(seed: Path) -> None:
    set_dev_file(seed, GPU1, "current_link_speed", "16.0 GT/s PCIe\n")
    set_nvml(seed, "nvmlDeviceGetMaxPcieLinkGeneration", [1], 4)
    set_command(
        seed,
        ["dmesg"],
        "[    2.3] pci 0000:04:00.0: 252.048 Gb/s available PCIe bandwidth, limited by 16.0 GT/s PCIe x16 link at "
        "0000:02:01.0 (capable of 504.123 Gb/s with 32.0 GT/s PCIe x16 link)\n",
    )
    link = audit(seed)["pcie.link"]
    assert (link.status, link.severity) == ("problem", "medium")
    assert link.fix is not None and link.fix.kind == "firmware"
    assert "limited by 16.0 GT/s" in link.explanation and "cmd:dmesg" in link.evidence


def test_mps_larger_than_a_bridge(seed: Path) -> None:
    _edit_u16(seed, GPU0, 0x80, 2 << 5, 0x00E0)  # GPU MaxPayload 512 under 256-byte bridges
    mps = audit(seed)["pcie.mps"]
    assert (mps.status, mps.severity) == ("problem", "high")
    assert mps.subjects == ("GPU0 (0000:03:00.0)",) and "512 > 0000:00:01.1 256" in mps.observed
    assert mps.fix is not None and mps.fix.kind == "reboot"
    assert not any(isinstance(a, PciRegisterAction) for a in mps.fix.actions)
    assert "pci=pcie_bus_safe" in mps.fix.summary


def test_acs_redirect_on_switch_ports(seed: Path) -> None:
    _add_acs(seed, "0000:02:00.0", 0x000D)  # SrcValid ReqRedir CmpltRedir
    _add_acs(seed, "0000:02:01.0", 0x0000)
    acs = audit(seed)["pcie.acs"]
    # the seed runs no GPU process: a latent fault of a node between jobs (tests/test_acs_severity.py)
    assert (acs.status, acs.severity) == ("problem", "medium") and "between jobs" in acs.explanation
    assert acs.subjects == ("0000:02:00.0",) and "ReqRedir CmpltRedir" in acs.observed
    assert acs.fix is not None and (acs.fix.kind, acs.fix.risk) == ("runtime", "medium")
    action = acs.fix.actions[0]
    assert action == PciRegisterAction(
        devices=("0000:02:00.0",), capability="ecap:0x000d", offset=6, width=2, value=0, mask=0x000C
    )
    assert "ECAP_ACS+6.w=000d:000c" in acs.fix.revert
    assert "vfio_pci is loaded" in acs.explanation
    _, data = _config(seed, "0000:02:00.0")
    assert register_offset(bytes(data), action.capability, action.offset) == 0x166


def test_acs_never_cleared_at_runtime_with_gpus_on_vfio(seed: Path) -> None:
    _add_acs(seed, "0000:02:00.0", 0x000D)
    set_link(
        seed,
        "/sys/devices/pci0000:80/0000:80:01.1/0000:81:00.0/0000:82:00.0/0000:83:00.0/driver",
        "../../../../../../bus/pci/drivers/vfio-pci",
    )
    acs = audit(seed)["pcie.acs"]
    assert acs.status == "problem" and acs.fix is not None
    assert acs.fix.kind == "reboot" and acs.fix.risk == "high"
    assert all(isinstance(a, CommandAction) for a in acs.fix.actions)


def test_aer_counters(seed: Path) -> None:
    set_dev_file(seed, GPU0, "aer_dev_correctable", "RxErr 0\nBadTLP 3\nBadDLLP 1\nTOTAL_ERR_COR 4\n")
    set_nvml(seed, "nvmlDeviceGetPcieReplayCounter", [5], 170)
    aer = audit(seed)["pcie.aer"]
    assert (aer.status, aer.severity) == ("problem", "low")
    assert aer.subjects == ("GPU0 (0000:03:00.0)", "GPU5 (0000:84:00.0)")
    assert "correctable:BadTLP=3" in aer.observed and "170 PCIe replays" in aer.observed
    set_dev_file(seed, "0000:02:00.0", "aer_dev_fatal", "DLP 1\nTOTAL_ERR_FATAL 1\n")
    aer = audit(seed)["pcie.aer"]
    assert aer.severity == "high" and "0000:02:00.0" in aer.subjects
    assert aer.fix is not None and aer.fix.kind == "hardware"


def test_a_few_replays_alone_are_not_a_problem(seed: Path) -> None:
    # Seen on a real H200: 3 replays since the driver loaded, no AER error.
    set_nvml(seed, "nvmlDeviceGetPcieReplayCounter", [5], 3)
    aer = audit(seed)["pcie.aer"]
    assert aer.status == "ok" and "GPU5 (0000:84:00.0): 3" in aer.observed
    set_nvml(seed, "nvmlDeviceGetPcieReplayCounter", [5], 5000)
    assert audit(seed)["pcie.aer"].severity == "low"


def test_emulated_root_port_of_a_vm_is_not_a_slot_limit(seed: Path) -> None:
    set_dev_file(seed, "0000:02:00.0", "max_link_speed", "2.5 GT/s PCIe\n")
    set_dev_file(seed, "0000:02:00.0", "max_link_width", "1\n")
    assert audit(seed)["pcie.link"].severity == "medium"  # on bare metal the port above caps the GPU
    set_command(seed, ["systemd-detect-virt", "--vm"], "kvm\n")
    link = audit(seed)["pcie.link"]
    assert link.status == "ok" and link.observed == "8/8 GPUs at full link (32 GT/s x16)"
