"""Across the fleet: the check matrix, the hosts that differ from their peers, the grouped plan.

An outlier is a host whose value (a check's status, or a fingerprint fact) differs from a strict
majority of the hosts that have a value for it. With fewer than three such hosts nobody is the
odd one out, so nothing is named; a key without a majority value names nobody either.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from rigaudit.orchestrator.fleet.model import FleetFix, FleetResult, HostAudit, Outlier
from rigaudit.tools.model.events import FleetFinished
from rigaudit.tools.model.finding import Finding
from rigaudit.tools.model.plan import PlanStep

MIN_COMPARED = 3
_PRIORITY = {"P0": 0, "P1": 1, "P2": 2}


def status_matrix(audits: Sequence[HostAudit]) -> dict[str, dict[str, str]]:
    """check -> host -> status, checks in the order the audits report them."""
    matrix: dict[str, dict[str, str]] = {}
    for audit in audits:
        for finding in audit.result.findings:
            matrix.setdefault(finding.check, {})[audit.target] = finding.status
    return matrix


def _majority(values: dict[str, str]) -> tuple[str, int] | None:
    if len(values) < MIN_COMPARED:
        return None
    value, count = Counter(values.values()).most_common(1)[0]
    return (value, count) if count * 2 > len(values) else None


def _findings(audits: Sequence[HostAudit]) -> dict[tuple[str, str], Finding]:
    return {(a.target, f.check): f for a in audits for f in a.result.findings}


def outliers(audits: Sequence[HostAudit]) -> list[Outlier]:
    """Check-status outliers first (by check), then fact outliers (by fact), each by host."""
    found: list[Outlier] = []
    findings = _findings(audits)
    for check, statuses in status_matrix(audits).items():
        majority = _majority(statuses)
        if majority is None:
            continue
        usual, count = majority
        for host, status in statuses.items():
            if status != usual:
                finding = findings[(host, check)]
                detail = finding.observed or finding.title
                found.append(Outlier(host, "check", check, status, usual, count, len(statuses), detail, finding.severity))
    keys: list[str] = []
    for audit in audits:
        keys.extend(k for k in audit.facts if k not in keys)
    for key in keys:
        values = {a.target: a.facts[key] for a in audits if key in a.facts}
        majority = _majority(values)
        if majority is None:
            continue
        usual, count = majority
        found.extend(
            Outlier(host, "fact", key, value, usual, count, len(values)) for host, value in values.items() if value != usual
        )
    return found


def outliers_by_host(found: Sequence[Outlier]) -> dict[str, list[Outlier]]:
    """Outliers grouped by host: hosts with the fewest differences first (the odd node out, then
    hosts that differ on so much they are another kind of machine); facts before checks."""
    groups: dict[str, list[Outlier]] = {}
    for outlier in found:
        groups.setdefault(outlier.host, []).append(outlier)
    ordered = sorted(groups.items(), key=lambda item: len(item[1]))
    return {host: sorted(items, key=lambda o: o.kind != "fact") for host, items in ordered}


def _signature(step: PlanStep) -> str:
    fields = step.model_dump(mode="json", include={"check", "kind", "where", "title", "actions", "risk", "also_checks"})
    return json.dumps(fields, sort_keys=True)


def fleet_plan(audits: Sequence[HostAudit]) -> list[FleetFix]:
    """Identical plan steps (same check, fix and actions) grouped, with the hosts that need them."""
    groups: dict[str, tuple[PlanStep, list[str]]] = {}
    for audit in audits:
        for step in audit.result.plan.steps:
            key = _signature(step)
            if key not in groups:
                groups[key] = (step, [])
            first, hosts = groups[key]
            if _PRIORITY[step.priority] < _PRIORITY[first.priority]:
                groups[key] = (step, hosts)
            hosts.append(audit.target)
    fixes = [FleetFix(step, tuple(hosts)) for step, hosts in groups.values()]
    fixes.sort(key=lambda f: (f.step.kind != "runtime", _PRIORITY[f.step.priority], -len(f.hosts), f.step.check))
    return fixes


SUMMARY_SHOWN = 4
"""Outlier lines shown per host (the fleet report lists them all)."""


def fleet_finished(result: FleetResult, shown: int = SUMMARY_SHOWN) -> FleetFinished:
    """The event that sums a fleet result up: counts, every failure, a few differences per host."""
    by_host = outliers_by_host(result.outliers)
    lines: list[str] = []
    for host, found in by_host.items():
        lines += [outlier.line() for outlier in found[:shown]]
        if len(found) > shown:
            lines.append(f"{host} (+{len(found) - shown} more differences)")
    return FleetFinished(
        kind=result.kind,
        hosts=len(result.targets),
        audited=len(result.audits),
        failures=list(result.failures),
        differ=len(by_host),
        outliers=lines,
        fixes=len(result.plan),
        duration_s=result.duration_s,
        warnings=list(result.warnings),
    )
