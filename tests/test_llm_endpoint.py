"""The endpoint checked before the fan-out, and LLM failures in --json, the investigators' status and the exit status."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from rigaudit.agents.llm.testing.server import Reply, ScriptedOpenAIServer, call, calls, fail, final, say
from rigaudit.orchestrator.cli import main
from tests.test_llm_support import SEED, rule_findings

AREAS = "kernel,numa,pcie"


def _audit(url: str, tmp_path: Path, *extra: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    out = tmp_path / "audit.json"
    args = ["audit", "--snapshot", str(SEED), "--areas", AREAS, "--llm", "--base-url", url, "--json", str(out)]
    code = main([*args, "--no-live", "--no-transcript", *extra])
    return code, json.loads(out.read_text()) if out.exists() else {}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_endpoint_fails_fast_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, data = _audit(f"http://127.0.0.1:{_free_port()}/v1", tmp_path, "--model", "m")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and not data
    assert len(err) == 1 and "cannot be reached" in err[0] and "without --llm the rules alone run" in err[0]


def test_a_model_the_server_does_not_serve_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ScriptedOpenAIServer([], model="qwen3") as server:
        code, _ = _audit(server.base_url, tmp_path, "--model", "llama")
        assert server.requests == []  # nothing sent before the check said no
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "does not serve 'llama' (it serves: qwen3)" in err[0]


def test_a_refused_key_stops_before_any_agent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ScriptedOpenAIServer([fail(401, "invalid api key")]) as server:
        code, _ = _audit(server.base_url, tmp_path, "--model", "scripted")
        assert len(server.requests) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "refused the key" in err[0]


def test_every_agent_failing_is_a_degraded_audit_in_json_and_exit_status(tmp_path: Path) -> None:
    with ScriptedOpenAIServer([say("OK")], default=fail(400, "unknown field: parallel_tool_calls")) as server:
        code, data = _audit(server.base_url, tmp_path, "--model", "scripted")
    assert code == 4  # not a clean audit
    assert [f for f in data["findings"] if f["source"] == "rules"] == rule_findings(AREAS.split(","))
    assert data["status"] == "complete"  # every check was judged by its rules
    assert data["llm"]["status"] == "failed" and sorted(data["llm"]["failed"]) == sorted(AREAS.split(","))
    assert [r["llm"] for r in data["investigators"]] == ["failed"] * 3
    assert all("unknown field: parallel_tool_calls" in (r["llm_error"] or "") for r in data["investigators"])
    (warning,) = data["warnings"]  # one distinct problem, once
    assert warning.startswith("LLM: agents gave no answer") and "(3 agents:" in warning
    assert data["llm"]["usage"]["requests"] == 4  # the check and one refused request per agent


def test_a_clean_llm_audit_exits_0_and_says_ok(tmp_path: Path) -> None:
    with ScriptedOpenAIServer([say("OK")], default=final({"findings": []})) as server:
        code, data = _audit(server.base_url, tmp_path, "--model", "scripted")
    assert code == 0 and data["llm"]["status"] == "ok" and data["warnings"] == []
    assert [r["llm"] for r in data["investigators"]] == ["answered"] * 3


def _two_reads_then_answer(body: dict[str, Any]) -> Reply:
    """Two big reads in one round, then the answer: a conversation longer than Ollama's 2,048-token context."""
    if (body.get("messages") or [{}])[-1].get("role") == "tool":
        return final({"findings": []})
    return calls(("read_file", {"path": "/proc/cpuinfo"}), ("shell", {"command": "lspci -vvv"}))


def test_an_ollama_that_cuts_prompts_degrades_the_audit(tmp_path: Path) -> None:
    with ScriptedOpenAIServer([say("OK")], default=_two_reads_then_answer, quirks="ollama") as server:
        code, data = _audit(server.base_url, tmp_path, "--model", "scripted")
    assert code == 4 and data["llm"]["status"] == "degraded"
    (problem,) = data["llm"]["problems"]
    assert "num_ctx" in problem and "(3 agents:" in problem


