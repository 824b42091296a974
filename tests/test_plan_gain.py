"""What a whole plan can buy: its steps' gains compounded, stability fixes apart, against the measured gap."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.plan.planner import build_plan
from rigaudit.orchestrator.plan.text import plan_gain, plan_opening
from rigaudit.tools.schema.audit import AuditResult, HostSummary
from rigaudit.tools.schema.finding import Finding, Fix, Gain, SysctlAction


def _problem(check: str, low: float, high: float, of: str = "throughput", severity: str = "medium") -> Finding:
    fix = Fix(
        kind="runtime",
        where="host",
        summary=check,
        actions=(SysctlAction(key=f"vm.{check.split('.', 1)[1]}", value="1"),),
        gain=Gain(low=low, high=high, why="test", of=of),  # type: ignore[arg-type]
    )
    return Finding(check=check, area="numa", status="problem", severity=severity, title=check, fix=fix)  # type: ignore[arg-type]


def test_gains_compound_and_stability_fixes_stand_apart() -> None:
    plan, _ = build_plan(
        [_problem("numa.a", 10, 20), _problem("numa.b", 10, 50), _problem("numa.c", 0, 0, "stability", "critical")]
    )
    gain = plan_gain(plan)
    assert (gain.low, gain.high) == (21.0, 80.0)
    assert gain.stability == ("numa.c",) and set(gain.counted) == {"numa.a", "numa.b"}
    text = plan_opening(plan, markdown=False)
    assert "numa.c fix failures" in text and "2 step(s) together 21-80% of throughput" in text
    assert "The gap itself was not measured here" in text


def test_roofline_says_what_the_plan_buys_against_the_measured_gap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    findings = [_problem("numa.a", 2, 10), _problem("numa.b", 1, 5)]
    plan, _ = build_plan(findings)
    audit = AuditResult(
        host=HostSummary(name="h", source="local"), started_at="t", duration_s=1, findings=tuple(findings), plan=plan
    )
    path = tmp_path / "audit.json"
    path.write_text(audit.model_dump_json(by_alias=True))
    argv = ["roofline", "--params-b", "40", "--bytes-per-param", "1.16", "--gpus", "8", "--gpu-model", "RTX PRO 6000"]
    assert main([*argv, "--measured-tok-s", "10", "--plan", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "the plan: 2 step(s) buy 3-15.5%, to 10.3-11.6 tok/s of" in out and "lies in the serving software" in out
