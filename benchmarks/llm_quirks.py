"""Every model-server behaviour rigaudit knows, each through a whole LLM audit: handled, a clear error, or bad.

Each behaviour (:data:`BEHAVIOURS`, listed as data) is played by the scripted loopback server
(``rigaudit.agents.llm.testing.server``: a server family of ``FAMILIES``, other ``Quirks``, or scripted
replies) and driven through the real openai client by an in-process

    rigaudit audit --demo seed --areas AREAS --llm --base-url URL --model scripted --json FILE

with the LLM settings in a config file of its own (``stream``, fast back-off...). Its outcome is:

- ``handled``: exit 0, ``llm.status`` ok, every agent answered, every tool call the script made was run
  (a tool result that is not an ``error:``), and the rule findings are those of the rules alone;
- ``clear error``: the audit says what went wrong in one line that names the cause (``reason``): exit 1
  with one ``rigaudit:`` line on stderr, or exit 4 with ``llm.status`` not ok and a problem saying it,
  the rule findings still whole;
- ``bad``: anything else (an ok audit with agents lost, or of a behaviour that cannot be handled such
  as a silently cut prompt; a tool call never run, a traceback, a wrong or missing reason, rule
  findings changed).

Each behaviour also says what it should be (``expect``); the exit status is 1 when any is bad or not
what it should be.

    python benchmarks/llm_quirks.py [--areas kernel,numa,pcie | --areas all] [--only NAME,...] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rigaudit.agents.llm.testing.server import (
    Quirks,
    Reply,
    Responder,
    ScriptedOpenAIServer,
    call,
    calls,
    fail,
    final,
    garbage,
    route_by_system_prompt,
    say,
    slow,
)
from rigaudit.agents.registry import area_names
from rigaudit.orchestrator.cli import main as rigaudit

AREAS = "kernel,numa,pcie"
ANSWER: dict[str, Any] = {"findings": []}
FAST: dict[str, Any] = {"backoff_s": 0.01, "backoff_cap_s": 0.05, "preflight_timeout_s": 10}
"""Settings every behaviour runs with (a config file of its own): retries back off in milliseconds."""

Script = Callable[[], Responder]
"""Builds one behaviour's responder (fresh state per run)."""


def _tool_results(body: Mapping[str, Any]) -> list[str]:
    return [str(m.get("content") or "") for m in body.get("messages") or [] if m.get("role") == "tool"]


def answer_at_once() -> Responder:
    """Every agent answers ``{"findings": []}`` at once; the endpoint check is answered ``OK``."""
    return lambda body: final(ANSWER)


def read_then_answer(*reads: tuple[str, dict[str, Any]]) -> Script:
    """Each agent calls ``reads`` in one round (default: read /proc/cmdline), then answers."""
    chosen = reads or (("read_file", {"path": "/proc/cmdline"}),)

    def build() -> Responder:
        def respond(body: dict[str, Any]) -> Reply:
            if not body.get("tools") or _tool_results(body):
                return final(ANSWER)
            return calls(*chosen)

        return respond

    return build


def first_then(first: Reply | list[Reply], then: Script = answer_at_once) -> Script:
    """Each agent's first request(s) answered ``first`` (errors, odd bodies), then as ``then``."""
    firsts = first if isinstance(first, list) else [first]

    def build() -> Responder:
        seen: dict[str, int] = {}
        after = then()

        def respond(body: dict[str, Any]) -> Reply:
            key = route_by_system_prompt(body)
            n = seen.get(key, 0)
            seen[key] = n + 1
            return firsts[n] if n < len(firsts) else after(body)

        return respond

    return build


def always(reply: Reply) -> Script:
    return lambda: lambda body: reply


def tools_forever() -> Responder:
    return lambda body: call("read_file", path="/proc/cmdline")


