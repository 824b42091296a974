"""benchmarks/llm_quirks.py: every server behaviour rigaudit knows, listed as data, each judged from a whole audit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rigaudit.agents.llm.testing.server import FAMILIES

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import llm_quirks


def test_the_benchmark_lists_at_least_fifty_behaviours_and_every_family() -> None:
    names = [b.name for b in llm_quirks.BEHAVIOURS]
    assert len(names) >= 50 and len(set(names)) == len(names)
    assert set(FAMILIES) <= {b.quirks for b in llm_quirks.BEHAVIOURS}
    assert all(b.expect in ("handled", "clear error") for b in llm_quirks.BEHAVIOURS)
    assert all(b.reason for b in llm_quirks.BEHAVIOURS if b.expect == "clear error")


@pytest.mark.parametrize(
    ("name", "outcome"), [("mistral", "handled"), ("ollama-runner", "clear error"), ("401-key", "clear error")]
)
def test_a_behaviour_is_judged_from_its_audit(name: str, outcome: str, tmp_path: Path) -> None:
    (behaviour,) = [b for b in llm_quirks.BEHAVIOURS if b.name == name]
    rules = llm_quirks._baseline("kernel")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("XDG_CONFIG_HOME", str(tmp_path))
        run = llm_quirks._run(behaviour, "kernel", tmp_path)
    assert llm_quirks.judge(behaviour, run, rules)[0] == outcome


def test_an_ok_audit_is_bad_when_it_should_have_said_something() -> None:
    (behaviour,) = [b for b in llm_quirks.BEHAVIOURS if b.name == "ollama-runner"]
    silent = {"code": 0, "stderr": "", "requests": [], "crashed": "", "data": {"findings": [], "llm": {"status": "ok"}}}
    assert llm_quirks.judge(behaviour, silent, []) == ("bad", "an ok audit though it should have said 'num_ctx'")