def test_a_server_without_tool_calling_fails_its_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ScriptedOpenAIServer([], quirks="vllm-no-tool-parser") as server:
        code, _ = _audit(server.base_url, tmp_path, "--model", "scripted")
        assert len(server.requests) == 1  # the check only, not one refused request per agent
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1
    assert "--enable-auto-tool-choice" in err[0] and "start the server with tool calling on" in err[0]


def test_the_check_can_be_skipped(tmp_path: Path) -> None:
    with ScriptedOpenAIServer({}, default=final({"findings": []})) as server:
        code, _ = _audit(server.base_url, tmp_path, "--model", "scripted", "--llm-no-preflight")
        keys = {r.key for r in server.requests}
    assert code == 0 and "preflight" not in keys


def test_a_failed_agent_shows_on_its_investigators_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ScriptedOpenAIServer([say("OK")], default=fail(400, "unknown field: parallel_tool_calls")) as server:
        code, _ = _audit(server.base_url, tmp_path, "--model", "scripted")
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.strip().startswith(("kernel", "numa", "pcie"))]
    assert code == 4 and len(lines) >= 3
    assert all("done" in line and "LLM: the model server rejected the request: HTTP 400" in line for line in lines[:3])


def test_agents_lost_to_an_unexpected_error_are_never_an_ok_audit(tmp_path: Path) -> None:
    from rigaudit.agents.llm.client import ChatReply, ChatRequest, OpenAIChatModel

    async def complete(self: OpenAIChatModel, request: ChatRequest) -> ChatReply:
        if request.agent == "kernel":
            return ChatReply(json.dumps({"findings": []}))
        raise RuntimeError("the connection pool is closed")  # not an LlmError: a bug, or a library's own error

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(OpenAIChatModel, "complete", complete)
        code, data = _audit("http://127.0.0.1:9/v1", tmp_path, "--model", "scripted", "--llm-no-preflight")
    assert code == 4 and data["llm"]["status"] == "degraded"
    assert sorted(data["llm"]["failed"]) == ["numa", "pcie"]
    assert any("RuntimeError: the connection pool is closed" in p and "(2 agents:" in p for p in data["llm"]["problems"])


def _reads_cpuinfo(body: dict[str, Any]) -> Reply:
    """Each agent reads a long file (its prompt then passes 2,048 tokens at 3 characters a token), then answers."""
    if any(m.get("role") == "tool" for m in body.get("messages") or []) or not body.get("tools"):
        return final({"findings": []})
    return call("read_file", path="/proc/cpuinfo")


def test_an_ollama_runner_that_keeps_num_ctx_tokens_of_each_prompt_degrades_the_audit(tmp_path: Path) -> None:
    with ScriptedOpenAIServer([say("OK")], default=_reads_cpuinfo, quirks="ollama-runner") as server:
        code, data = _audit(server.base_url, tmp_path, "--model", "scripted")
        counted = [r for r in server.requests if r.key != "preflight" and r.prompt_chars > 3 * 2048]
    assert counted  # some agents' prompts are longer than the window at the server's 3 characters a token
    assert code == 4 and data["llm"]["status"] == "degraded"
    (problem,) = data["llm"]["problems"]
    assert "cut the prompt" in problem and "num_ctx" in problem


def test_truncation_is_read_from_the_usage_of_each_request() -> None:
    from rigaudit.agents.llm.client import looks_truncated

    assert looks_truncated(8212, 2048, 4)  # the prompt counts the whole window: Ollama's runner kept num_ctx tokens
    assert looks_truncated(8212, 2044, 4)  # prompt plus completion fill it
    assert looks_truncated(30_000, 3000, 4)  # far fewer tokens than 30,000 characters hold
    assert looks_truncated(8000, 1500, 4, chars_per_token=3.0)  # far below what this server's tokenizer counts
    assert not looks_truncated(5596, 1865, 4, chars_per_token=3.0)
    assert not looks_truncated(4000, 2048, 4)  # 2 characters a token: the whole prompt fits
    assert not looks_truncated(1800, 100, 4)  # too short to tell
