"""An H100 confidential VM (the fourth review, C1-C3): GPUs in CC mode inside an Intel TDX guest. CC mode refuses P2P
by design and CUDA refuses every context until the CVM sets the GPUs ready. Before: p2p.status sent the refusal to the
hypervisor at high ('let peer-to-peer through'), and GPUs left not ready went unseen (the server held no memory and
no check said why)."""

from __future__ import annotations

from dataclasses import replace

from rigaudit.agents.facts.deliberate import CONFIDENTIAL_COMPUTING
from rigaudit.agents.investigators.driver import INVESTIGATOR as DRIVER
from rigaudit.tools.schema.finding import Finding
from tests.hostgen import faults
from tests.hostgen.cache import snapshot
from tests.hostgen.kinds import CVM_H100_CC
from tests.hostgen.spec import HostSpec
from tests.support.investigators import audit_snapshot
from tests.support.kinds import by_check, serious


def driver(spec: HostSpec) -> dict[str, Finding]:
    return audit_snapshot(DRIVER, snapshot(spec), evidence_read=True, problem_has_fix=True)


def test_the_cvm_answers_conf_compute_as_nvidia_smi_does() -> None:
    rows = (snapshot(CVM_H100_CC) / "commands.jsonl").read_text().splitlines()
    assert any("CC status: ON" in r for r in rows)
    assert any("Confidential Compute GPUs Ready state: ready" in r for r in rows)


def test_the_healthy_cvm_has_no_serious_problem_and_its_gpus_are_ready() -> None:
    assert serious(CVM_H100_CC) == {}
    found = by_check(CVM_H100_CC)["driver.confidential_computing"]
    assert found.status == "ok" and "set ready" in found.observed, found.observed


def test_cc_mode_refuses_p2p_by_design() -> None:
    """C1. Before: high @hypervisor, 'Let peer-to-peer through', a fix that cannot help and would leave CC."""
    found = by_check(CVM_H100_CC)["p2p.status"]
    assert found.status == "ok" and "confidential-computing mode" in found.observed, found.observed
    assert CONFIDENTIAL_COMPUTING.key in found.explanation and "PPCIe" in found.explanation


def test_gpus_never_set_ready_are_critical_and_attested_in_the_guest() -> None:
    """C2. cudaGetDeviceCount 802 until the ready state is set. Before: no check told it."""
    found = driver(faults.cc_not_ready(CVM_H100_CC))["driver.confidential_computing"]
    assert (found.status, found.severity) == ("problem", "critical"), found.observed
    assert found.fix is not None and found.fix.where == "host"
    assert ("nvidia-smi", "conf-compute", "-srs", "1") in [a.argv for a in found.fix.actions]


def test_devtools_mode_is_set_off_on_the_hypervisor() -> None:
    """C3. DevTools is a debugging CC mode, set per GPU on the host."""
    found = driver(faults.cc_devtools(CVM_H100_CC))["driver.confidential_computing"]
    assert (found.status, found.severity) == ("problem", "medium"), found.observed
    assert found.fix is not None and found.fix.where == "hypervisor"


def test_a_slow_p2p_benchmark_in_cc_mode_names_the_bounce_buffers_not_acs() -> None:
    """CC mode stages every copy between GPUs through encrypted bounce buffers. Before: high @hypervisor, 'find what
    slows the P2P path: ACS redirect, IOMMU translation, a degraded link', none of which is the cause."""
    from rigaudit.agents.investigators.p2p import INVESTIGATOR as P2P

    spec = faults.p2p_bench_result(CVM_H100_CC, 3.1, 3.0, access=False)
    found = audit_snapshot(P2P, snapshot(spec), evidence_read=True, problem_has_fix=True)["p2p.bandwidth"]
    assert (found.status, found.severity) == ("problem", "low"), found.observed
    assert "confidential-computing mode" in found.observed and "bounce buffer" in found.explanation
    assert found.fix is not None and "PPCIe" in found.fix.summary and "ACS" not in found.fix.summary
    outside = faults.p2p_bench_result(replace(CVM_H100_CC, driver=replace(CVM_H100_CC.driver, cc=None)), 3.1, 3.0)
    slow = audit_snapshot(P2P, snapshot(outside), evidence_read=True, problem_has_fix=True)["p2p.bandwidth"]
    assert (slow.status, slow.severity) == ("problem", "high") and "ACS" in (slow.fix.summary if slow.fix else "")
