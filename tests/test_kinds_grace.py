"""kernel.grace_boot: a boot option NVIDIA's Grace tuning guide recommends that no rule read (init_on_alloc=0),
judged by what the kernel says it does (its 'mem auto-init' line)."""

from __future__ import annotations

from rigaudit.agents.investigators.kernel import INVESTIGATOR
from rigaudit.agents.investigators.numa import INVESTIGATOR as NUMA
from rigaudit.tools.schema.finding import Finding
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.cache import snapshot
from tests.hostgen.spec import HostSpec
from tests.support.investigators import audit_snapshot

GH200 = ARCHETYPES["gh200-node"]


def grace_boot(spec: HostSpec) -> Finding:
    return audit_snapshot(INVESTIGATOR, snapshot(spec), evidence_read=True, problem_has_fix=True)["kernel.grace_boot"]


def test_gh200_with_the_guides_boot_line_is_ok() -> None:
    found = grace_boot(GH200)
    assert found.status == "ok" and "heap alloc zeroing off" in found.observed, found.observed


def test_gh200_zeroing_every_allocation_is_the_low() -> None:
    found = grace_boot(faults.init_on_alloc_default(GH200))
    assert (found.status, found.severity) == ("problem", "low"), found.observed
    assert found.fix is not None and "init_on_alloc=0" in found.fix.summary
    assert "grace-cpu-benchmarking-guide" in found.explanation


def test_not_grace_is_not_applicable() -> None:
    assert grace_boot(ARCHETYPES["hgx-h100-jammy"]).status == "not_applicable"


def test_numa_balancing_left_on_on_grace_is_told_with_the_gpus_memory_node() -> None:
    """NVIDIA's Grace guide boots with numa_balancing=disable; on GH200 the GPU's HBM is a CPU-less NUMA node, so
    the balancing also moves the server's pages between CPU and GPU memory. Before: the generic explanation."""
    found = audit_snapshot(NUMA, snapshot(faults.numa_balancing_on(GH200)), evidence_read=True, problem_has_fix=True)
    balancing = found["numa.balancing"]
    assert (balancing.status, balancing.severity) == ("problem", "medium"), balancing.observed
    assert "node 1" in balancing.explanation and "GPU" in balancing.explanation
    assert "grace-cpu-benchmarking-guide" in balancing.explanation
    assert balancing.fix is not None and "numa_balancing=disable" in balancing.fix.summary


def test_numa_balancing_elsewhere_keeps_the_general_reason() -> None:
    found = audit_snapshot(NUMA, snapshot(faults.numa_balancing_on(ARCHETYPES["hgx-h100-jammy"])))["numa.balancing"]
    assert found.status == "problem" and "grace" not in found.explanation.lower()
