"""What an audit refused of a model's suggestions, and why: shown and counted, never dropped without a word."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from rigaudit.tools.schema.finding import Area

DropKind = Literal[
    "contradicts_rule", "duplicates_rule", "rule_check", "other_area", "duplicate", "no_evidence", "unsupported_claim"
]
"""Why a model's finding was dropped:

- ``contradicts_rule``: it gives a rule's check another status or severity (the rule stands);
- ``duplicates_rule``: it restates a rule finding (the same check with nothing new, or the same title);
- ``rule_check``: it names a check of the area's rules that the rules did not report;
- ``other_area``: its check belongs to another area, or is not named after the agent's own area;
- ``duplicate``: the model reported the same check twice (the first one counts);
- ``no_evidence``: it cites no evidence that the agent's area really read;
- ``unsupported_claim``: what it says it observed is not in the evidence it cites (:mod:`rigaudit.agents.claims`).
"""

DROP_TEXT: dict[str, str] = {
    "contradicts_rule": "contradicts a rule finding",
    "duplicates_rule": "duplicates a rule finding",
    "rule_check": "a rule's check the rules did not report",
    "other_area": "outside the agent's area",
    "duplicate": "reported twice",
    "no_evidence": "cites no evidence it read",
    "unsupported_claim": "claims what its cited evidence does not contain",
}
"""Each kind in a few words (the terminal's and the report's counts)."""


class DroppedFinding(BaseModel):
    """One model finding the audit refused: whose it was, what it named, and why it was refused (one line)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    area: Area
    check: str
    title: str = ""
    kind: DropKind
    reason: str


def drop_counts(dropped: tuple[DroppedFinding, ...] | list[DroppedFinding]) -> str:
    """``2 contradicts a rule finding, 1 cites no evidence it read`` (empty when nothing was dropped)."""
    counts: dict[str, int] = {}
    for item in dropped:
        counts[item.kind] = counts.get(item.kind, 0) + 1
    return ", ".join(f"{n} {DROP_TEXT[kind]}" for kind, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