class Behaviour:
    """One server behaviour: how it is played, and what rigaudit should make of it."""

    def __init__(
        self,
        name: str,
        what: str,
        script: Script = answer_at_once,
        *,
        quirks: Quirks | str | None = None,
        settings: Mapping[str, Any] | None = None,
        flags: tuple[str, ...] = (),
        expect: str = "handled",
        reason: str = "",
        tools: bool = False,
        json_schema: bool = True,
        model: str = "scripted",
        preflight: Reply | None = None,
    ) -> None:
        self.name, self.what, self.script, self.quirks = name, what, script, quirks
        self.settings = {**FAST, **(settings or {})}
        self.flags, self.expect, self.reason, self.tools = flags, expect, reason, tools
        self.json_schema, self.model, self.preflight = json_schema, model, preflight


READ = read_then_answer()
TWO_READS = read_then_answer(("read_file", {"path": "/proc/cmdline"}), ("read_file", {"path": "/proc/version"}))
BIG_READS = read_then_answer(("read_file", {"path": "/proc/cpuinfo"}), ("shell", {"command": "lspci -vvv"}))
STREAM = {"stream": True}
LONG_ANSWER = '{"findings": [' + " " * 9000 + "]}"  # about 2,250 tokens: cut at 2,048, whole at 4,096

