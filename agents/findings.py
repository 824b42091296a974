"""Small constructors that keep rule code short and findings consistent."""

from __future__ import annotations

from collections.abc import Iterable

from rigaudit.tools.schema.finding import Area, Finding, Fix, Severity, Status


def _finding(
    status: Status,
    check: str,
    area: Area,
    title: str,
    observed: str,
    *,
    subjects: Iterable[str],
    evidence: Iterable[str],
    expected: str = "",
    explanation: str = "",
    severity: Severity | None = None,
    fix: Fix | None = None,
) -> Finding:
    return Finding(
        check=check,
        area=area,
        status=status,
        severity=severity,
        title=title,
        observed=observed,
        expected=expected,
        explanation=explanation,
        fix=fix,
        subjects=tuple(subjects),
        evidence=tuple(evidence),
    )


def ok(
    check: str,
    area: Area,
    title: str,
    observed: str,
    *,
    expected: str = "",
    explanation: str = "",
    subjects: Iterable[str] = (),
    evidence: Iterable[str] = (),
) -> Finding:
    return _finding(
        "ok", check, area, title, observed, expected=expected, explanation=explanation, subjects=subjects, evidence=evidence
    )


def problem(
    check: str,
    area: Area,
    title: str,
    severity: Severity,
    observed: str,
    expected: str,
    explanation: str,
    fix: Fix | None,
    *,
    subjects: Iterable[str] = (),
    evidence: Iterable[str] = (),
) -> Finding:
    return _finding(
        "problem",
        check,
        area,
        title,
        observed,
        severity=severity,
        expected=expected,
        explanation=explanation,
        fix=fix,
        subjects=subjects,
        evidence=evidence,
    )


def unknown(
    check: str, area: Area, title: str, why: str, *, subjects: Iterable[str] = (), evidence: Iterable[str] = ()
) -> Finding:
    return _finding("unknown", check, area, title, why, explanation=why, subjects=subjects, evidence=evidence)


def not_applicable(check: str, area: Area, title: str, why: str, *, evidence: Iterable[str] = ()) -> Finding:
    return _finding("not_applicable", check, area, title, why, explanation=why, subjects=(), evidence=evidence)
