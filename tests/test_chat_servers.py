"""The chat against every server family the scripted server plays (``FAMILIES``): its requests stream by
default, so the families' streaming habits (no ``index`` on tool-call deltas, an error event mid-stream, content
as a list of parts, a server that refuses to stream) meet it first. In each, the model's tool call runs as a step
and its answer is said; a family that cannot work says so in one line."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from rigaudit.agents.llm.testing.server import FAMILIES, Reply, ScriptedOpenAIServer, call
from rigaudit.orchestrator.audit.run import AuditOptions
from rigaudit.orchestrator.chat import coordinator
from rigaudit.orchestrator.cli import build_parser, main
from rigaudit.orchestrator.commands.chat import run_chat
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.events.chat import Message
from rigaudit.tools.schema.events.union import Event
from tests.support.audits import audited
from tests.test_llm_support import SEED

ANSWER = "numa.balancing is the problem here."


def _model(body: dict[str, Any]) -> Reply:
    """Explains numa.balancing first, then answers: by what the conversation holds, so a retried request (a
    stream that broke) gets the same reply again."""
    if any(m.get("role") == "tool" for m in body.get("messages") or []):
        return Reply(content=ANSWER)
    if any(m.get("role") == "user" for m in body.get("messages") or []):
        return call("explain", check="numa.balancing")
    return Reply(content="ok")  # the endpoint check


@pytest.fixture(autouse=True)
def _config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture(scope="module")
def _seed_audit() -> AuditResult:
    return audited(SEED)


@pytest.fixture(autouse=True)
def _one_rule_audit(_seed_audit: AuditResult, monkeypatch: pytest.MonkeyPatch) -> None:
    """The seed's rule audit is made once for the module: what differs between families is the model's side."""

    async def audited(host: object, options: AuditOptions | None = None, **_: object) -> AuditResult:
        assert options is None or options.brain is None
        return _seed_audit

    monkeypatch.setattr(coordinator, "run_audit", audited)


def _said(family: str) -> list[str]:
    with ScriptedOpenAIServer({}, default=_model, quirks=family) as server:
        argv = ["chat", "--snapshot", str(SEED), "--llm", "--base-url", server.base_url, "--model", "scripted",
                "--no-transcript"]  # fmt: skip
        events: list[Event] = []
        code = run_chat(build_parser().parse_args(argv), lines=["why is numa balancing a problem"], interactive=False,
                        consumers=[events.append])  # fmt: skip
    assert code == 0
    return [e.text for e in events if isinstance(e, Message) and e.role == "assistant"]


@pytest.mark.parametrize("family", sorted(set(FAMILIES) - {"vllm-no-tool-parser"}))
def test_the_chat_runs_the_models_step_and_says_its_answer(family: str) -> None:
    said = _said(family)
    assert any(s.startswith("explain numa.balancing: done") for s in said), said
    assert said[-1] == ANSWER, said


def test_a_server_without_tool_calling_is_one_line_before_the_first(capsys: pytest.CaptureFixture[str]) -> None:
    with ScriptedOpenAIServer({}, default=_model, quirks="vllm-no-tool-parser") as server:
        argv = ["chat", "--snapshot", str(SEED), "--llm", "--base-url", server.base_url, "--model", "scripted",
                "--no-transcript", "--no-live"]  # fmt: skip
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("sys.stdin", io.StringIO("why is numa balancing a problem\n"))
            code = main(argv)
        assert len(server.requests) == 1  # the endpoint check's one request, never the person's line
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "--enable-auto-tool-choice" in err[0], err
