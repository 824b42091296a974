"""A check, declared once: its id, title and the catalog's words on it.

A check names its premises (:mod:`rigaudit.agents.premise`): the facts its verdict rests on.
Every list of checks is derived from these declarations: an investigator's ``checks``, ``docs/checks.md``,
``rigaudit checks`` and the catalog; an LLM agent's prompt names each check the rules did not report with its
``problem`` (:func:`rigaudit.agents.llm.prompt.summarize_findings`). A check's area is the prefix of its id
(``pcie.acs`` belongs to ``pcie``), so an id can never name another area than the one that runs it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from rigaudit.agents import findings
from rigaudit.agents.premise import Premise
from rigaudit.tools.core.record import Record
from rigaudit.tools.schema.finding import Finding, Fix, FixKind, Severity

CHECK_ID = r"[a-z][a-z0-9]*\.[a-z0-9_]+"
"""``area.name``: lower case, one dot."""

CheckLayer = Literal["node", "workload"]
"""Whose fault a check's problem is: the node's (its hardware, firmware, kernel, driver, their settings), or the
workload's (what runs on the node: a server's image and packages, its environment and limits, its container's
options, the processes on its GPUs). ``rigaudit check`` drains only on the node's."""


class Check(Record):
    """One check of the catalog: what it reads, when it is a problem, and how it is fixed."""

    id: str
    title: str
    reads: str
    problem: str
    fix: str
    kinds: tuple[FixKind, ...] = ()
    """The fix kinds its problems carry (empty: never a problem)."""
    premises: tuple[Premise, ...] | None = None
    """The facts its verdict rests on (its area's table, ``<area>/premises.py``); ``()``: it rests on none but what it
    reads itself; ``None``: not declared. Where one is missing its verdict is ``unknown`` (:mod:`~rigaudit.agents.premise`)."""
    layer: CheckLayer = "node"
    """Whose fault its problem is (:data:`CheckLayer`): a ``workload`` check's problem is reported by the gate,
    never a drain (a node is not drained for an image's build or a container's quota)."""

    def __post_init__(self) -> None:
        if not re.fullmatch(CHECK_ID, self.id):
            raise ValueError(f"check id {self.id!r} is not shaped area.name")

    @property
    def area(self) -> str:
        """The area whose investigator runs it: the id's prefix."""
        return self.id.split(".", 1)[0]

    def as_dict(self) -> dict[str, object]:
        """The catalog's JSON entry (``rigaudit checks --json``)."""
        return {
            "check": self.id,
            "area": self.area,
            "title": self.title,
            "reads": self.reads,
            "problem": self.problem,
            "fix": self.fix,
            "fix_kinds": list(self.kinds),
            "premises": [{"name": p.name, "reads": p.reads} for p in self.premises or ()],
            "layer": self.layer,
        }

    def ok(
        self,
        observed: str,
        *,
        expected: str = "",
        explanation: str = "",
        subjects: Iterable[str] = (),
        evidence: Iterable[str] = (),
    ) -> Finding:
        """Its ``ok`` verdict (:func:`rigaudit.agents.findings.ok` with this check's id, area and title)."""
        return findings.ok(
            self.id,
            self.area,
            self.title,
            observed,
            expected=expected,
            explanation=explanation,
            subjects=subjects,
            evidence=evidence,
        )

    def problem_at(
        self,
        severity: Severity,
        observed: str,
        expected: str,
        explanation: str,
        fix: Fix | None,
        *,
        subjects: Iterable[str] = (),
        evidence: Iterable[str] = (),
    ) -> Finding:
        """Its ``problem`` verdict at ``severity`` (:func:`rigaudit.agents.findings.problem`, this check's id and title)."""
        return findings.problem(
            self.id, self.area, self.title, severity, observed, expected, explanation, fix, subjects=subjects, evidence=evidence
        )

    def unknown(self, why: str, *, subjects: Iterable[str] = (), evidence: Iterable[str] = ()) -> Finding:
        """Its ``unknown`` verdict, ``why`` saying what was not read (:func:`rigaudit.agents.findings.unknown`)."""
        return findings.unknown(self.id, self.area, self.title, why, subjects=subjects, evidence=evidence)

    def not_applicable(self, why: str, *, evidence: Iterable[str] = ()) -> Finding:
        """Its ``not_applicable`` verdict (:func:`rigaudit.agents.findings.not_applicable`)."""
        return findings.not_applicable(self.id, self.area, self.title, why, evidence=evidence)
