"""Run investigators on a snapshot the way the audit does, with the invariants a test asks for.

Every run asserts the investigator's contract: exactly one finding per declared check, in declaration order,
each of the investigator's area. The other invariants are the caller's choice, named at each call:
``evidence_read`` (every cited evidence ref was read by this run's probe) and ``problem_has_fix`` (a finding has a
severity and a fix exactly when it is a problem).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio

from rigaudit.agents.investigator import AnyInvestigator
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.finding import Finding


def judged(investigator: AnyInvestigator, probe: Probe) -> list[Finding]:
    """Collect and judge once; assert one finding per declared check, in order, of the investigator's area."""
    findings = investigator.findings(anyio.run(investigator.collect, probe))
    assert investigator.contract_breaches(findings) == [], investigator.area
    return findings


def audit_snapshot(
    investigators: AnyInvestigator | Sequence[AnyInvestigator],
    root: Path,
    *,
    evidence_read: bool = False,
    problem_has_fix: bool = False,
    probe: Probe | None = None,
) -> dict[str, Finding]:
    """The findings of ``investigators`` on the snapshot at ``root``, by check id."""
    probe = probe or Probe(SnapshotHost(root))
    group = [investigators] if not isinstance(investigators, Sequence) else list(investigators)
    found: dict[str, Finding] = {}
    for investigator in group:
        for finding in judged(investigator, probe):
            if evidence_read:
                missing = [ref for ref in finding.evidence if ref not in probe.evidence]
                assert not missing, f"{finding.check} cites evidence it did not read: {missing}"
            if problem_has_fix:
                assert (finding.status == "problem") == (finding.severity is not None) == (finding.fix is not None), finding.check
            found[finding.check] = finding
    return found
