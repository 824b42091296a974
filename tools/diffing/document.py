"""The diff as JSON, ``rigaudit.diff/1``: what ``rigaudit diff --json`` writes."""

from __future__ import annotations

from collections.abc import Sequence

from rigaudit.tools.core.record import Record
from rigaudit.tools.diffing.findings import FindingsDiff
from rigaudit.tools.diffing.values import ValuesDiff

DIFF_SCHEMA = "rigaudit.diff/1"


class SideInfo(Record):
    """One side of a diff: where it came from and what it is."""

    path: str
    kind: str
    """``snapshot``, ``audit``, ``transcript`` or ``bundle``."""
    host: str = ""


def diff_document(
    a: SideInfo,
    b: SideInfo,
    findings: FindingsDiff,
    values: ValuesDiff | None,
    *,
    values_note: str = "",
    warnings: Sequence[str] = (),
    headline: Sequence[str] = (),
) -> dict[str, object]:
    """The whole diff; ``different`` is what the exit status says (volatile values alone do not count)."""
    values_json: dict[str, object] = {"compared": False, "note": values_note}
    if values is not None:
        values_json = {"compared": True, **values.to_json()}
    return {
        "schema": DIFF_SCHEMA,
        "a": {"path": a.path, "kind": a.kind, "host": a.host},
        "b": {"path": b.path, "kind": b.kind, "host": b.host},
        "different": findings.different or (values is not None and values.different),
        "headline": list(headline),
        "findings": findings.to_json(),
        "values": values_json,
        "warnings": list(warnings),
    }
