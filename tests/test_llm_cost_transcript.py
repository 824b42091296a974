"""The cost at the user's prices in the transcript's total event, shown by ``transcripts show`` and ``replay``."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from rigaudit.agents.llm.testing.server import ScriptedOpenAIServer, final, say
from rigaudit.orchestrator.cli import main
from rigaudit.tools.core import record
from rigaudit.tools.schema.events.chat import LlmExchange
from rigaudit.transcripts.reader import read_transcript
from tests.test_llm_support import SEED


def _total(path: Path) -> LlmExchange:
    totals = [e for e in read_transcript(path).events if isinstance(e, LlmExchange) and e.agent == "total"]
    assert len(totals) == 1, totals
    return totals[0]


def test_an_audits_total_event_carries_its_cost_and_replay_shows_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answer = record.replace(final({"findings": []}), usage=(5000, 100))
    transcript = tmp_path / "audit.jsonl"
    with ScriptedOpenAIServer({}, default=answer, model="big") as server:
        code = main(
            ["audit", "--snapshot", str(SEED), "--areas", "numa", "--llm", "--base-url", server.base_url,
             "--model", "big", "--llm-price", "in=1,out=2", "--llm-no-preflight", "--no-live",
             "--json", str(tmp_path / "a.json"), "--transcript", str(transcript)]
        )  # fmt: skip
    assert code in (0, 3), capsys.readouterr().err
    total = _total(transcript)
    assert total.cost_usd == pytest.approx(0.0052) and total.usage["prompt_tokens"] == 5000
    capsys.readouterr()
    assert main(["transcripts", "show", str(transcript)]) == 0
    shown = capsys.readouterr().out
    usage = next(line for line in shown.splitlines() if line.startswith("LLM usage:"))
    assert "prompt_tokens 5000" in usage and usage.endswith(", cost $0.0052"), usage  # the total, not twice the requests
    assert main(["replay", str(transcript), "--no-live"]) == 0
    assert "$0.0052" in " ".join(capsys.readouterr().out.split())


def test_a_chats_total_event_carries_its_cost_and_none_without_a_price(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for price, cost in ((["--llm-price", "in=1,out=2"], pytest.approx(0.0054)), ([], None)):
        transcript = tmp_path / f"chat{len(price)}.jsonl"
        monkeypatch.setattr(sys, "stdin", io.StringIO("hello\n"))
        with ScriptedOpenAIServer({"chat": [record.replace(say("hi"), usage=(5000, 200))]}, model="big") as server:
            code = main(
                ["chat", "--snapshot", str(SEED), "--llm", "--base-url", server.base_url, "--model", "big",
                 "--llm-no-preflight", "--no-live", "--transcript", str(transcript), *price]
            )  # fmt: skip
        assert code == 0, capsys.readouterr().err
        assert _total(transcript).cost_usd == cost
