"""Brains turn an investigator's evidence into findings: rules always, an LLM optionally on top."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from rigaudit.agents.claims import unsupported
from rigaudit.agents.investigator import AnyInvestigator
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.schema.dropped import DropKind, DroppedFinding
from rigaudit.tools.schema.evidence import Evidence
from rigaudit.tools.schema.finding import Finding


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


class _Vetting:
    """The brain's findings for one area, taken one by one: what is suggested, what is dropped and why."""

    def __init__(
        self,
        area: str,
        rule_findings: list[Finding],
        recorded: Mapping[str, Evidence],
        own_checks: frozenset[str],
        other_checks: frozenset[str],
    ) -> None:
        self.area, self.recorded, self.own_checks, self.other_checks = area, recorded, own_checks, other_checks
        self.by_check = {f.check: f for f in rule_findings}
        self.titles = {_title_key(f.title): f.check for f in rule_findings if f.title}
        self.suggestions: list[Finding] = []
        self.explained: set[str] = set()
        self.added: set[str] = set()
        self.dropped: list[DroppedFinding] = []

    def drop(self, finding: Finding, kind: DropKind, reason: str) -> None:
        self.dropped.append(
            DroppedFinding(area=self.area, check=finding.check, title=finding.title[:200], kind=kind, reason=reason)
        )

    def suggest(self, finding: Finding, base: Finding, evidence: tuple[str, ...]) -> None:
        """``base`` as a suggestion: marked ``source: "llm"``, citing ``evidence``, ``finding``'s fix without actions."""
        fix = finding.fix.model_copy(update={"actions": ()}) if finding.fix is not None else None
        self.suggestions.append(base.model_copy(update={"evidence": evidence, "source": "llm", "fix": fix}))

    def explanation(self, finding: Finding, rule: Finding) -> None:
        """A finding of a rule's check: kept only as an explanation that keeps the rule's verdict."""
        if finding == rule:
            return  # the rule's own finding handed back
        said = f"{finding.status}{' ' + finding.severity if finding.severity else ''}"
        ruled = f"{rule.status}{' ' + rule.severity if rule.severity else ''}"
        if (finding.status, finding.severity) != (rule.status, rule.severity):
            self.drop(finding, "contradicts_rule", f"the rule says {ruled}, the model {said}: the rule stands")
        elif finding.check in self.explained:
            self.drop(finding, "duplicate", "a second explanation of the same rule finding")
        elif not finding.explanation or finding.explanation == rule.explanation:
            self.drop(finding, "duplicates_rule", "restates the rule finding and adds no explanation")
        else:
            self.explained.add(finding.check)
            self.suggest(finding, rule.model_copy(update={"explanation": finding.explanation}), rule.evidence)

    def new_finding(self, finding: Finding) -> None:
        """A finding of a check the rules did not report: kept when it is the area's, new, and its evidence read."""
        area, recorded = self.area, self.recorded
        prefix = finding.check.split(".", 1)[0]
        if finding.check in self.other_checks or prefix != area or finding.area != area:
            owner = f"{prefix}'s check" if finding.check in self.other_checks else f"not a check id of {area} ({area}.*)"
            self.drop(finding, "other_area", f"{owner}: an agent adds findings to its own area only")
        elif finding.check in self.own_checks:
            self.drop(finding, "rule_check", "a check of the rules that they did not report here")
        elif finding.check in self.added:
            self.drop(finding, "duplicate", "the model reported this check twice; the first one counts")
        elif (same := self.titles.get(_title_key(finding.title))) is not None:
            self.drop(finding, "duplicates_rule", f"the same finding as the rule's {same}")
        elif not (cited := tuple(ref for ref in finding.evidence if ref in recorded)):
            shown = ", ".join(finding.evidence[:3]) or "nothing"
            self.drop(finding, "no_evidence", f"cites {shown}, which this area never read")
        elif (why := unsupported(finding.observed, [recorded[ref] for ref in cited])) is not None:
            self.drop(finding, "unsupported_claim", f"the cited evidence does not contain what it claims: {why}")
        else:
            self.added.add(finding.check)
            self.suggest(finding, finding, cited)


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
    vetting = _Vetting(area, rule_findings, recorded, own_checks, other_checks)
    for finding in proposed:
        rule = vetting.by_check.get(finding.check)
        if rule is not None:
            vetting.explanation(finding, rule)
        else:
            vetting.new_finding(finding)
    return Refinement(list(rule_findings), vetting.suggestions, vetting.dropped)
