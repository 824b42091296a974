"""``--llm-deadline``: an audit's agents together, and each chat turn's model requests, end in time.

Against the scripted loopback server, one agent's request stalls (the server holds it until the test
ends): at the audit's deadline that agent stops, its area is lost with the reason "deadline", the LLM
part is degraded (exit 4), every other agent's answer and every rule finding is kept. A chat turn
whose model stalls ends with one line at the turn's deadline.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from rigaudit.agents.llm.testing.server import Reply, ScriptedOpenAIServer, final, say
from rigaudit.orchestrator.cli import build_parser, main
from rigaudit.orchestrator.commands._llm import add_llm_arguments, llm_config_from_args
from rigaudit.orchestrator.commands.chat import run_chat
from rigaudit.tools.schema.events.chat import Message
from rigaudit.tools.schema.events.union import Event
from tests.test_llm_support import SEED, rule_findings

AREAS = ["kernel", "numa", "pcie"]


class Stall:
    """A reply the server holds until :meth:`release` (the end of the test): a stalled model."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.arrived = threading.Event()

    def __call__(self, body: Mapping[str, Any]) -> Reply:
        self.arrived.set()
        self.released.wait(60)
        return final({"findings": []})

    def release(self) -> None:
        self.released.set()


@pytest.fixture
def stall() -> Iterator[Stall]:
    held = Stall()
    yield held
    held.release()


def _args(*extra: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_llm_arguments(parser)
    return parser.parse_args(["--llm", "--base-url", "http://127.0.0.1:1/v1", *extra])


def test_one_flag_sets_both_deadlines_with_their_own_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    config = llm_config_from_args(_args(), env={})
    assert config is not None and (config.deadline_s, config.turn_deadline_s) == (300.0, 120.0)
    config = llm_config_from_args(_args("--llm-deadline", "42"), env={})
    assert config is not None and (config.deadline_s, config.turn_deadline_s) == (42.0, 42.0)
    with pytest.raises(SystemExit) as usage:
        _args("--llm-deadline", "0")
    assert usage.value.code == 2
    with pytest.raises(SystemExit):
        main(["audit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--llm-deadline S" in text and "(default 300)" in text and "(default 120)" in text


def test_the_audit_deadline_loses_only_the_stalled_agent(tmp_path: Path, stall: Stall) -> None:
    out = tmp_path / "audit.json"
    added = {
        "check": "kernel.boot_options",
        "status": "problem",
        "severity": "low",
        "title": "The kernel boots with iommu=pt",
        "observed": "the kernel boots with iommu=pt",
        "evidence": ["file:/proc/cmdline"],
    }
    script = {"pcie": [stall], "kernel": [final({"findings": [added]})]}
    with ScriptedOpenAIServer(script, default=final({"findings": []})) as server:
        started = time.monotonic()
        audit = ["audit", "--snapshot", str(SEED), "--areas", ",".join(AREAS), "--json", str(out), "--no-live", "--no-transcript"]
        llm = ["--llm", "--base-url", server.base_url, "--model", "scripted", "--llm-deadline", "2", "--llm-timeout", "600"]
        code = main([*audit, *llm])
        took = time.monotonic() - started
        assert stall.arrived.is_set()
    assert code == 4  # a degraded LLM part (docs/llm.md), not ok
    assert took < 30  # the stalled request would have held it for request_timeout_s x retries
    data = json.loads(out.read_text())
    assert data["findings"] == rule_findings(AREAS)
    assert [s["check"] for s in data["suggestions"]] == ["kernel.boot_options"]
    runs = {r["area"]: r for r in data["investigators"]}
    assert {a: r["llm"] for a, r in runs.items()} == {"kernel": "answered", "numa": "answered", "pcie": "failed"}
    assert runs["pcie"]["llm_error"].startswith("deadline: no answer within the audit's LLM deadline of 2 s")
    assert data["llm"]["status"] == "degraded" and data["llm"]["failed"] == ["pcie"]
    told = "LLM deadline (2 s, --llm-deadline) passed before these agents answered (1 agent: pcie)"
    assert [w for w in data["warnings"] if told in w]


def test_a_stalled_chat_turn_ends_at_its_deadline(tmp_path: Path, stall: Stall, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    events: list[Event] = []
    with ScriptedOpenAIServer({"chat": [stall, say("Audited: 3 problems.")]}, default=say("OK")) as server:
        argv = ["chat", "--snapshot", str(SEED), "--into", str(tmp_path / "copy"), "--no-live", "--no-transcript"]
        argv += ["--llm", "--base-url", server.base_url, "--model", "scripted", "--llm-deadline", "0.5"]
        started = time.monotonic()
        code = run_chat(
            build_parser().parse_args(argv), lines=["audit this host", "and now?"], interactive=False, consumers=[events.append]
        )
        took = time.monotonic() - started
        assert stall.arrived.is_set()
    said = [e.text for e in events if isinstance(e, Message) and e.role == "assistant"]
    assert said == [
        "Stopped: the model gave no answer within this turn's deadline of 0.5 s (--llm-deadline). Done: nothing. "
        "Slash commands still work (/help).",
        "Audited: 3 problems.",  # the next turn asks again
    ]
    assert code == 0 and took < 30
