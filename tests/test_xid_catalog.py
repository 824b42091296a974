"""The Xid catalog: every code of NVIDIA's table, once, with a resolution that maps to a fix kind and a severity."""

from __future__ import annotations

from typing import get_args

import pytest

from rigaudit.agents.facts.xid_catalog import (
    CATALOG,
    CRITICAL,
    RESOLUTION_FIX_KIND,
    RESOLUTION_RANK,
    RESOLUTION_TEXT,
    Resolution,
    lookup,
    recovery_action,
)


def test_every_code_of_nvidias_table_once() -> None:
    assert sorted(CATALOG) == list(range(1, 173))
    assert all(CATALOG[code].code == code for code in CATALOG)
    assert len({x.mnemonic for x in CATALOG.values()}) == 172


def test_every_resolution_has_words_a_fix_kind_and_a_rank() -> None:
    resolutions = set(get_args(Resolution))
    assert set(RESOLUTION_TEXT) == set(RESOLUTION_FIX_KIND) == set(RESOLUTION_RANK) == resolutions
    assert {x.resolution for x in CATALOG.values()} <= resolutions
    for xid in CATALOG.values():
        assert (xid.fix_kind is None) == (xid.resolution == "none"), xid.code
        assert xid.text, xid.code


@pytest.mark.parametrize(
    ("code", "resolution", "severity"),
    [
        (13, "restart_app", "medium"),
        (31, "restart_app", "medium"),
        (43, "none", "low"),
        (45, "none", "low"),
        (48, "reset_gpu", "critical"),
        (63, "none", "low"),
        (64, "reset_gpu", "critical"),
        (74, "reset_gpu", "high"),
        (79, "reboot", "critical"),
        (94, "restart_app", "medium"),
        (95, "reset_gpu", "critical"),
        (119, "reset_gpu", "high"),
        (120, "reset_gpu", "high"),
        (140, "reset_gpu", "critical"),
        (143, "reset_gpu", "high"),
        (151, "restart_vm", "high"),
        (54, "check_hardware", "high"),
    ],
)
def test_the_well_known_xids(code: int, resolution: str, severity: str) -> None:
    xid = lookup(code)
    assert xid is not None and (xid.resolution, xid.severity) == (resolution, severity)


def test_severity_follows_the_resolution_except_where_data_or_the_gpu_is_lost() -> None:
    for xid in CATALOG.values():
        if xid.code in CRITICAL:
            assert xid.severity == "critical"
        elif xid.resolution == "none":
            assert xid.severity == "low", xid.code
        elif xid.resolution in ("reset_gpu", "reboot", "restart_vm"):
            assert xid.severity == "high", xid.code
    assert all(CATALOG[c].resolution != "none" for c in CRITICAL)


def test_unused_codes_say_so_and_keep_older_meanings() -> None:
    assert CATALOG[9].text == "driver error programming the GPU (unused on Ampere and newer)"
    assert "unused on Ampere and newer" in CATALOG[5].text and "RUNOUT_OVERFLOW" in CATALOG[5].text
    assert CATALOG[79].text == "GPU has fallen off the bus"
    assert lookup(173) is None and lookup(0) is None


def test_xid_154_names_its_recovery_action() -> None:
    line = "NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"
    assert recovery_action(line) == "reboot"
    assert recovery_action(line.replace("0x2 (Node Reboot Required)", "0x1 (GPU Reset Required)")) == "reset_gpu"
    assert recovery_action("NVRM: Xid (PCI:0000:18:00): 154, something else") is None
