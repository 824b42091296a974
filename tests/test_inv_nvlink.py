"""nvlink investigator: not applicable on PCIe cards; link state and error counters on NVLink GPUs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rigaudit.agents.investigators.nvlink import INVESTIGATOR
from rigaudit.tools.schema.finding import Finding
from tests.support.investigators import audit_snapshot
from tests.support.mutate import light_copy, set_nvml, set_nvml_many


@pytest.fixture
def snap(seed_dir: Path, tmp_path: Path) -> Path:
    return light_copy(seed_dir, tmp_path / "snap")


def audit_all(root: Path) -> dict[str, Finding]:
    found = audit_snapshot(INVESTIGATOR, root)
    assert list(found) == ["nvlink.links", "nvlink.errors"]
    return found


def audit(root: Path) -> Finding:
    return audit_all(root)["nvlink.links"]


def nvlink_host(
    root: Path, *, down: tuple[int, int] | None = None, counters: dict[tuple[int, int, int], int] | None = None, state: int = 1
) -> None:
    """Make the seed an 18-link NVLink machine; ``down`` = (gpu, link) inactive."""
    records: list[tuple[str, list[int], Any]] = []
    for gpu in range(8):
        for link in range(18):
            records.append(("nvmlDeviceGetNvLinkState", [gpu, link], 0 if (gpu, link) == down else state))
            for counter in range(4):
                value = (counters or {}).get((gpu, link, counter), 0)
                records.append(("nvmlDeviceGetNvLinkErrorCounter", [gpu, link, counter], value))
    set_nvml_many(root, records)


def test_pcie_only_cards_are_not_applicable(seed_dir: Path) -> None:
    found = audit_all(seed_dir)
    assert found["nvlink.errors"].status == "not_applicable"
    finding = found["nvlink.links"]
    assert finding.status == "not_applicable"
    assert finding.observed.startswith("NVML reports no NVLink on RTX PRO 6000 Blackwell Server Edition")
    assert "nvml:nvmlDeviceGetNvLinkState(0, 0)" in finding.evidence


def test_all_links_up_and_clean_is_ok(snap: Path) -> None:
    nvlink_host(snap)
    found = audit_all(snap)
    finding = found["nvlink.links"]
    assert finding.status == "ok"
    assert finding.observed.startswith("18 active links per GPU on 8 GPUs")
    errors = found["nvlink.errors"]
    assert errors.status == "ok" and errors.observed == "replay, recovery and CRC counters 0 on 144 active links"


def test_a_link_whose_state_was_not_read_is_no_ok(snap: Path) -> None:
    """The one link that could be down was not read: unknown, naming it, never ok."""
    nvlink_host(snap)
    set_nvml(snap, "nvmlDeviceGetNvLinkState", [5, 11], error="UNKNOWN")
    finding = audit(snap)
    assert finding.status == "unknown", finding.observed
    assert "GPU5 (0000:84:00.0) link 11: UNKNOWN" in finding.observed


def test_link_down_where_peers_are_up_is_high_hardware(snap: Path) -> None:
    nvlink_host(snap, down=(5, 11))
    finding = audit(snap)
    assert (finding.status, finding.severity) == ("problem", "high")
    assert "GPU5 (0000:84:00.0): link 11 inactive" in finding.observed
    assert finding.subjects == ("GPU5 (0000:84:00.0)",)
    assert finding.fix is not None and finding.fix.kind == "hardware"


@pytest.mark.parametrize(("counter", "severity"), [(0, "low"), (1, "medium")])
def test_error_counters(snap: Path, counter: int, severity: str) -> None:
    nvlink_host(snap, counters={(2, 3, counter): 7})
    found = audit_all(snap)
    assert found["nvlink.links"].status == "ok"
    finding = found["nvlink.errors"]
    assert (finding.status, finding.severity) == ("problem", severity)
    assert finding.subjects == ("GPU2 (0000:43:00.0)",)
    assert finding.fix is not None and finding.fix.kind == "hardware"
    assert "GPU2 (0000:43:00.0): link 3" in finding.observed and "=7" in finding.observed


@pytest.mark.parametrize("counter", [2, 3])
def test_crc_counts_alone_are_ok_as_on_healthy_h200s(snap: Path, counter: int) -> None:
    nvlink_host(snap, counters={(2, 3, counter): 75})
    finding = audit_all(snap)["nvlink.errors"]
    assert finding.status == "ok" and "CRC counts only" in finding.observed and "=75" in finding.observed


def test_no_active_link_anywhere_is_unknown(snap: Path) -> None:
    nvlink_host(snap, state=0)
    found = audit_all(snap)
    finding = found["nvlink.links"]
    assert finding.status == "unknown" and "no active link" in finding.observed
    assert found["nvlink.errors"].status == "unknown"
