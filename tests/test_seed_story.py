"""The seed host (the story's 8x RTX PRO 6000 Proxmox box) is judged exactly as an expert would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rigaudit.agents.registry import all_investigators
from rigaudit.tools.schema.audit import AuditResult
from tests.support.audits import audited

AREAS = ("firmware", "kernel", "numa", "pcie", "driver", "cuda", "gpu", "power", "p2p", "nccl", "nvlink", "container", "runtime")
"""Every area, in catalog order: the order ``rigaudit checks``, the report and the JSON list them in."""
EXPECTED_PROBLEMS = {"numa.balancing", "pcie.mrrs", "power.scaling_driver"}
"""At medium and above. power.cstates is low: no server is visible, so the batch-1 premise of its medium is unread."""
EXPECTED_OK = {"kernel.iommu", "pcie.link", "firmware.rebar", "gpu.thermals", "power.governor", "pcie.acs", "p2p.status"}


@pytest.fixture(scope="module")
def seed_result() -> AuditResult:
    from tests.conftest import SEED

    return audited(SEED)


def test_every_area_has_an_investigator() -> None:
    assert [inv.area for inv in all_investigators()] == list(AREAS)


def test_problems_are_exactly_what_matters(seed_result: AuditResult) -> None:
    serious = {f.check for f in seed_result.findings if f.status == "problem" and f.severity in ("critical", "high", "medium")}
    assert serious == EXPECTED_PROBLEMS
    status = {f.check: f.status for f in seed_result.findings}
    assert {c for c in EXPECTED_OK if status.get(c) != "ok"} == set()
    assert status["driver.peermem"] == "not_applicable"
    assert all(r.status == "done" for r in seed_result.investigators)


def test_one_finding_per_check_and_evidence_is_cited(seed_result: AuditResult) -> None:
    checks = [f.check for f in seed_result.findings]
    assert len(checks) == len(set(checks))
    declared = {c for inv in all_investigators() for c in inv.check_ids}
    assert set(checks) == declared
    cited = {e.ref for e in seed_result.evidence}
    for finding in seed_result.findings:
        if finding.status in ("problem", "ok"):
            assert finding.evidence, finding.check
            assert set(finding.evidence) <= cited, finding.check
        if finding.status == "unknown":
            assert finding.observed, f"{finding.check}: unknown without a reason"


def test_plan_ranked_by_what_each_step_buys(seed_result: AuditResult) -> None:
    plan = seed_result.plan
    fixes = [s for s in plan.steps if s.kind != "measure"]
    assert [s.id for s in fixes] == ["numa.balancing", "power.scaling_driver", "power.cstates", "pcie.mrrs"]
    assert [s.priority for s in fixes] == ["P1", "P1", "P2", "P2"]  # power.cstates low here: its gain is capped
    mrrs = fixes[-1]
    assert mrrs.gain is not None and all(mrrs.gain.low <= s.gain.low for s in fixes[:-1] if s.gain)
    assert "0-2% of decode time at batch 1" in mrrs.gain.why
    assert "power.scaling_driver" in {s.id for s in plan.deferred_steps}
    mrrs = next(s for s in plan.steps if s.id == "pcie.mrrs")
    action = mrrs.actions[0].model_dump()
    assert (action["capability"], action["offset"], action["value"], action["mask"]) == ("exp", 8, 0x5000, 0x7000)
    assert len(action["devices"]) == 8


def test_cli_audit_report_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The command in this process (the process itself: test_bad_snapshot_is_one_line_exit_2)."""
    from rigaudit.orchestrator.cli import main
    from tests.conftest import SEED

    report, out = tmp_path / "system-improve.md", tmp_path / "audit.json"
    argv = ["audit", "--snapshot", str(SEED), "--no-live", "--report", str(report), "--json", str(out)]
    code = main([*argv, "--transcript", str(tmp_path / "t.jsonl"), "--fail-on", "medium"])
    assert code == 1, capsys.readouterr().err
    data = json.loads(out.read_text())
    assert data["schema"] == "rigaudit.audit/1"
    assert {f["check"] for f in data["findings"] if f["status"] == "problem" and f["severity"] == "medium"} == EXPECTED_PROBLEMS
    text = report.read_text()
    assert "## Baseline state" in text and "RTX PRO 6000" in text
    steps = text[text.index("### Steps, in order") : text.index("## Applied changes")]
    assert "kernel.numa_balancing=0" in steps and "CAP_EXP+0x8.w=5000:7000" in steps and "amd_pstate=active" in steps


def test_bad_snapshot_is_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "snapshot.json").write_text('{"format": "rigaudit.snapshot/9"}')
    proc = subprocess.run(
        [sys.executable, "-m", "rigaudit", "audit", "--snapshot", str(tmp_path), "--no-transcript"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "rigaudit.snapshot/9" in proc.stderr
    assert "Traceback" not in proc.stderr
