"""An agent's "ask" command at a real (pseudo) terminal: asked with the live board paused, never a hang.

The model asks for ``nvidia-smi -l 1`` (the policy's ``ask``: a read that runs until killed). The
question shows where the board was; no answer in time is "no"; the agent's own time limit ends the
wait; "n" is no; the audit always finishes, its rule findings whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rigaudit.agents.llm.testing.server import ScriptedOpenAIServer, call, final
from tests.support.tty import Tty, spawn
from tests.test_llm_support import SEED

pytestmark = pytest.mark.slow

QUESTION = "Run this command? [y/n]"


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    script = {"kernel": [call("shell", command="nvidia-smi -l 1"), final({"findings": []})]}
    with ScriptedOpenAIServer(script, default=final({"findings": []})) as running:
        yield running


def _audit(tmp_path: Path, server: ScriptedOpenAIServer, *flags: str) -> Tty:
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    args = ["audit", "--snapshot", str(SEED), "--areas", "kernel,numa", "--no-transcript", "--json", str(tmp_path / "a.json")]
    args += ["--llm", "--base-url", server.base_url, "--model", "scripted", *flags]
    return spawn(args, env=env, cols=120)


def _finished(tty: Tty, expected: int = 0) -> str:
    code = tty.wait()
    out = tty.words
    assert code == expected and "Traceback" not in out, out
    assert "2/2 investigators" not in out.split("LLM usage", 1)[-1]  # the board is gone at the end
    return out


def test_no_answer_in_time_is_no_and_the_audit_finishes(tmp_path: Path, server: ScriptedOpenAIServer) -> None:
    tty = _audit(tmp_path, server, "--llm-ask-timeout", "2")
    at = tty.expect("An LLM agent (kernel) wants to run: nvidia-smi -l 1")
    at = tty.expect(QUESTION, after=at)
    at = tty.expect("no answer within 2 s: not run", after=at)
    out = _finished(tty)
    assert "not run" in server.requests_for("kernel")[1].messages[-1]["content"]
    assert "Investigators" not in out[out.index("wants to run") : out.index("no answer within")]  # the board paused


def test_the_agents_time_limit_ends_the_wait(tmp_path: Path, server: ScriptedOpenAIServer) -> None:
    tty = _audit(tmp_path, server, "--llm-timeout", "3", "--llm-ask-timeout", "600")
    at = tty.expect(QUESTION)
    tty.expect("stopped while waiting for an answer: not run", after=at, deadline_s=60)
    out = _finished(tty, 4)  # an agent without an answer degrades LLM mode: exit 4 (docs/llm.md)
    assert "agents gave no answer, their rule findings stand: no final answer within 3 s (1 agent: kernel)" in out


def test_no_is_no(tmp_path: Path, server: ScriptedOpenAIServer) -> None:
    tty = _audit(tmp_path, server, "--llm-ask-timeout", "600")
    tty.expect(QUESTION)
    tty.send("n\n")
    _finished(tty)
    told = server.requests_for("kernel")[1].messages[-1]["content"]
    assert told.startswith("not run") and "nvidia-smi" in told