BEHAVIOURS: tuple[Behaviour, ...] = (
    # -- the server families of the scripted server (FAMILIES), a tool round then the answer --
    Behaviour("vllm", "vLLM with a tool parser and a reasoning parser", READ, quirks="vllm", tools=True),
    Behaviour("vllm-stream", "vLLM, streamed (reasoning_content deltas)", READ, quirks="vllm", settings=STREAM, tools=True),
    Behaviour("sglang", "SGLang with qwen25 tool parser", READ, quirks="sglang", tools=True),
    Behaviour("sglang-stream", "SGLang, streamed", READ, quirks="sglang", settings=STREAM, tools=True),
    Behaviour("llama.cpp", "llama-server --jinja: arguments as a JSON object", READ, quirks="llama.cpp", tools=True),
    Behaviour("llama.cpp-stream", "llama-server, streamed", READ, quirks="llama.cpp", settings=STREAM, tools=True),
    Behaviour("llama.cpp-old", "older llama-server: 500 for json_schema", READ, quirks="llama.cpp-old", tools=True),
    Behaviour("tgi-old", "older TGI: 422 for both OpenAI formats, object arguments", READ, quirks="tgi-old", tools=True),
    Behaviour("litellm", "LiteLLM proxy: a provider without json_schema (400)", READ, quirks="litellm", tools=True),
    Behaviour("openai-reasoning", "400 'Use max_completion_tokens instead'", READ, quirks="openai-reasoning", tools=True),
    Behaviour("hermes-text", "Hermes/Qwen <tool_call> text in the content", READ, quirks="hermes-text", tools=True),
    Behaviour("hermes-text-stream", "<tool_call> text, streamed", READ, quirks="hermes-text", settings=STREAM, tools=True),
    Behaviour("no-stream", "400 'streaming is not supported': sent whole", READ, quirks="no-stream", settings=STREAM, tools=True),
    Behaviour(
        "vllm-no-tool-parser",
        "vLLM without --enable-auto-tool-choice: every request with tools refused",
        quirks="vllm-no-tool-parser",
        expect="clear error",
        reason="--enable-auto-tool-choice",
    ),
    Behaviour("vllm-short-context", "vLLM --max-model-len 2500: 400 maximum context length", quirks="vllm-short-context"),
    Behaviour("tgi-short-context", "TGI: 422 inputs tokens + max_new_tokens must be <= N", quirks="tgi-short-context"),
    Behaviour(
        "llama.cpp-short-context", "llama-server: 400 exceeds the available context size", quirks="llama.cpp-short-context"
    ),
    Behaviour(
        "ollama",
        "Ollama num_ctx 2048: a conversation past it cut silently (prompt + completion fill the window)",
        BIG_READS,
        quirks="ollama",
        expect="clear error",
        reason="num_ctx",
    ),
    Behaviour(
        "ollama-runner",
        "Ollama's runner keeps num_ctx tokens of a longer prompt (the prompt counts 2048)",
        BIG_READS,
        quirks="ollama-runner",
        expect="clear error",
        reason="num_ctx",
    ),
    Behaviour(
        "llama3-python-tag", "Llama 3.x <|python_tag|>{...} calls in the content", READ, quirks="llama3-python-tag", tools=True
    ),
    Behaviour(
        "llama3-python-tag-stream",
        "<|python_tag|> calls, two in a round, streamed",
        TWO_READS,
        quirks="llama3-python-tag",
        settings=STREAM,
        tools=True,
    ),
    Behaviour("llama3-json", "Llama 3.x bare JSON {name, parameters} calls", TWO_READS, quirks="llama3-json", tools=True),
    Behaviour("llama3-json-stream", "bare JSON calls, streamed", READ, quirks="llama3-json", settings=STREAM, tools=True),
    Behaviour("llama3-function-tag", "Llama 3.x <function=NAME>{...}</function>", READ, quirks="llama3-function-tag", tools=True),
    Behaviour("mistral", "Mistral [TOOL_CALLS] [{...}]", TWO_READS, quirks="mistral", tools=True),
    Behaviour("mistral-stream", "[TOOL_CALLS] [...], streamed", READ, quirks="mistral", settings=STREAM, tools=True),
    Behaviour("mistral-v11", "Mistral v11 [TOOL_CALLS]NAME[ARGS]{...}", TWO_READS, quirks="mistral-v11", tools=True),
    Behaviour(
        "openrouter",
        "OpenRouter: an error event after part of every second stream of each agent",
        READ,
        quirks="openrouter",
        settings=STREAM,
        tools=True,
    ),
    Behaviour("content-parts", "content as [{type: text, text: ...}]", READ, quirks="content-parts", tools=True),
    Behaviour("content-parts-stream", "content parts in stream deltas", quirks="content-parts", settings=STREAM),
    Behaviour(
        "gemini",
        "Gemini's compatibility layer, streamed calls without index",
        TWO_READS,
        quirks="gemini",
        settings=STREAM,
        tools=True,
    ),
    Behaviour("gemini-whole", "Gemini's compatibility layer, whole answers", TWO_READS, quirks="gemini", tools=True),
    # -- other quirks --
    Behaviour("no-usage", "no usage in the answers", READ, quirks=Quirks(report_usage=False), tools=True),
    Behaviour("no-usage-stream", "no usage chunk in streams", quirks=Quirks(report_usage=False), settings=STREAM),
    Behaviour("no-json-schema", "a server without json_schema (400)", json_schema=False),
    Behaviour("no-json-schema-flag", "--llm-no-json-schema", flags=("--llm-no-json-schema",)),
    Behaviour(
        "think-block",
        "reasoning as a <think> block before the answer",
        always(Reply(content=json.dumps(ANSWER), reasoning="hmm { not json")),
    ),
    Behaviour(
        "think-stream",
        "a <think> block, streamed",
        always(Reply(content=json.dumps(ANSWER), reasoning="so }{")),
        settings=STREAM,
    ),
    Behaviour(
        "object-arguments-stream",
        "object arguments, streamed",
        READ,
        quirks=Quirks(arguments_as_object=True),
        settings=STREAM,
        tools=True,
    ),
    Behaviour(
        "stream-error-always",
        "an error event in every stream",
        quirks=Quirks(stream_error_every=1),
        settings=STREAM,
        expect="clear error",
        reason="the stream broke",
    ),
    # -- scripted replies: errors and odd answers --
    Behaviour(
        "429-retry-after", "429 with retry-after-ms, then answers", first_then(fail(429, "rate limited", retry_after_ms=5))
    ),
    Behaviour("500-once", "500 once, then answers", first_then(fail(500, "overloaded"))),
    Behaviour("503-twice", "503 twice, then answers", first_then([fail(503, "unavailable"), fail(503, "unavailable")])),
    Behaviour("502-gateway", "502 from a gateway, then answers", first_then(fail(502, "bad gateway"))),
    Behaviour(
        "slow-once",
        "no answer within request_timeout_s once",
        first_then(slow(1.5, final(ANSWER))),
        settings={"request_timeout_s": 1},
    ),
    Behaviour("garbage-body", "a 200 whose body is not a chat completion", first_then(garbage())),
    Behaviour(
        "no-choices", "a 200 with no choices", first_then(garbage('{"id": "x", "object": "chat.completion", "choices": []}'))
    ),
    Behaviour("not-json-answer", "an answer that is not JSON, then a valid one", first_then(say("The system looks fine to me."))),
    Behaviour(
        "invalid-answer", "an answer that fails validation, then a valid one", first_then(final({"findings": [{"check": "x"}]}))
    ),
    Behaviour("fenced-answer", "the answer in a ```json fence", always(say("Here:\n```json\n" + json.dumps(ANSWER) + "\n```"))),
    Behaviour("report-tool", "the answer as a report_findings call", always(call("report_findings", findings=[]))),
    Behaviour(
        "finish-length", "an answer cut at the completion limit, whole at twice the room", always(Reply(content=LONG_ANSWER))
    ),
    Behaviour(
        "malformed-arguments",
        "tool arguments that are not JSON, then the answer",
        first_then(call("read_file", '{"path": "/proc/cmd')),
    ),
    Behaviour("unknown-tool", "a tool that does not exist, then the answer", first_then(call("run_anything", command="id"))),
    Behaviour(
        "tools-forever",
        "a model that never stops calling tools",
        tools_forever,
        expect="clear error",
        reason="steps without a final answer",
    ),
    Behaviour(
        "500-forever",
        "500 on every request",
        always(fail(500, "overloaded")),
        expect="clear error",
        reason="failed 6 times: HTTP 500",
    ),
    Behaviour(
        "400-unknown-field",
        "400 for every agent's request (an unknown field)",
        always(fail(400, "unknown field: parallel_tool_calls")),
        expect="clear error",
        reason="unknown field: parallel_tool_calls",
    ),
    Behaviour(
        "401-key", "the key refused", preflight=fail(401, "invalid api key"), expect="clear error", reason="refused the key"
    ),
    Behaviour(
        "404-model", "a model the server does not serve", model="other", expect="clear error", reason="does not serve 'other'"
    ),
)


