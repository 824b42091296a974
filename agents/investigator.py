"""The investigator: an area's evidence collection and its expert rules, declared together."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from rigaudit.agents.check import Check
from rigaudit.agents.premise import enforce
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.schema.finding import Finding

FactsT = TypeVar("FactsT")


class Investigator(Record, Generic[FactsT]):
    """One area of the check catalog.

    ``collect`` reads evidence through the probe (files before commands) into a facts object;
    ``judge`` is pure: it turns those facts into exactly one finding per check of ``checks``, in that order;
    :meth:`findings` is the audit's judgement: ``judge``'s, with each check's premises applied.
    ``checks`` are the declarations (:class:`~rigaudit.agents.check.Check`) every list of checks derives from.
    """

    area: str
    title: str
    checks: tuple[Check, ...]
    collect: Callable[[Probe], Awaitable[FactsT]]
    judge: Callable[[FactsT], list[Finding]]

    def findings(self, facts: FactsT) -> list[Finding]:
        """``judge`` on ``facts``, each finding carrying its check's premises as read; a verdict resting on a premise
        that is missing is ``unknown`` with what would tell (:func:`~rigaudit.agents.premise.enforce`)."""
        declared = {c.id: c.premises or () for c in self.checks}
        return [enforce(declared.get(f.check, ()), facts, f) for f in self.judge(facts)]

    @property
    def check_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.checks)

    def contract_breaches(self, findings: list[Finding]) -> list[str]:
        """What is wrong with ``findings`` as this investigator's judgement (empty: nothing): checks declared but
        never judged, judged but never declared, judged twice, out of declaration order, or of another area."""
        judged = [f.check for f in findings]
        declared = set(self.check_ids)
        breaches = [f"{c}: declared but never judged" for c in self.check_ids if c not in judged]
        breaches += [f"{c}: judged but not declared" for c in dict.fromkeys(judged) if c not in declared]
        breaches += [f"{c}: judged {judged.count(c)} times" for c in dict.fromkeys(judged) if judged.count(c) > 1]
        if not breaches and judged != list(self.check_ids):
            breaches.append(f"findings in the order {judged}, not the declared {list(self.check_ids)}")
        breaches += [f"{f.check}: area {f.area!r}, not {self.area!r}" for f in findings if f.area != self.area]
        return breaches


AnyInvestigator = Investigator[Any]
