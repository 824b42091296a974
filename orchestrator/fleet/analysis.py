"""Across the fleet: the check matrix, the hosts that differ from their peers, the grouped plan.

An outlier is a host whose value (a check's status, or a fingerprint fact) differs from a strict
majority of the hosts that have a value for it. With fewer than three such hosts nobody is the
odd one out, so nothing is named; a key without a majority value names nobody either.
"""

from __future__ import annotations

import heapq
import json
from collections import Counter
from collections.abc import Sequence

from rigaudit.orchestrator.fleet.result import FleetFix, FleetResult, FleetWait, HostAudit, Outlier
from rigaudit.tools.schema.events.fleet import FleetFinished, HostFailure
from rigaudit.tools.schema.finding import Finding
from rigaudit.tools.schema.plan import PlanStep, StepEdgeKind

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


Groups = dict[str, tuple[PlanStep, list[str]]]
Waits = dict[str, dict[tuple[str, StepEdgeKind], list[str]]]


def _group(audits: Sequence[HostAudit]) -> tuple[Groups, Waits]:
    """(signature -> the step and the hosts that need it; signature -> (other signature, edge kind) -> hosts):
    each host's edges between its own steps, carried onto the groups."""
    groups: Groups = {}
    edges: Waits = {}
    for audit in audits:
        steps = audit.result.plan.steps
        keys = {step.id: _signature(step) for step in steps}
        for step in steps:
            key = keys[step.id]
            if key not in groups:
                groups[key] = (step, [])
            first, hosts = groups[key]
            if _PRIORITY[step.priority] < _PRIORITY[first.priority]:
                groups[key] = (step, hosts)
            hosts.append(audit.target)
            mine = edges.setdefault(key, {})
            for edge in step.edges:  # every kind, as the host's own plan orders them (graph.order)
                other = keys.get(edge.step)
                if other is not None and other != key:
                    on = mine.setdefault((other, edge.kind), [])
                    if audit.target not in on:
                        on.append(audit.target)
    return groups, edges


def fleet_plan(audits: Sequence[HostAudit]) -> list[FleetFix]:
    """Identical plan steps (same check, fix and actions) grouped, with the hosts that need them, in an order that
    keeps every host's plan graph: a fix comes after each fix its steps wait for on any host (requires,
    not_before, ...; docs/plan.md), the best priority, then the most hosts, first among those ready. Hosts whose
    graphs order two fixes both ways (a cycle across the fleet) get them by rank, each marked ``unordered``."""
    groups, edges = _group(audits)

    def rank(key: str) -> tuple[int, int, str, str]:
        step, hosts = groups[key]
        return (_PRIORITY[step.priority], -len(hosts), step.check, key)

    before = {key: {other for other, _ in edges[key]} for key in groups}
    ready = [(rank(k), k) for k, needs in before.items() if not needs]
    heapq.heapify(ready)
    placed: list[str] = []
    while ready:
        _, key = heapq.heappop(ready)
        placed.append(key)
        for other, needs in before.items():
            if key in needs:
                needs.discard(key)
                if not needs and other not in placed:
                    heapq.heappush(ready, (rank(other), other))
    stuck = sorted((k for k in groups if k not in placed), key=rank)
    number = {key: index for index, key in enumerate(placed + stuck, 1)}
    fixes = []
    for key in placed + stuck:
        step, hosts = groups[key]
        waits = tuple(
            FleetWait(number[other], kind, tuple(on))
            for (other, kind), on in sorted(edges[key].items(), key=lambda item: number[item[0][0]])
        )
        note = ""
        if key in stuck:
            note = "the hosts' plans order this fix and another both ways: follow each host's own plan (hosts/NAME)"
        fixes.append(FleetFix(step, tuple(hosts), waits, note))
    return fixes


SUMMARY_SHOWN = 4
"""Outlier lines shown per host (the fleet report lists them all)."""


def fleet_result(
    targets: Sequence[str],
    audits: Sequence[HostAudit],
    failures: Sequence[HostFailure],
    *,
    kind: str,
    started_at: str,
    duration_s: float,
    warnings: Sequence[str] = (),
) -> FleetResult:
    """The fleet's result: its audits compared (each check across the hosts, the outliers, the fleet's plan)."""
    return FleetResult(
        targets=tuple(targets),
        audits=tuple(audits),
        failures=tuple(failures),
        matrix=status_matrix(audits),
        outliers=tuple(outliers(audits)),
        plan=tuple(fleet_plan(audits)),
        started_at=started_at,
        duration_s=duration_s,
        kind=kind,
        warnings=tuple(warnings),
    )


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
