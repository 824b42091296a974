"""What the archetype verdict cases (tests/support/archetype_cases.py) must cover, and what holds across them; the
verdicts themselves are judged in tests/test_archetype_slice_N.py, a slice a file so that each runs in about 15 s."""

from __future__ import annotations

import re
from pathlib import Path

from rigaudit.agents.registry import all_investigators
from tests.hostgen import ARCHETYPES, faults
from tests.support.archetype_cases import EXPECTED, FAULTS, SLICES, audited, cases_of


def test_every_archetype_is_listed() -> None:
    assert sorted(EXPECTED) == sorted(ARCHETYPES)
    checks = {c for inv in all_investigators() for c in inv.check_ids}
    assert {c for cells in EXPECTED.values() for c in cells} <= checks


def test_every_case_is_in_one_slice() -> None:
    dealt = [cases_of(piece) for piece in range(1, SLICES + 1)]
    assert sorted(n for names, _ in dealt for n in names) == sorted(ARCHETYPES)
    assert sum(len(f) for _, f in dealt) == len(FAULTS)


def test_a_fabric_not_up_is_named_as_the_cause() -> None:
    """With the fabric manager down the refused pairs and the inactive links are the fabric's, not the sockets' or the
    cabling's."""
    result = audited(faults.fabricmanager_down(ARCHETYPES["hgx-h100-jammy"]))
    by_check = {f.check: f for f in result.findings}
    assert "fabric manager" in by_check["nvlink.links"].observed
    assert "NVLink fabric is not up" in by_check["p2p.status"].explanation
    assert "UPI" not in by_check["p2p.status"].explanation


def test_the_archetype_document_states_the_pinned_problems() -> None:
    """docs/validation/archetypes.md lists, per archetype, exactly the problems EXPECTED pins (severity@layer)."""
    text = (Path(__file__).parent.parent / "docs" / "validation" / "archetypes.md").read_text(encoding="utf-8")
    sections = re.split(r"^### \d+\. ", text, flags=re.MULTILINE)[1:]
    found: dict[str, set[tuple[str, str]]] = {}
    for section in sections:
        name = re.match(r"`([^`]+)`", section)
        problems = re.search(r"^Problems: (.*?)\n(?:Why:|\n)", section, flags=re.MULTILINE | re.DOTALL)
        assert name and problems, section[:80]
        found[name.group(1)] = set(re.findall(r"`([a-z0-9_.]+)` (\w+@\w+)", problems.group(1)))
    pinned = {n: {(c, v) for c, v in cells.items() if "@" in v} for n, cells in EXPECTED.items()}
    assert found == pinned
