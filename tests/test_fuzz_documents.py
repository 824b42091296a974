"""Fuzz: damaged audit results and plans (`diff`, `apply --plan` into a snapshot copy), benchmark results
(`bench compare`) and policy lines (`policy check`)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from tests.conftest import FIXTURES
from tests.support.apply import fast_tmp, mini_seed, seed_plan
from tests.support.fuzz import Mutator, cases, check, run_cli
from tests.test_compare import _result

SMALL = FIXTURES / "h200x1-vm"
MARKER = "FUZZ-CANARY-documents-0d6f"


@pytest.fixture(scope="module")
def audit_json(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    out = tmp_path_factory.mktemp("audit") / "a.json"
    assert main(["audit", "--snapshot", str(SMALL), "--no-live", "--no-transcript", "--json", str(out)]) in (0, 4)
    return out.read_bytes()


@pytest.fixture(scope="module")
def mini(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    for folder in fast_tmp(tmp_path_factory.mktemp("mini")):
        yield mini_seed(folder / "mini")


@pytest.mark.parametrize("case", cases("audit-json", 24))
def test_a_damaged_audit_result(case: str, tmp_path: Path, audit_json: bytes) -> None:
    what, data = Mutator(case).document(audit_json)
    what = f"{case} {what}"
    path = tmp_path / "a.json"
    path.write_bytes(data)
    (tmp_path / "good.json").write_bytes(audit_json)
    outcome = run_cli(["diff", str(path), str(tmp_path / "good.json"), "--json", str(tmp_path / "d.json")])
    check(outcome, what, canary=MARKER, written=tmp_path)


@pytest.mark.parametrize("case", cases("plan", 24))
def test_a_damaged_plan(case: str, tmp_path: Path, mini: Path) -> None:
    plan = seed_plan().model_dump_json().encode()
    what, data = Mutator(case).document(plan)
    what = f"{case} {what}"
    for folder in fast_tmp(tmp_path):
        path = folder / "plan.json"
        path.write_bytes(data)
        argv = ["apply", "--snapshot", str(mini), "--into", str(folder / "copy"), "--plan", str(path), "--yes"]
        outcome = run_cli([*argv, "--journal", str(folder / "j.jsonl"), "--no-transcript"])
        check(outcome, what, canary=MARKER, written=folder)
        shutil.rmtree(folder / "copy", ignore_errors=True)


@pytest.fixture(scope="module")
def bench_json() -> bytes:
    return _result({1: [100, 104, 97, 101, 99], 8: [400, 410, 395, 405, 402]}).model_dump_json().encode()


@pytest.mark.parametrize("case", cases("bench", 24))
def test_a_damaged_bench_result(case: str, tmp_path: Path, bench_json: bytes) -> None:
    what, data = Mutator(case).document(bench_json)
    what = f"{case} {what}"
    (tmp_path / "base.json").write_bytes(bench_json)
    (tmp_path / "new.json").write_bytes(data)
    argv = ["bench", "compare", str(tmp_path / "base.json"), str(tmp_path / "new.json"), "--no-transcript"]
    check(run_cli(argv), what, canary=MARKER)


def _corpus_lines() -> list[str]:
    lines = (Path(__file__).parent / "policy_corpus.txt").read_text().splitlines()
    return [line.split(None, 1)[1] for line in lines if line.strip() and not line.startswith("#") and " " in line.strip()]


@pytest.mark.parametrize("case", cases("policy", 60))
def test_a_damaged_policy_line(case: str) -> None:
    mutator = Mutator(case)
    line = mutator.choice(_corpus_lines())
    what, data = mutator.bytes_(line.encode())
    text = data.decode("utf-8", "surrogateescape")
    outcome = run_cli(["policy", "check", text])
    check(outcome, f"{case} {line!r}: {what}", canary=MARKER, allowed=frozenset({0, 2}))
    if outcome.code == 0:
        assert outcome.out.split(" ", 1)[0] in ("allow", "ask", "deny"), f"{case}: {outcome.out[:200]}"


def test_the_documents_fuzz_sees_json_that_still_parses(audit_json: bytes) -> None:
    """Most cases must reach the readers' validation, not stop at the JSON parser."""
    parsed = 0
    for case in cases("audit-json", 24):
        _, data = Mutator(case).document(audit_json)
        try:
            json.loads(data)
            parsed += 1
        except (ValueError, RecursionError):
            pass
    assert parsed >= 12
