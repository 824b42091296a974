"""Measure first: an audit with unknowns (the server in a container, no load, no P2P benchmark) starts its plan
with the measurements that decide them, and marks the steps whose gain they decide."""

from __future__ import annotations

import pytest

from rigaudit.orchestrator.plan.planner import build_plan
from rigaudit.orchestrator.report.document import render_report
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.finding import Finding, Fix, SysctlAction
from tests.conftest import SEED
from tests.support.audits import audited


@pytest.fixture(scope="module")
def seed() -> AuditResult:
    return audited(SEED)


def test_the_seed_plan_starts_with_the_measurements_that_decide_its_unknowns(seed: AuditResult) -> None:
    steps = seed.plan.steps
    measured = [s for s in steps if s.kind == "measure"]
    assert [s.id for s in steps[: len(measured)]] == ["measure.container", "measure.p2p", "measure.nccl"]
    unknown = {f.check for f in seed.findings if f.status == "unknown"}
    container = measured[0]
    assert set(container.also_checks) <= unknown and {"container.shm", "runtime.env"} <= set(container.also_checks)
    assert ("pct", "exec", "101", "--", "rigaudit", "audit", "--json", "audit-ct101.json") in [
        getattr(a, "argv", ()) for a in container.actions
    ]
    assert measured[1].also_checks == ("p2p.bandwidth",)
    cstates = seed.plan.step("power.cstates")
    assert cstates is not None and ("measured_by", "measure.container") in [(e.kind, e.step) for e in cstates.edges]
    mrrs = seed.plan.step("pcie.mrrs")
    assert mrrs is not None and "measure.p2p" in [e.step for e in mrrs.edges if e.kind == "measured_by"]


def test_the_report_says_what_is_measured_first_and_what_each_step_waits_for(seed: AuditResult) -> None:
    text = render_report(seed)
    plan = text[text.index("## Plan") : text.index("## Applied changes")]
    assert plan.index("### Measure first") < plan.index("### Steps, in order")
    assert "pct exec 101 -- rigaudit audit --json audit-ct101.json" in plan
    assert "- Waits for: decided by measure.container" in plan
    opening = text[: text.index("## Baseline state")]
    assert "the plan can buy: 4 step(s) together" in opening and "Measure first (`measure.container`" in opening
    assert "The gap itself was not measured here" in opening


def _unknown(check: str, observed: str) -> Finding:
    return Finding(check=check, area=check.split(".", maxsplit=1)[0], status="unknown", title=check, observed=observed)


def _numa() -> Finding:
    fix = Fix(kind="runtime", where="host", summary="numa off", actions=(SysctlAction(key="kernel.numa_balancing", value="0"),))
    return Finding(check="numa.balancing", area="numa", status="problem", severity="medium", title="numa", fix=fix)


def test_no_server_on_a_host_without_containers_asks_for_an_audit_under_load() -> None:
    plan, _ = build_plan([_numa(), _unknown("runtime.env", "no inference server process found")], {"gpus": "2 x H200"})
    assert [s.id for s in plan.steps] == ["measure.load", "numa.balancing"]
    assert plan.steps[1].edges[0].step == "measure.load"


def test_nothing_unknown_means_nothing_to_measure_first() -> None:
    measured = _unknown("p2p.bandwidth", "needs the P2P micro-benchmark: run `rigaudit bench p2p`")
    ok = measured.model_copy(update={"status": "ok", "observed": "28 pairs: 40 GB/s"})
    assert [s.id for s in build_plan([_numa(), measured], {"gpus": "8 x H200"})[0].steps] == [
        "measure.p2p",
        "measure.nccl",
        "numa.balancing",
    ]
    plan, _ = build_plan([_numa(), ok], {"gpus": "8 x H200"})
    assert [s.id for s in plan.steps] == ["numa.balancing"] and plan.steps[0].edges == ()


def test_an_unknown_only_a_new_snapshot_can_decide_asks_for_no_measurement() -> None:
    plan, _ = build_plan([_numa(), _unknown("gpu.app_clocks", "nvmlDeviceGetApplicationsClock: not recorded in this snapshot")])
    assert [s.id for s in plan.steps] == ["numa.balancing"]


def test_inside_a_pod_the_host_side_unknowns_ask_for_an_audit_of_the_node() -> None:
    from tests.hostgen import ARCHETYPES

    result = audited(ARCHETYPES["k8s-pod-h100"])
    node = result.plan.step("measure.node")
    assert node is not None and node.where == "container_host" and "driver.dkms" in node.also_checks
    assert result.plan.step("measure.container") is None  # the audit already ran inside it
    assert result.plan.steps[0].id == "measure.node"
