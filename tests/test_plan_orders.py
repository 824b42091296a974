"""The unsafe orders an expert would refuse, on generated hosts: the audit's plan puts each step after what it
waits for, and apply does not run a step whose prerequisite has not happened.

- a runtime ACS clear before the reboot that puts the IOMMU in passthrough;
- "start the fabric manager" before the step that installs the version it needs;
- after a driver upgrade without a reboot, a fabric manager matched to the stale loaded module (the plan: the
  reboot first, then the fabric manager of the driver that loads);
- "iommu=pt also resolves p2p.status" on GPUs that have no P2P at all.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

import anyio

from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.orchestrator.change.apply import ApplyOptions, ApplyReport, apply_plan
from rigaudit.orchestrator.change.approval import StepApprover
from rigaudit.orchestrator.fleet.analysis import fleet_plan
from rigaudit.orchestrator.fleet.report import render_fleet_report
from rigaudit.orchestrator.fleet.result import FleetResult, HostAudit
from rigaudit.orchestrator.plan.planner import build_plan
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.finding import Finding, Fix
from rigaudit.tools.schema.plan import Plan, StepEdge
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.cache import snapshot
from tests.hostgen.spec import HostSpec
from tests.support.apply import MemoryHost
from tests.test_fleet_plan_order import fix_index, keeps_every_graph

LOADED, INSTALLED = "550.127.05", "550.144.03"


@cache
def _audit(spec: HostSpec) -> AuditResult:
    root = snapshot(spec)
    return anyio.run(lambda: run_audit(SnapshotHost(root)))


def _ids(plan: Plan) -> list[str]:
    return [s.id for s in plan.steps]


def _before(plan: Plan, first: str, then: str) -> bool:
    return _ids(plan).index(first) < _ids(plan).index(then)


def _apply(plan: Plan, tmp_path: Path) -> ApplyReport:
    """Apply with every step approved, on a host with nothing in it (a blocked step reads nothing)."""
    approver = StepApprover(plan.digest(), assume_yes=True, interactive=False, who="t@h")

    async def main() -> ApplyReport:
        return await apply_plan(
            MemoryHost({}), plan, approver=approver, journal_path=tmp_path / "j.jsonl", options=ApplyOptions()
        )

    return anyio.run(main)


def _only(plan: Plan, *ids: str) -> Plan:
    return Plan(steps=tuple(s for s in plan.steps if s.id in ids))


def test_acs_is_cleared_only_after_the_reboot_that_puts_the_iommu_in_passthrough(tmp_path: Path) -> None:
    plan = _audit(faults.iommu_translated(ARCHETYPES["hgx-h200-noble"])).plan
    acs, iommu = plan.step("pcie.acs"), plan.step("kernel.iommu")
    assert acs is not None and iommu is not None and acs.kind == "runtime" and iommu.kind == "reboot"
    assert _before(plan, "kernel.iommu", "pcie.acs")
    assert [e.step for e in acs.waits_for()] == ["kernel.iommu"] and acs.waits_for()[0].kind == "not_before"
    assert "iommu.passthrough" in iommu.provides
    report = _apply(_only(plan, "kernel.iommu", "pcie.acs"), tmp_path)
    status = {s.step.id: (s.status, s.reason) for s in report.steps}
    assert status["kernel.iommu"][0] == "deferred"
    assert status["pcie.acs"][0] == "blocked" and "unsafe before kernel.iommu" in status["pcie.acs"][1]


def test_in_a_fleet_the_acs_clear_still_follows_the_iommu_reboot() -> None:
    # the fleet plan used to sort runtime steps first: the clear before the reboot, on every host that needs both
    h200 = ARCHETYPES["hgx-h200-noble"]
    translated, redirect = _audit(faults.iommu_translated(h200)), _audit(faults.acs_redirect(h200))
    audits = [HostAudit(t, "replay", r, {}, 0.0, 0.0) for t, r in (("n1", translated), ("n2", translated), ("n3", redirect))]
    acs, iommu = translated.plan.step("pcie.acs"), translated.plan.step("kernel.iommu")
    assert acs is not None and iommu is not None and (acs.kind, iommu.kind) == ("runtime", "reboot")
    plan = fleet_plan(audits)
    keeps_every_graph(plan, audits)
    clear, reboot = fix_index(plan, "n1", acs), fix_index(plan, "n1", iommu)
    assert reboot < clear and not plan[clear].unordered
    wait = next(w for w in plan[clear].waits if w.fix == reboot + 1)
    assert wait.kind == "not_before" and wait.hosts == ("n1", "n2")  # n3's IOMMU is passthrough already
    assert sum(len(f.hosts) for f in plan) == sum(len(a.result.plan.steps) for a in audits)
    report = render_fleet_report(FleetResult(("n1", "n2", "n3"), tuple(audits), (), {}, (), tuple(plan), "t", 0.0, "replay"))
    on = "" if plan[clear].hosts == ("n1", "n2") else " on n1, n2"
    assert f"   - Order: unsafe before fix {reboot + 1}{on}" in report


def test_acs_alone_waits_for_nothing_when_the_iommu_is_already_passthrough() -> None:
    plan = _audit(faults.acs_redirect(ARCHETYPES["hgx-h200-noble"])).plan
    acs = plan.step("pcie.acs")
    assert acs is not None and plan.step("kernel.iommu") is None and acs.waits_for() == ()


def _fm_mismatch() -> HostSpec:
    spec = faults.fabricmanager_down(ARCHETYPES["hgx-h100-jammy"])
    return replace(spec, driver=replace(spec.driver, fabricmanager_version="550.90.07"), name=spec.name + "+fm-550.90")


def test_the_fabric_manager_starts_only_after_the_version_it_needs_is_installed(tmp_path: Path) -> None:
    plan = _audit(_fm_mismatch()).plan
    start, install = plan.step("driver.fabricmanager"), plan.step("driver.fabricmanager_version")
    assert start is not None and install is not None
    assert _before(plan, "driver.fabricmanager_version", "driver.fabricmanager")
    assert StepEdge(kind="requires", step="driver.fabricmanager_version", why=start.edges[0].why) in start.edges
    assert install.priority == start.priority == "P0"  # what a P0 step waits for is P0 too
    report = _apply(_only(plan, "driver.fabricmanager", "driver.fabricmanager_version"), tmp_path)
    status = {s.step.id: (s.status, s.reason) for s in report.steps}
    assert status["driver.fabricmanager"][0] == "blocked"
    assert "waits for driver.fabricmanager_version, which needs a restart" in status["driver.fabricmanager"][1]


def _upgraded_fm_held() -> HostSpec:
    spec = ARCHETYPES["hgx-h100-upgraded-no-reboot"]
    return replace(spec, driver=replace(spec.driver, fabricmanager_version=LOADED), name=spec.name + "+fm-held")


def test_after_an_upgrade_without_reboot_the_reboot_comes_first_then_the_new_fabric_manager() -> None:
    result = _audit(_upgraded_fm_held())
    plan = result.plan
    finding = next(f for f in result.findings if f.check == "driver.fabricmanager_version")
    assert finding.status == "problem" and INSTALLED in finding.expected
    fm = plan.step("driver.fabricmanager_version")
    assert fm is not None and INSTALLED in fm.title and f"nvidia-fabricmanager {INSTALLED}" in str(fm.actions)
    assert f"nvidia-fabricmanager {LOADED}" not in str(fm.actions)
    reboots = [s for s in plan.steps if "driver.reloaded" in s.provides]
    assert len(reboots) == 1, "one reboot, the steps it fixes merged into it"
    assert {"driver.fabricmanager", "driver.library_mismatch"} <= {reboots[0].check, *reboots[0].also_checks}
    assert _before(plan, reboots[0].id, "driver.fabricmanager_version")
    assert fm.waits_for()[0] == StepEdge(kind="not_before", step=reboots[0].id, why=fm.waits_for()[0].why)


def test_when_the_fabric_manager_was_upgraded_with_the_driver_only_the_reboot_is_planned() -> None:
    result = _audit(ARCHETYPES["hgx-h100-upgraded-no-reboot"])
    assert next(f for f in result.findings if f.check == "driver.fabricmanager_version").status == "ok"
    assert result.plan.step("driver.fabricmanager_version") is None


def test_iommu_pt_never_claims_p2p_on_gpus_without_p2p() -> None:
    result = _audit(faults.iommu_translated(ARCHETYPES["geforce-4x4090"]))
    assert next(f for f in result.findings if f.check == "p2p.status").status == "not_applicable"
    iommu = result.plan.step("kernel.iommu")
    assert iommu is not None and not any(c.startswith("p2p.") for c in iommu.also_checks)
    assert iommu.gain is not None and iommu.gain.high <= 3
    # even a measured "slow P2P" on such GPUs (host-staged by design) is not claimed by iommu=pt
    slow = Finding(
        check="p2p.bandwidth",
        area="p2p",
        status="problem",
        severity="high",
        title="p2p bandwidth",
        fix=Fix(kind="reboot", where="host", summary="find what slows the P2P path"),
    )
    plan, _ = build_plan([*(f for f in result.findings if f.check != "p2p.bandwidth"), slow])
    assert "p2p.bandwidth" in _ids(plan)
    assert all("p2p.bandwidth" not in s.also_checks for s in plan.steps)


def test_p2p_status_joins_the_step_its_cause_names_and_no_other() -> None:
    result = _audit(faults.iommu_translated(ARCHETYPES["hgx-h200-noble"]))
    status = next(f for f in result.findings if f.check == "p2p.status")
    if status.status == "problem":  # refused pairs: the rule names the steps that let them through
        assert status.fix is not None and {e.check for e in status.fix.edges} <= {"kernel.iommu", "pcie.acs"}
    assert all(c == "p2p.bandwidth" or not c.startswith("p2p.") for s in result.plan.steps for c in s.also_checks)
