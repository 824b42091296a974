"""A host whose reads never return (a hung NFS mount, an NVML call stuck in the driver): every part of the audit
has its time limit, the baseline facts included, so the audit ends with what it has instead of hanging."""

from __future__ import annotations

from pathlib import Path

import anyio

from rigaudit.orchestrator.audit.run import AuditOptions, run_audit
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.audit import AuditResult

H200 = Path(__file__).parent / "fixtures" / "h200x2-vm"


def test_an_audit_of_a_host_that_never_answers_ends_at_its_time_limit() -> None:
    async def audit() -> AuditResult:
        host = SnapshotHost(H200, latency_s=3600.0)  # every read an hour away
        with anyio.fail_after(30):  # the guard of this test, far past the audit's own limit
            return await run_audit(host, options=AuditOptions(timeout_s=0.5))

    result = anyio.run(audit)
    assert {r.status for r in result.investigators} == {"timeout"}
    assert any(w.startswith("baseline facts incomplete: no answer within 0.5 s") for w in result.warnings), result.warnings
