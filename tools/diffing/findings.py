"""Two audits' findings compared by check id: what appeared, what was resolved, what changed.

A finding is identified by its check id (one finding per check per host). A change is one of:

- ``appeared``: a problem in B that was not a problem in A;
- ``resolved``: a problem in A that is ``ok`` or ``not_applicable`` in B;
- ``status``: any other change of status (``ok`` -> ``unknown``, ``problem`` -> ``unknown``...);
- ``severity``: a problem in both, of another severity;
- ``observed``: same verdict, another observed value or other subjects;
- ``only_a`` / ``only_b``: a check made on one side only (another version, other ``--areas``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from rigaudit.tools.core.record import Record
from rigaudit.tools.schema.finding import Finding

ChangeKind = Literal["appeared", "resolved", "status", "severity", "observed", "only_a", "only_b"]
CHANGE_KINDS: tuple[ChangeKind, ...] = ("appeared", "resolved", "status", "severity", "observed", "only_a", "only_b")
_ORDER = {kind: n for n, kind in enumerate(CHANGE_KINDS)}
_SHORT = 60


def verdict(finding: Finding | None) -> str:
    """``problem (high)``, ``ok``, ``unknown``...; ``-`` for no finding."""
    if finding is None:
        return "-"
    return f"{finding.status} ({finding.severity})" if finding.status == "problem" and finding.severity else finding.status


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SHORT else text[: _SHORT - 3] + "..."


def _brief(finding: Finding | None) -> dict[str, object] | None:
    if finding is None:
        return None
    return {
        "status": finding.status,
        "severity": finding.severity,
        "title": finding.title,
        "observed": finding.observed,
        "expected": finding.expected,
        "subjects": list(finding.subjects),
    }


class FindingChange(Record):
    kind: ChangeKind
    check: str
    area: str
    before: Finding | None
    """The finding in A (``None`` for ``only_b``)."""
    after: Finding | None
    """The finding in B (``None`` for ``only_a``)."""
    detail: str

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "check": self.check,
            "area": self.area,
            "detail": self.detail,
            "a": _brief(self.before),
            "b": _brief(self.after),
        }


class FindingsDiff(Record):
    changes: tuple[FindingChange, ...] = ()
    unchanged: int = 0
    """Checks made on both sides with the same verdict and the same observation."""

    @property
    def different(self) -> bool:
        return bool(self.changes)

    def of_kind(self, *kinds: ChangeKind) -> tuple[FindingChange, ...]:
        return tuple(c for c in self.changes if c.kind in kinds)

    def counts(self) -> dict[str, int]:
        """Changes by kind, in the order of :data:`CHANGE_KINDS`, kinds with none left out."""
        counts = {kind: 0 for kind in CHANGE_KINDS}
        for change in self.changes:
            counts[change.kind] += 1
        return {k: v for k, v in counts.items() if v}

    def to_json(self) -> dict[str, object]:
        return {"changes": [c.to_json() for c in self.changes], "counts": self.counts(), "unchanged": self.unchanged}


def _by_check(findings: Iterable[Finding]) -> dict[str, Finding]:
    """The findings by check id; a repeated check keeps its last finding (as a transcript replays)."""
    return {f.check: f for f in findings}


def _observation(before: Finding, after: Finding) -> list[str]:
    out: list[str] = []
    if before.observed != after.observed:
        out.append(f"observed {_short(before.observed)!r} -> {_short(after.observed)!r}")
    if before.subjects != after.subjects:
        out.append(f"subjects {_short(', '.join(before.subjects)) or '-'} -> {_short(', '.join(after.subjects)) or '-'}")
    return out


def _compare(before: Finding, after: Finding) -> FindingChange | None:
    check, area = after.check, after.area
    if before.status != after.status:
        kind: ChangeKind = "status"
        if after.status == "problem":
            kind = "appeared"
        elif before.status == "problem" and after.status in ("ok", "not_applicable"):
            kind = "resolved"
        return FindingChange(kind, check, area, before, after, f"{verdict(before)} -> {verdict(after)}")
    if before.status == "problem" and before.severity != after.severity:
        return FindingChange("severity", check, area, before, after, f"severity {before.severity} -> {after.severity}")
    details = _observation(before, after)
    if details:
        return FindingChange("observed", check, area, before, after, "; ".join(details))
    return None


def diff_findings(a: Sequence[Finding], b: Sequence[Finding]) -> FindingsDiff:
    """Every difference between the findings of A and of B, most important first, then by check id."""
    before, after = _by_check(a), _by_check(b)
    changes: list[FindingChange] = []
    unchanged = 0
    for check in sorted(before.keys() | after.keys()):
        old, new = before.get(check), after.get(check)
        if old is None and new is not None:
            changes.append(FindingChange("only_b", check, new.area, None, new, f"not checked in A; B: {verdict(new)}"))
        elif new is None and old is not None:
            changes.append(FindingChange("only_a", check, old.area, old, None, f"not checked in B; A: {verdict(old)}"))
        elif old is not None and new is not None:
            change = _compare(old, new)
            if change is None:
                unchanged += 1
            else:
                changes.append(change)
    changes.sort(key=lambda c: (_ORDER[c.kind], c.check))
    return FindingsDiff(tuple(changes), unchanged)
