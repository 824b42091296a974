"""gpu: GSP errors, application/locked clocks, spare memory (retired pages, row-remapper histogram)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.agents.investigators.gpu import INVESTIGATOR
from rigaudit.agents.investigators.gpu.gsp import gsp_lines
from rigaudit.tools.schema.finding import Finding
from tests.support.investigators import audit_snapshot
from tests.support.mutate import light_copy, set_command, set_nvml, set_nvml_many

XID_119 = (
    "[ 8123.4] NVRM: Xid (PCI:0000:43:00): 119, pid=4242, name=python3, Timeout after 6s of waiting for RPC response "
    "from GPU2 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801348 0x4).\n"
)
GSP_TIMEOUT = "[ 8123.5] NVRM: _kgspRpcRecvPoll: GPU2 GSP RPC timeout waiting for response\n"


@pytest.fixture
def snap(seed_dir: Path, tmp_path: Path) -> Path:
    return light_copy(seed_dir, tmp_path / "snap")


def audit(root: Path) -> dict[str, Finding]:
    return audit_snapshot(INVESTIGATOR, root)


def test_gsp_lines_parse_xid_and_rpc_lines() -> None:
    found = gsp_lines(XID_119 + GSP_TIMEOUT + "[ 12.9] NVRM: loading NVIDIA UNIX Open Kernel Module 580.95.05\n")
    assert [bdf for _, bdf in found] == ["0000:43:00.0", None]


def test_seed_gsp_and_spare_memory_ok(seed_dir: Path) -> None:
    found = audit(seed_dir)
    assert found["gpu.gsp"].status == "ok"
    assert found["gpu.retired_pages"].status == "ok"
    assert found["gpu.retired_pages"].observed.startswith("no retired pages, no bank short of spare rows on 8/8 GPUs")


@pytest.mark.parametrize("line", [XID_119, GSP_TIMEOUT])
def test_gsp_errors_are_high(snap: Path, line: str) -> None:
    set_command(snap, ["dmesg"], "[ 1.0] Linux version 6.8.12-11-pve\n" + line, any_args=True)
    finding = audit(snap)["gpu.gsp"]
    assert (finding.status, finding.severity) == ("problem", "high")
    assert finding.fix is not None and finding.fix.kind == "reboot"
    assert any("open kernel module requires GSP" in a.model_dump()["description"] for a in finding.fix.actions)
    if line is XID_119:
        assert finding.subjects == ("GPU2 (0000:43:00.0)",)


def app_clocks(root: Path, graphics: int, memory: int, *, error: str | None = None) -> None:
    records = []
    for gpu in range(8):
        for clock, value, default in ((0, graphics, 2617), (2, memory, 14001)):
            app = {"error": error} if error else value
            records.append(("nvmlDeviceGetApplicationsClock", [gpu, clock], app))
            records.append(("nvmlDeviceGetDefaultApplicationsClock", [gpu, clock], {"error": error} if error else default))
    set_nvml_many(root, records)


def test_lowered_application_clocks_are_medium(snap: Path) -> None:
    app_clocks(snap, 2617, 14001)
    set_nvml(snap, "nvmlDeviceGetApplicationsClock", [5, 0], 1800)
    finding = audit(snap)["gpu.app_clocks"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert finding.observed == "GPU5 (0000:84:00.0): graphics 1800 MHz (default 2617 MHz)"
    assert finding.fix is not None and finding.fix.kind == "runtime"
    assert finding.fix.actions[0].model_dump()["argv"] == ("nvidia-smi", "-i", "5", "-rac")


def test_default_application_clocks_are_ok(snap: Path) -> None:
    app_clocks(snap, 2617, 14001)
    finding = audit(snap)["gpu.app_clocks"]
    assert finding.status == "ok" and "on 8/8 GPUs" in finding.observed


def test_unsupported_application_clocks_are_not_applicable(snap: Path) -> None:
    app_clocks(snap, 0, 0, error="NOT_SUPPORTED")
    assert audit(snap)["gpu.app_clocks"].status == "not_applicable"


def test_clocks_held_by_the_applications_setting_fire_without_app_clock_reads(snap: Path) -> None:
    set_nvml(snap, "nvmlDeviceGetCurrentClocksEventReasons", [3], 0x2)
    finding = audit(snap)["gpu.app_clocks"]
    assert finding.status == "problem"
    assert "GPU3 (0000:44:00.0): clock event reason 0x2" in finding.observed


def test_bank_without_spare_rows_is_high(snap: Path) -> None:
    set_nvml(snap, "nvmlDeviceGetRemappedRows", [6], [3, 1, 0, 0])
    set_nvml(snap, "nvmlDeviceGetRowRemapperHistogram", [6], {"max": 500, "high": 10, "partial": 2, "low": 0, "none": 1})
    found = audit(snap)
    assert found["gpu.ecc_errors"].status == "ok"
    finding = found["gpu.retired_pages"]
    assert (finding.status, finding.severity) == ("problem", "high")
    assert finding.observed == "GPU6 (0000:c3:00.0): 1 banks with no spare row left"
    assert finding.fix is not None and finding.fix.kind == "hardware"


def test_retired_pages_are_low(snap: Path) -> None:
    set_nvml(snap, "nvmlDeviceGetRetiredPages", [1, 1], [0x1A2B000, 0x1A2C000])
    finding = audit(snap)["gpu.retired_pages"]
    assert (finding.status, finding.severity) == ("problem", "low")
    assert finding.observed == "GPU1 (0000:04:00.0): 2 retired pages (2 double-bit)"


def test_remapped_rows_without_a_histogram_are_unknown(snap: Path) -> None:
    set_nvml(snap, "nvmlDeviceGetRemappedRows", [0], [2, 0, 0, 0])
    finding = audit(snap)["gpu.retired_pages"]
    assert finding.status == "unknown"
    assert "GPU0 (0000:03:00.0) 2 rows remapped" in finding.observed and "not recorded in this snapshot" in finding.observed