def _run(behaviour: Behaviour, areas: str, work: Path) -> dict[str, Any]:
    """One audit against the behaviour's server: exit status, stderr lines, the JSON, the requests."""
    config = work / "config" / "rigaudit" / "config.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"llm": behaviour.settings}))
    out = work / "audit.json"
    respond = behaviour.script()
    scripts: dict[str, list[Reply | Responder]] = {"preflight": [behaviour.preflight or say("OK")]}
    server = ScriptedOpenAIServer(scripts, default=respond, quirks=behaviour.quirks, json_schema=behaviour.json_schema)
    stdout, stderr = io.StringIO(), io.StringIO()
    argv = ["audit", "--demo", "seed", "--areas", areas, "--llm", "--base-url", server.base_url, "--model", behaviour.model]
    argv += ["--json", str(out), "--no-live", "--no-transcript", *behaviour.flags]
    os.environ["XDG_CONFIG_HOME"] = str(config.parent.parent)
    crashed = ""
    with server, contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = rigaudit(argv)
        except BaseException as exc:  # a traceback is a bad outcome, not the end of the benchmark
            code, crashed = -1, f"{exc.__class__.__name__}: {exc}"
        requests = server.requests
    data = json.loads(out.read_text()) if out.exists() else {}
    out.unlink(missing_ok=True)
    return {"code": code, "stderr": stderr.getvalue(), "data": data, "requests": requests, "crashed": crashed}


def _baseline(areas: str) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
        out = Path(tmp) / "rules.json"
        rigaudit(["audit", "--demo", "seed", "--areas", areas, "--json", str(out), "--no-live", "--no-transcript"])
        return list(json.loads(out.read_text())["findings"])


