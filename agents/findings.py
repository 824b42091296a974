"""Small constructors that keep rule code short and findings consistent."""

from __future__ import annotations

from collections.abc import Iterable

from rigaudit.tools.model.finding import Area, Finding, Fix, Severity


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
    return Finding(
        check=check,
        area=area,
        status="ok",
        title=title,
        observed=observed,
        expected=expected,
        explanation=explanation,
        subjects=tuple(subjects),
        evidence=tuple(evidence),
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
    return Finding(
        check=check,
        area=area,
        status="problem",
        severity=severity,
        title=title,
        observed=observed,
        expected=expected,
        explanation=explanation,
        fix=fix,
        subjects=tuple(subjects),
        evidence=tuple(evidence),
    )


def unknown(
    check: str, area: Area, title: str, why: str, *, subjects: Iterable[str] = (), evidence: Iterable[str] = ()
) -> Finding:
    return Finding(
        check=check,
        area=area,
        status="unknown",
        title=title,
        observed=why,
        explanation=why,
        subjects=tuple(subjects),
        evidence=tuple(evidence),
    )


def not_applicable(check: str, area: Area, title: str, why: str, *, evidence: Iterable[str] = ()) -> Finding:
    return Finding(
        check=check, area=area, status="not_applicable", title=title, observed=why, explanation=why, evidence=tuple(evidence)
    )
