"""Audits of generated host kinds, made once per test session and shared by the tests/test_kinds_*.py files."""

from __future__ import annotations

from rigaudit.tools.schema.finding import Finding
from tests.hostgen.spec import HostSpec
from tests.support.audits import audited

SERIOUS = ("medium", "high", "critical")


def by_check(spec: HostSpec) -> dict[str, Finding]:
    return {f.check: f for f in audited(spec).findings}


def serious(spec: HostSpec) -> dict[str, str]:
    """Problems at medium or above: check -> severity@layer."""
    return {
        f.check: f"{f.severity}@{f.fix.where if f.fix else '?'}"
        for f in audited(spec).findings
        if f.status == "problem" and f.severity in SERIOUS
    }
