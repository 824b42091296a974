"""Fuzz: damaged transcripts (a line mutated as JSON or as bytes, or the file as bytes) through `replay`,
`transcripts list`, and in turn `replay --rediagnose` and `diff --values` (which rebuild a snapshot from them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from tests.conftest import FIXTURES
from tests.support.fuzz import Mutator, cases, check, run_cli

SMALL = FIXTURES / "h200x1-vm"
CASES = cases("transcript", 40)
MARKER = "FUZZ-CANARY-transcript-5b7e"


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    folder = tmp_path_factory.mktemp("transcripts")
    audit = folder / "audit.jsonl"
    argv = ["audit", "--snapshot", str(SMALL), "--areas", "gpu,pcie,kernel", "--no-live", "--transcript", str(audit)]
    assert main(argv) in (0, 4)
    small = [FIXTURES / "transcripts" / "h200x2-apply.jsonl", FIXTURES / "transcripts" / "h200x2-rollback.jsonl"]
    return [audit.read_bytes(), audit.read_bytes(), *(p.read_bytes() for p in small)]


@pytest.mark.parametrize("case", CASES)
def test_a_damaged_transcript(case: str, tmp_path: Path, sources: list[bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    number = int(case.split("#")[1])
    mutator = Mutator(case)
    what, data = mutator.jsonl(sources[number % len(sources)])
    what = f"{case} {what}"
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    stored = state / "rigaudit" / "transcripts" / "20260101-000000-audit-fuzz.jsonl"
    stored.parent.mkdir(parents=True)
    stored.write_bytes(data)
    out = tmp_path / "out"
    out.mkdir()
    check(run_cli(["replay", str(stored), "--no-live"]), what, canary=MARKER, allowed=frozenset({0, 1, 2}))
    check(run_cli(["transcripts", "list"]), what, canary=MARKER, allowed=frozenset({0}))
    if number % 4 == 0:
        argv = ["replay", str(stored), "--rediagnose", "--no-live", "--json", str(out / "r.json")]
        check(run_cli(argv), what, canary=MARKER, allowed=frozenset({0, 1, 2}), written=out)
    elif number % 4 == 1:
        argv = ["diff", str(stored), str(stored), "--values", "--json", str(out / "d.json")]
        check(run_cli(argv), what, canary=MARKER, allowed=frozenset({0, 1, 2}), written=out)
