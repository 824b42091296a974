"""Brains turn an investigator's evidence into findings: rules always, an LLM optionally on top."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from rigaudit.agents.claims import unsupported
from rigaudit.agents.investigator import AnyInvestigator
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.model.dropped import DropKind, DroppedFinding
from rigaudit.tools.model.evidence import Evidence
from rigaudit.tools.model.finding import Finding


class Brain(Protocol):
    """Given the rule findings of one investigator, return the findings to report.

    Implementations should keep every rule finding (they may add findings, or explain a rule's);
    ``rigaudit.orchestrator.audit.run`` enforces it through :func:`merge_refinement`, whatever they return:
    what a brain adds is a suggestion, never one of the rules' findings.
    """

    async def refine(self, investigator: AnyInvestigator, probe: Probe, rule_findings: list[Finding]) -> list[Finding]: ...


class RuleBrain:
    """The deterministic default: the rules' findings, as they are."""

    async def refine(self, investigator: AnyInvestigator, probe: Probe, rule_findings: list[Finding]) -> list[Finding]:
        del investigator, probe
        return rule_findings


class Refinement(Record):
    """What an area reports once a brain had its say: the rules' findings as they were, the brain's suggestions
    apart from them, and what of the brain's the audit refused."""

    findings: list[Finding]
    suggestions: list[Finding] = field(default_factory=list)
    dropped: list[DroppedFinding] = field(default_factory=list)


def _title_key(text: str) -> str:
    return " ".join(text.lower().split())


def merge_refinement(
    area: str,
    rule_findings: list[Finding],
    proposed: list[Finding],
    recorded: Mapping[str, Evidence],
    *,
    own_checks: frozenset[str] = frozenset(),
    other_checks: frozenset[str] = frozenset(),
) -> Refinement:
    """The rules stand, unchanged; what a brain says is a suggestion, kept apart from them.

    ``recorded`` is what this area really read or ran: each ref and the evidence the probe recorded for it. For a
    rule's check a brain may only suggest an explanation, and only when it keeps the rule's status and severity:
    the suggestion carries the rule's verdict, observation and evidence with the brain's explanation. A new
    finding is a suggestion when its check is new, named after ``area`` (no check of ``other_checks``), said
    once, not a restatement of a rule finding, cites evidence of ``recorded``, and that evidence contains what it
    says it observed (:func:`rigaudit.agents.claims.unsupported`); it keeps only the cited refs that were read.
    Every suggestion is marked ``source: "llm"`` and its fix loses any action (a brain's fix is a description a
    person reads, never something ``apply`` runs). Everything else is returned as dropped, each with why.
    """
    by_check = {f.check: f for f in rule_findings}
    titles = {_title_key(f.title): f.check for f in rule_findings if f.title}
    suggestions: list[Finding] = []
    explained: set[str] = set()
    added: set[str] = set()
    dropped: list[DroppedFinding] = []

    def drop(finding: Finding, kind: DropKind, reason: str) -> None:
        dropped.append(DroppedFinding(area=area, check=finding.check, title=finding.title[:200], kind=kind, reason=reason))

    def suggest(finding: Finding, base: Finding, evidence: tuple[str, ...]) -> None:
        fix = finding.fix.model_copy(update={"actions": ()}) if finding.fix is not None else None
        suggestions.append(base.model_copy(update={"evidence": evidence, "source": "llm", "fix": fix}))

    for finding in proposed:
        rule = by_check.get(finding.check)
        if rule is not None:
            if finding == rule:
                continue  # the rule's own finding handed back
            said = f"{finding.status}{' ' + finding.severity if finding.severity else ''}"
            ruled = f"{rule.status}{' ' + rule.severity if rule.severity else ''}"
            if (finding.status, finding.severity) != (rule.status, rule.severity):
                drop(finding, "contradicts_rule", f"the rule says {ruled}, the model {said}: the rule stands")
            elif finding.check in explained:
                drop(finding, "duplicate", "a second explanation of the same rule finding")
            elif not finding.explanation or finding.explanation == rule.explanation:
                drop(finding, "duplicates_rule", "restates the rule finding and adds no explanation")
            else:
                explained.add(finding.check)
                suggest(finding, rule.model_copy(update={"explanation": finding.explanation}), rule.evidence)
            continue
        prefix = finding.check.split(".", 1)[0]
        if finding.check in other_checks or prefix != area or finding.area != area:
            owner = f"{prefix}'s check" if finding.check in other_checks else f"not a check id of {area} ({area}.*)"
            drop(finding, "other_area", f"{owner}: an agent adds findings to its own area only")
        elif finding.check in own_checks:
            drop(finding, "rule_check", "a check of the rules that they did not report here")
        elif finding.check in added:
            drop(finding, "duplicate", "the model reported this check twice; the first one counts")
        elif (same := titles.get(_title_key(finding.title))) is not None:
            drop(finding, "duplicates_rule", f"the same finding as the rule's {same}")
        elif not (cited := tuple(ref for ref in finding.evidence if ref in recorded)):
            shown = ", ".join(finding.evidence[:3]) or "nothing"
            drop(finding, "no_evidence", f"cites {shown}, which this area never read")
        elif (why := unsupported(finding.observed, [recorded[ref] for ref in cited])) is not None:
            drop(finding, "unsupported_claim", f"the cited evidence does not contain what it claims: {why}")
        else:
            added.add(finding.check)
            suggest(finding, finding, cited)
    return Refinement(list(rule_findings), suggestions, dropped)
