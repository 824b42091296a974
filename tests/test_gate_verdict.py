"""The gate's judgement, on made-up findings: what decides, what the reason line says."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.findings import ok, problem, unknown
from rigaudit.orchestrator.gate.selection import Selection, select
from rigaudit.orchestrator.gate.verdict import MAX_REASON, judge_checks, reason_line, verdict_of
from rigaudit.tools.schema.audit import InvestigatorRun
from rigaudit.tools.schema.finding import Finding, Fix

CHECKS = tuple(
    Check(f"{area}.{name}", f"{area} {name}", reads="r", problem="p", fix="f", kinds=("runtime",))
    for area, name in (("pcie", "link"), ("pcie", "aer"), ("gpu", "xid"), ("nvlink", "links"), ("nvlink", "errors"))
)
FIX = Fix(kind="runtime", where="host", summary="fix it")


def bad(check: str, severity: str, observed: str = "seen") -> Finding:
    area = check.split(".", maxsplit=1)[0]
    return problem(check, area, check, severity, observed, "e", "x", FIX)  # type: ignore[arg-type]


def good(check: str) -> Finding:
    return ok(check, check.split(".", maxsplit=1)[0], check, "fine")


def runs(**status: str) -> list[InvestigatorRun]:
    return [InvestigatorRun(area=a, status=s, duration_s=0.1, error="boom" if s == "failed" else None) for a, s in status.items()]  # type: ignore[arg-type]


def judge(findings: list[Finding], run: list[InvestigatorRun], selection: Selection | None = None, **kw: object):  # type: ignore[no-untyped-def]
    checks = judge_checks(selection or Selection(CHECKS), findings, run, fail_on="high", deadline_s=20, **kw)  # type: ignore[arg-type]
    verdict, code = verdict_of(checks)
    return checks, verdict, code, reason_line(checks, verdict, "high")


ALL_DONE = runs(pcie="done", gpu="done", nvlink="done")


def test_a_problem_decides_even_when_another_area_could_not_be_checked() -> None:
    findings = [bad("pcie.link", "high"), good("pcie.aer"), bad("gpu.xid", "critical", "Xid 79 on GPU2")]
    checks, verdict, code, reason = judge(findings, runs(pcie="done", gpu="done", nvlink="timeout"))
    assert (verdict, code) == ("problem", 1)
    assert reason == "gpu.xid critical, pcie.link high: Xid 79 on GPU2"  # worst first
    assert {c.check: c.status for c in checks}["nvlink.links"] == "not_checked"


def test_could_not_check_groups_areas_by_why() -> None:
    findings = [good("pcie.link"), good("pcie.aer"), bad("gpu.xid", "medium")]
    _, verdict, code, reason = judge(findings, runs(pcie="done", gpu="done", nvlink="failed"))
    assert (verdict, code) == ("could_not_check", 3)
    assert reason == "could not check: nvlink (failed: boom)"
    _, _, _, reason = judge(findings, runs(pcie="done", gpu="done", nvlink="cancelled"), stopped=True)
    assert reason == "could not check: nvlink (no answer within the 20 s deadline)"


def test_below_the_threshold_and_unknown_do_not_decide() -> None:
    findings = [bad("pcie.link", "medium"), unknown("pcie.aer", "pcie", "aer", "not readable")]
    findings += [good("gpu.xid"), good("nvlink.links"), good("nvlink.errors")]
    _, verdict, code, reason = judge(findings, ALL_DONE)
    assert (verdict, code) == ("healthy", 0)
    assert reason == "healthy: no problem at or above high in 5 checks (1 below high, 1 unknown)"
    _, verdict, code, reason = judge(findings, ALL_DONE, strict=True)
    assert (verdict, code, reason) == ("could_not_check", 3, "could not check: pcie.aer (not readable)")


def test_only_selected_checks_count() -> None:
    findings = [bad("pcie.link", "critical"), good("pcie.aer"), good("gpu.xid")]
    selection = select(CHECKS, only="gpu,pcie.aer")
    checks, verdict, code, _ = judge(findings, runs(pcie="done", gpu="done"), selection)
    assert [c.check for c in checks] == ["pcie.aer", "gpu.xid"]
    assert (verdict, code) == ("healthy", 0)


def test_the_reason_is_one_bounded_line() -> None:
    findings = [bad(c.id, "high", "line one\nline\ttwo \x1b[31m" + "x" * 400) for c in CHECKS]
    _, _, _, reason = judge(findings, ALL_DONE)
    assert "\n" not in reason and "\x1b" not in reason and len(reason) <= MAX_REASON
    assert reason.startswith("pcie.link high, pcie.aer high, gpu.xid high, nvlink.links high, +1 more: line one line two")
