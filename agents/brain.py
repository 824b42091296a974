"""Brains turn an investigator's evidence into findings: rules always, an LLM optionally on top."""

from __future__ import annotations

from typing import Protocol

from rigaudit.agents.investigator import AnyInvestigator
from rigaudit.tools.model.finding import Finding
from rigaudit.tools.probe import Probe


class Brain(Protocol):
    """Given the rule findings of one investigator, return the findings to report.

    Implementations must keep every rule finding (they may add findings, or refine their
    explanation); ``rigaudit.orchestrator.audit`` enforces that, and drops added findings that cite no
    evidence the probe actually read.
    """

    async def refine(self, investigator: AnyInvestigator, probe: Probe, rule_findings: list[Finding]) -> list[Finding]: ...


class RuleBrain:
    """The deterministic default: the rules' findings, as they are."""

    async def refine(self, investigator: AnyInvestigator, probe: Probe, rule_findings: list[Finding]) -> list[Finding]:
        del investigator, probe
        return rule_findings


def merge_refinement(rule_findings: list[Finding], proposed: list[Finding], known_refs: set[str]) -> list[Finding]:
    """Keep every rule finding; take the brain's explanation for one only when it keeps status and severity;
    add new findings only when they cite evidence that was really read."""
    by_check = {f.check: f for f in rule_findings}
    merged = list(rule_findings)
    for finding in proposed:
        rule = by_check.get(finding.check)
        if rule is not None and finding.source == "rules":
            continue
        if rule is not None:
            if finding.explanation and finding.explanation != rule.explanation:
                index = merged.index(rule)
                merged[index] = rule.model_copy(update={"explanation": f"{rule.explanation}\n\nLLM: {finding.explanation}"})
            continue
        cited = [ref for ref in finding.evidence if ref in known_refs]
        if cited:
            merged.append(finding.model_copy(update={"evidence": tuple(cited), "source": "llm"}))
    return merged
