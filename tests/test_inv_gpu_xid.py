"""gpu.xid judged by NVIDIA's Xid catalog: severity, resolution and the layer it runs on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigaudit.agents.investigators.gpu import INVESTIGATOR
from rigaudit.tools.schema.finding import CommandAction, Finding
from tests.support.investigators import audit_snapshot
from tests.support.mutate import light_copy, set_command, set_nvml
from tests.support.platforms import as_docker, as_vm


@pytest.fixture
def snap(seed_dir: Path, tmp_path: Path) -> Path:
    return light_copy(seed_dir, tmp_path / "snap")


def _dmesg(seed_dir: Path) -> str:
    for line in (seed_dir / "commands.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["argv"] == ["dmesg"]:
            return str(record["stdout"])
    raise AssertionError("seed has no dmesg record")


def _xid(bdf: str, code: int, text: str = "") -> str:
    return f"[ 100.0] NVRM: Xid (PCI:{bdf}): {code}, pid=4242, name=python3, {text}\n"


def xid(snap: Path, seed_dir: Path, *lines: str) -> Finding:
    set_command(snap, ["dmesg"], _dmesg(seed_dir) + "".join(lines), any_args=True)
    return audit_snapshot(INVESTIGATOR, snap, evidence_read=True)["gpu.xid"]


def _actions(finding: Finding) -> list[CommandAction]:
    assert finding.fix is not None
    return [a for a in finding.fix.actions if isinstance(a, CommandAction)]


def test_double_bit_ecc_is_critical_and_resets_the_gpu(snap: Path, seed_dir: Path) -> None:
    finding = xid(snap, seed_dir, _xid("0000:03:00", 48, "DBE"), _xid("0000:03:00", 63, "row remap"))
    assert (finding.status, finding.severity) == ("problem", "critical")
    assert finding.fix is not None and (finding.fix.kind, finding.fix.where) == ("reboot", "host")
    reset = _actions(finding)[0]
    assert reset.argv == ("nvidia-smi", "-r", "-i", "0")
    assert "Xid 63 (GPU memory remapping event)" in finding.observed


def test_gsp_timeout_is_high(snap: Path, seed_dir: Path) -> None:
    finding = xid(snap, seed_dir, _xid("0000:03:00", 119, "Timeout after 6s of waiting for RPC response"))
    assert (finding.status, finding.severity) == ("problem", "high")
    assert "investigate the driver and software stack" in finding.explanation


def test_informational_xids_alone_are_not_a_problem(snap: Path, seed_dir: Path) -> None:
    finding = xid(snap, seed_dir, _xid("0000:03:00", 63, "row remap"), _xid("0000:04:00", 43, "stopped"))
    assert finding.status == "ok" and "informational in NVIDIA's catalog" in finding.observed


def test_xid_154_takes_the_recovery_action_it_names(snap: Path, seed_dir: Path) -> None:
    line = _xid("0000:03:00", 154, "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)")
    finding = xid(snap, seed_dir, line)
    assert (finding.status, finding.severity) == ("problem", "high")
    assert finding.fix is not None and finding.fix.kind == "reboot"
    assert _actions(finding)[0].argv == ("systemctl", "reboot")


def test_a_code_beyond_the_catalog_is_reported(snap: Path, seed_dir: Path) -> None:
    finding = xid(snap, seed_dir, _xid("0000:03:00", 201, "new"))
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert "not in NVIDIA's Xid catalog" in finding.observed
    assert finding.fix is not None and finding.fix.kind == "hardware"


def test_a_gpu_fallen_off_the_bus_in_a_vm_is_restarted_from_the_hypervisor(snap: Path, seed_dir: Path) -> None:
    as_vm(snap)
    set_nvml(snap, "nvmlDeviceGetSerial", [0], "1654923000123")
    finding = xid(snap, seed_dir, _xid("0000:03:00", 79, "GPU has fallen off the bus."))
    assert (finding.severity, finding.fix.where if finding.fix else None) == ("critical", "hypervisor")
    first = _actions(finding)[0]
    assert first.argv == () and "serial 1654923000123" in first.description and "0000:03:00.0" in first.description
    assert "qm config" in first.description  # how to find the GPU there, in words: no guest address in a command


def test_inside_a_container_the_reset_runs_on_its_host_by_uuid_or_pci_address(snap: Path, seed_dir: Path) -> None:
    as_docker(snap)
    finding = xid(snap, seed_dir, _xid("0000:03:00", 95, "uncontained"))
    assert finding.fix is not None and finding.fix.where == "container_host"
    uuid = "GPU-5a1c0000-7e2d-4c1b-9f0a-3b8e0d6c0000"  # the seed's GPU0: the container's index would be wrong there
    assert _actions(finding)[0].argv == ("nvidia-smi", "-r", "-i", uuid)
    set_nvml(snap, "nvmlDeviceGetUUID", [0], error="NOT_SUPPORTED")
    finding = xid(snap, seed_dir, _xid("0000:03:00", 95, "uncontained"))
    assert _actions(finding)[0].argv == ("nvidia-smi", "-r", "-i", "0000:03:00.0")


def test_an_application_fault_restarts_the_workload(snap: Path, seed_dir: Path) -> None:
    as_docker(snap)
    finding = xid(snap, seed_dir, _xid("0000:c4:00", 31, "MMU fault"))
    assert (finding.severity, finding.fix.kind if finding.fix else None) == ("medium", "restart")
    assert finding.fix is not None and finding.fix.where == "container"
