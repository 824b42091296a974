"""Audits of generated host kinds, made once per test session and shared by the tests/test_kinds_*.py files."""

from __future__ import annotations

import functools

import anyio

from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.model.audit import AuditResult
from rigaudit.tools.model.finding import Finding
from tests.hostgen.cache import snapshot
from tests.hostgen.spec import HostSpec

SERIOUS = ("medium", "high", "critical")


@functools.cache
def audited(spec: HostSpec) -> AuditResult:
    """The full audit of ``spec``'s snapshot (once per session: specs are frozen and hashable)."""
    return anyio.run(lambda: run_audit(SnapshotHost(snapshot(spec))))


def by_check(spec: HostSpec) -> dict[str, Finding]:
    return {f.check: f for f in audited(spec).findings}


def serious(spec: HostSpec) -> dict[str, str]:
    """Problems at medium or above: check -> severity@layer."""
    return {
        f.check: f"{f.severity}@{f.fix.where if f.fix else '?'}"
        for f in audited(spec).findings
        if f.status == "problem" and f.severity in SERIOUS
    }
