"""gpu investigator: thermals, clock event reasons, memory errors, Xid events."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from rigaudit.agents.investigators.gpu import INVESTIGATOR
from rigaudit.agents.investigators.gpu.xid_after import parse_xids
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.policy import Verdict
from rigaudit.tools.schema.finding import Finding
from tests.support.investigators import audit_snapshot
from tests.support.mutate import light_copy, remove_command, remove_nvml, set_command, set_nvml

XID_79 = "[ 8812.114233] NVRM: Xid (PCI:0000:03:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
XID_13 = "[  912.000001] NVRM: Xid (PCI:0000:c4:00): 13, pid=4242, name=python3, Graphics Exception\n"


@pytest.fixture
def snap(seed_dir: Path, tmp_path: Path) -> Path:
    return light_copy(seed_dir, tmp_path / "snap")


def audit(root: Path, probe: Probe | None = None) -> dict[str, Finding]:
    return audit_snapshot(INVESTIGATOR, root, probe=probe)


def seed_dmesg(seed_dir: Path) -> str:
    for line in (seed_dir / "commands.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["argv"] == ["dmesg"]:
            return str(record["stdout"])
    raise AssertionError("seed has no dmesg record")


def test_seed_is_all_ok(seed_dir: Path) -> None:
    found = audit(seed_dir)
    expected = dict.fromkeys(INVESTIGATOR.check_ids, "ok") | {"gpu.app_clocks": "unknown"}
    assert {c: f.status for c, f in found.items()} == expected
    assert found["gpu.app_clocks"].observed == "nvmlDeviceGetApplicationsClock: not recorded in this snapshot"
    assert "slowdown at 95 °C" in found["gpu.thermals"].observed
    assert "on 8/8 GPUs" in found["gpu.thermals"].observed
    assert found["gpu.clocks"].observed.startswith("0x1 (GPU idle) on 8/8 GPUs")
    assert "no NVRM Xid line" in found["gpu.xid"].observed
    assert found["gpu.xid"].evidence == ("cmd:dmesg",)


@pytest.mark.parametrize(("temp", "severity"), [(88, "medium"), (96, "high")])
def test_hot_gpu_near_slowdown(snap: Path, temp: int, severity: str) -> None:
    set_nvml(snap, "nvmlDeviceGetTemperature", [2, 0], temp)
    finding = audit(snap)["gpu.thermals"]
    assert (finding.status, finding.severity) == ("problem", severity)
    assert finding.subjects == ("GPU2 (0000:43:00.0)",)
    assert f"{temp} °C, slowdown at 95 °C" in finding.observed
    assert finding.fix is not None and finding.fix.kind == "hardware"


def test_thermals_fall_back_to_gpu_max_when_slowdown_is_missing(snap: Path) -> None:
    remove_nvml(snap, "nvmlDeviceGetTemperatureThreshold")
    for index in range(8):
        set_nvml(snap, "nvmlDeviceGetTemperatureThreshold", [index, 3], 87)
    set_nvml(snap, "nvmlDeviceGetTemperature", [0, 0], 80)
    finding = audit(snap)["gpu.thermals"]
    assert finding.status == "problem" and "max operating at 87 °C" in finding.observed


@pytest.mark.parametrize(("mask", "severity"), [(0x40 | 0x1, "high"), (0x80, "high"), (0x20, "medium")])
def test_thermal_and_power_brake_reasons_fire(snap: Path, mask: int, severity: str) -> None:
    set_nvml(snap, "nvmlDeviceGetCurrentClocksEventReasons", [1], mask)
    finding = audit(snap)["gpu.clocks"]
    assert (finding.status, finding.severity) == ("problem", severity)
    assert finding.subjects == ("GPU1 (0000:04:00.0)",)
    assert hex(mask) in finding.observed


def test_sw_power_cap_is_normal(snap: Path) -> None:
    for index in range(8):
        set_nvml(snap, "nvmlDeviceGetCurrentClocksEventReasons", [index], 0x4)
    finding = audit(snap)["gpu.clocks"]
    assert finding.status == "ok" and "SW power cap" in finding.observed


def test_remap_pending_is_high_and_failure_is_critical(snap: Path) -> None:
    set_nvml(snap, "nvmlDeviceGetRemappedRows", [4], [0, 1, 1, 0])
    pending = audit(snap)["gpu.ecc_errors"]
    assert (pending.status, pending.severity) == ("problem", "high")
    assert pending.fix is not None and pending.fix.kind == "reboot"
    assert "GPU4 (0000:83:00.0): remap/retirement pending" in pending.observed
    set_nvml(snap, "nvmlDeviceGetRemappedRows", [4], [0, 1, 0, 1])
    failed = audit(snap)["gpu.ecc_errors"]
    assert (failed.status, failed.severity) == ("problem", "critical")
    assert failed.fix is not None and failed.fix.kind == "hardware" and "RMA" in failed.fix.summary


def test_volatile_uncorrectable_errors_fire(snap: Path) -> None:
    set_nvml(snap, "nvmlDeviceGetTotalEccErrors", [7, 1, 0], 3)
    finding = audit(snap)["gpu.ecc_errors"]
    assert (finding.status, finding.severity) == ("problem", "high")
    assert "3 volatile uncorrectable ECC errors" in finding.observed


def test_old_correctable_remaps_are_healthy(snap: Path) -> None:
    set_nvml(snap, "nvmlDeviceGetRemappedRows", [3], [12, 0, 0, 0])
    finding = audit(snap)["gpu.ecc_errors"]
    assert finding.status == "ok" and "GPU3 (0000:44:00.0) 12" in finding.observed


def test_xid_79_is_critical_and_names_the_gpu(snap: Path, seed_dir: Path) -> None:
    set_command(snap, ["dmesg"], seed_dmesg(seed_dir) + XID_79, any_args=True)
    finding = audit(snap)["gpu.xid"]
    assert (finding.status, finding.severity) == ("problem", "critical")
    assert finding.subjects == ("GPU0 (0000:03:00.0)",)
    assert "Xid 79 (GPU has fallen off the bus) on GPU0 (0000:03:00.0) ×1" in finding.observed
    # NVIDIA's resolution: restart the machine; then, if it repeats, report (hardware).
    assert finding.fix is not None and (finding.fix.kind, finding.fix.where) == ("reboot", "host")
    assert "report to NVIDIA support if it repeats" in " ".join(a.description for a in finding.fix.actions)


def test_application_xid_is_medium_restart(snap: Path, seed_dir: Path) -> None:
    set_command(snap, ["dmesg"], seed_dmesg(seed_dir) + XID_13 + XID_13, any_args=True)
    finding = audit(snap)["gpu.xid"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert "×2" in finding.observed and finding.subjects == ("GPU7 (0000:c4:00.0)",)
    assert finding.fix is not None and finding.fix.kind == "restart"


def test_parse_xids_normalizes_bdf() -> None:
    events = parse_xids("NVRM: Xid (PCI:0000:C3:00): 48, pid=1, DBE\nunrelated line\n")
    assert [(e.bdf, e.xid) for e in events] == [("0000:c3:00.0", 48)]


def test_dmesg_not_permitted_is_unknown_with_reason(snap: Path) -> None:
    set_command(snap, ["dmesg"], exit_code=1, stderr="dmesg: read kernel buffer failed: Operation not permitted\n", any_args=True)
    finding = audit(snap)["gpu.xid"]
    assert finding.status == "unknown"
    assert "Operation not permitted" in finding.observed and "dmesg_restrict" in finding.observed


def test_dmesg_missing_or_denied_is_unknown(snap: Path) -> None:
    remove_command(snap, "dmesg")
    assert "not recorded in this snapshot" in audit(snap)["gpu.xid"].observed

    def deny(argv: Sequence[str]) -> Verdict:
        return Verdict("deny", "test policy", tuple(argv))

    denied = audit(snap, Probe(SnapshotHost(snap), policy=deny))["gpu.xid"]
    assert denied.status == "unknown" and "dmesg refused" in denied.observed