def judge(behaviour: Behaviour, run: dict[str, Any], rules: list[dict[str, Any]]) -> tuple[str, str]:
    """``(outcome, why)``: ``handled``, ``clear error`` or ``bad``."""
    if run["crashed"]:
        return "bad", f"crashed: {run['crashed']}"
    code, data, err = run["code"], run["data"], [line for line in run["stderr"].splitlines() if line.strip()]
    if "Traceback" in run["stderr"]:
        return "bad", "a traceback on stderr"
    if data and [f for f in data.get("findings", []) if f.get("source") == "rules"] != rules:
        return "bad", "the rule findings changed"
    llm = data.get("llm") or {}
    lost = [r["area"] for r in data.get("investigators", []) if r.get("llm") != "answered"]
    if code == 0 and llm.get("status") == "ok" and not lost:
        if behaviour.expect == "clear error":  # what cannot be handled was not said (a cut prompt called ok)
            return "bad", f"an ok audit though it should have said {behaviour.reason!r}"
        if behaviour.tools:
            ran = {r.key for r in run["requests"] if any(not t.startswith("error") for t in _tool_results(r.body))}
            areas = {r["area"] for r in data.get("investigators", [])}
            if not areas <= ran:
                return "bad", f"tool calls not run for {', '.join(sorted(areas - ran))}"
        return "handled", "; ".join(llm.get("notes") or []) or "answered as any server"
    if code == 0 and (lost or llm.get("status") != "ok"):
        return "bad", f"exit 0 with agents lost ({', '.join(lost)}) or llm status {llm.get('status')}"
    if code == 1 and not data:
        if len(err) == 1 and behaviour.reason and behaviour.reason in err[0]:
            return "clear error", err[0]
        return "bad", f"exit 1 without one clear line: {' | '.join(err)[:200]}"
    if code == 4 and llm.get("status") in ("degraded", "failed"):
        said = [p for p in llm.get("problems") or [] if behaviour.reason and behaviour.reason in p]
        if said:
            return "clear error", said[0]
        return (
            "bad",
            f"llm {llm.get('status')} without the reason ({behaviour.reason!r}): {'; '.join(llm.get('problems') or [])[:200]}",
        )
    return "bad", f"exit {code}, llm status {llm.get('status')}, lost {lost}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--areas", default=AREAS, help=f"the areas audited (default {AREAS}; 'all': every area)")
    parser.add_argument("--only", default="", help="run only these behaviours (comma-separated names)")
    parser.add_argument("--json", type=Path, help="write every outcome to this file")
    args = parser.parse_args(argv)
    os.environ["RIGAUDIT_BLOCK_REAL_LLM"] = "1"  # loopback only
    areas = ",".join(area_names()) if args.areas == "all" else args.areas
    chosen = [b for b in BEHAVIOURS if not args.only or b.name in args.only.split(",")]
    rules = _baseline(areas)
    results: list[dict[str, Any]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for behaviour in chosen:
            begun = time.perf_counter()
            outcome, why = judge(behaviour, _run(behaviour, areas, Path(tmp)), rules)
            seconds = time.perf_counter() - begun
            results.append(
                {
                    "name": behaviour.name,
                    "what": behaviour.what,
                    "expect": behaviour.expect,
                    "outcome": outcome,
                    "why": why,
                    "seconds": round(seconds, 2),
                }
            )
            mark = "" if outcome == behaviour.expect else f"  (expected {behaviour.expect})"
            print(f"{behaviour.name:26} {outcome:12} {seconds:5.1f} s  {why[:150]}{mark}", flush=True)
    totals = {kind: sum(r["outcome"] == kind for r in results) for kind in ("handled", "clear error", "bad")}
    unexpected = [r["name"] for r in results if r["outcome"] != r["expect"]]
    print(
        f"\n{len(results)} behaviours, areas {areas}: {totals['handled']} handled, {totals['clear error']} clear error, "
        f"{totals['bad']} bad; {len(unexpected)} not as expected{': ' + ', '.join(unexpected) if unexpected else ''} "
        f"({time.perf_counter() - started:.0f} s)"
    )
    if args.json is not None:
        args.json.write_text(json.dumps({"areas": areas, "totals": totals, "results": results}, indent=2) + "\n")
    return 1 if totals["bad"] or unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
