"""A host whose tunables TuneD owns: RHEL 9 with tuned's active profile. A fix for a setting the profile sets is a
profile (tuned applies its profile again on restart), never a sysfs write tuned reverts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rigaudit.agents.investigators.power import INVESTIGATOR as POWER
from rigaudit.tools.schema.finding import Finding, SysfsWriteAction
from tests.hostgen import faults
from tests.hostgen.cache import snapshot
from tests.hostgen.kinds import KINDS
from tests.hostgen.spec import HostSpec
from tests.support.investigators import audit_snapshot
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
    assert finding.fix.revert == "tuned-adm profile balanced; rm -r /etc/tuned/rigaudit-performance"


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


def test_deep_cstates_on_a_host_run_by_tuned_are_held_by_a_tuned_profile() -> None:
    """Review W11. Before: a sysfs write persisted by a rigaudit-cstates oneshot unit, a second owner of the CPU
    power settings beside tuned; tuned's way is a child profile whose [cpu] force_latency keeps the deep states
    unused (as latency-performance does)."""
    finding = by_check(RHEL)["power.cstates"]
    assert (finding.status, finding.severity) == ("problem", "low"), finding.observed
    fix = finding.fix
    assert fix is not None and "tuned profile" in fix.summary, fix.summary
    assert "rigaudit-cstates" not in fix.persist and "oneshot" not in fix.persist, fix.persist
    described = " ".join(getattr(a, "description", "") for a in fix.actions)
    assert "[cpu]' 'force_latency=cstate.id_no_zero:1|3'" in described and "include=throughput-performance" in described
    assert any(getattr(a, "argv", None) == ("tuned-adm", "profile", "rigaudit-performance") for a in fix.actions)
    assert fix.revert == "tuned-adm profile throughput-performance; rm -r /etc/tuned/rigaudit-performance"


def test_deep_cstates_without_tuned_stay_a_write_and_a_unit() -> None:
    from tests.hostgen.archetypes import ALL

    finding = by_check(ALL["hgx-h100-jammy"])["power.cstates"]
    assert finding.fix is not None and any(isinstance(a, SysfsWriteAction) for a in finding.fix.actions)
    assert "rigaudit-cstates" in finding.fix.persist


def test_deep_cstates_held_by_the_tuned_profile_power_cstates_proposed_are_ok() -> None:
    """Second review X1. Before: with its own fix applied (the child profile rigaudit-performance, [cpu] force_latency)
    the deep states are still enabled in sysfs (force_latency is a PM QoS hold, not a disable write), and the check
    said problem again, proposing the same profile: a fix that never converges. The hold is read from the active
    profile's settings, not from a list of profile names."""
    finding = by_check(faults.tuned_force_latency_child(RHEL))["power.cstates"]
    assert finding.status == "ok", (finding.status, finding.observed)
    assert "force_latency" in finding.observed and "rigaudit-performance" in finding.observed


def test_a_latency_profile_of_a_stopped_tuned_holds_nothing() -> None:
    """Second review X2. Before: ok ('tuned's latency-performance profile holds /dev/cpu_dma_latency') while tuned was
    stopped: only a running tuned holds the PM QoS request, so the deep states are entered."""
    latency = replace(RHEL, name=f"{RHEL.name}+latency", os=replace(RHEL.os, tuned="latency-performance"))
    assert by_check(latency)["power.cstates"].status == "ok"
    finding = by_check(faults.tuned_stopped(latency))["power.cstates"]
    assert (finding.status, finding.severity) == ("problem", "low"), finding.observed


def _cstates(spec: HostSpec) -> Finding:
    return audit_snapshot(POWER, snapshot(spec))["power.cstates"]


def test_a_numeric_force_latency_keeps_the_states_above_it_unused() -> None:
    """Fifth review W9. Before: low 'C6 (290 us) on cpu0-127 (enabled)' under tuned's packaged
    accelerator-performance, whose [cpu] force_latency=99 tuned holds on /dev/cpu_dma_latency: cpuidle never enters
    a state whose exit latency is above 99 us, so C6 is never used. Only a value up to 10 us counted as a hold."""
    finding = _cstates(faults.tuned_profile(RHEL, "accelerator-performance"))
    assert finding.status == "ok", (finding.status, finding.observed)
    assert "force_latency=99" in finding.observed and "above 99 us" in finding.observed, finding.observed


def test_a_numeric_force_latency_above_a_state_leaves_it_entered() -> None:
    """A held latency L keeps only the states above L out: C6 at 290 us under force_latency=300 is still entered."""
    finding = _cstates(faults.tuned_force_latency_child(RHEL, "300"))
    assert (finding.status, finding.severity) == ("problem", "low"), finding.observed
    assert finding.observed.startswith("C6 (290 us)"), finding.observed
    assert "force_latency=300" in finding.explanation and "at or below it" in finding.explanation
