"""kernel.grace_boot: a boot option NVIDIA's Grace tuning guide recommends that no rule read (init_on_alloc=0),
judged by what the kernel says it does (its 'mem auto-init' line)."""

from __future__ import annotations

from rigaudit.agents.investigators.kernel import INVESTIGATOR
from rigaudit.tools.model.finding import Finding
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
