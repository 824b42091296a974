"""A GPU link capped by its port: a BIOS setting on a CPU with faster lanes, nothing to set on a CPU without them
(the sixth review's H2: H100 PCIe at Gen4 on Ice Lake-SP, whose root ports are PCIe 4.0)."""

from __future__ import annotations

from dataclasses import replace

from rigaudit.agents.investigators.pcie import INVESTIGATOR as PCIE
from tests.hostgen import faults
from tests.hostgen.archetypes import XEON_6338
from tests.hostgen.cache import snapshot
from tests.hostgen.kinds import KINDS
from tests.support.investigators import audit_snapshot

CAPPED = faults.ports_capped(KINDS["mps-h100pcie-replicas"], gen=4)


def test_a_gen4_cap_on_a_gen5_cpu_is_the_bios_setting() -> None:
    finding = audit_snapshot(PCIE, snapshot(CAPPED), problem_has_fix=True)["pcie.link"]
    assert (finding.status, finding.severity) == ("problem", "medium"), finding.observed
    assert finding.fix is not None and "BIOS" in finding.fix.summary


def test_a_gen4_cap_on_an_ice_lake_cpu_is_the_platform_s_with_nothing_to_set() -> None:
    icelake = replace(CAPPED, name=CAPPED.name + "+icelake", cpu=XEON_6338)
    finding = audit_snapshot(PCIE, snapshot(icelake), problem_has_fix=True)["pcie.link"]
    assert (finding.status, finding.severity) == ("problem", "low"), finding.observed
    assert finding.fix is not None and finding.fix.summary.startswith("Nothing to set")
    assert "Ice Lake-SP" in finding.explanation and "BIOS" not in finding.fix.summary


def test_persistence_off_seen_from_a_pod_names_both_ways_the_node_may_run_its_daemon() -> None:
    """The sixth review's H4: a pod cannot see whether the node's nvidia-persistenced is a host unit or the GPU
    Operator's driver container's, so the fix says both."""
    from rigaudit.agents.investigators.driver import INVESTIGATOR as DRIVER
    from tests.hostgen import ARCHETYPES

    finding = audit_snapshot(DRIVER, snapshot(faults.persistence_off(ARCHETYPES["k8s-pod-h100"])))["driver.persistence"]
    assert finding.status == "problem" and finding.fix is not None, finding.observed
    steps = " ".join(getattr(a, "description", "") for a in finding.fix.actions)
    assert "GPU Operator" in finding.fix.summary and "nvidia-driver-daemonset" in steps
