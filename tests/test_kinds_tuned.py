"""A host whose tunables TuneD owns: RHEL 9 with tuned's active profile. A fix for a setting the profile sets is a
profile (tuned applies its profile again on restart), never a sysfs write tuned reverts."""

from __future__ import annotations

import pytest

from rigaudit.tools.model.finding import SysfsWriteAction
from tests.hostgen import faults
from tests.hostgen.kinds import KINDS
from tests.support.kinds import by_check, serious

RHEL = KINDS["rhel9-hgx-h100-tuned"]
BALANCED = faults.tuned_profile(RHEL, "balanced")


def test_rhel9_with_throughput_performance_is_healthy() -> None:
    assert serious(RHEL) == {}
    found = by_check(RHEL)
    assert found["power.governor"].status == "ok"
    assert found["kernel.thp"].status == "ok"


@pytest.mark.parametrize("check", ["power.governor", "power.epp"])
def test_a_tuned_setting_is_fixed_by_a_profile(check: str) -> None:
    """Before: 'write performance to every scaling_governor' (and a oneshot unit), which tuned undoes on restart."""
    finding = by_check(BALANCED)[check]
    assert finding.status == "problem" and finding.fix is not None, finding.observed
    assert "tuned profile" in finding.fix.summary and "'balanced'" in finding.fix.summary
    assert not any(isinstance(a, SysfsWriteAction) for a in finding.fix.actions)
    assert any(getattr(a, "argv", None) == ("tuned-adm", "profile", "rigaudit-performance") for a in finding.fix.actions)
    assert "include=balanced" in " ".join(getattr(a, "description", "") for a in finding.fix.actions)
    assert finding.fix.revert == "tuned-adm profile balanced"


def test_without_tuned_the_governor_fix_stays_a_write() -> None:
    from tests.hostgen.archetypes import ALL

    finding = by_check(faults.governor(ALL["hgx-h100-jammy"]))["power.governor"]
    assert finding.fix is not None and any(isinstance(a, SysfsWriteAction) for a in finding.fix.actions)


def test_thp_defrag_set_by_a_tuned_profile_is_fixed_by_a_profile() -> None:
    """Before: 'echo madvise > /sys/kernel/mm/transparent_hugepage/defrag' and a tmpfiles.d line, which tuned's
    [vm] plugin undoes when it applies its profile again."""
    thp = by_check(faults.tuned_thp_defrag(RHEL))["kernel.thp"]
    assert (thp.status, thp.severity) == ("problem", "low"), thp.observed
    assert thp.fix is not None and "[vm] transparent_hugepage.defrag=always" in thp.fix.summary
    assert not any(isinstance(a, SysfsWriteAction) for a in thp.fix.actions)
    assert "include=llm-serving" in " ".join(getattr(a, "description", "") for a in thp.fix.actions)
