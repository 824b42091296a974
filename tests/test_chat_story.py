"""The seed story typed into `rigaudit chat --snapshot SEED`: report, gated runtime apply on a copy, the P2P
benchmark request and the inference rerun, in that order, every approval asked; with an LLM (the scripted
loopback server through the real openai client) and without one (the intent parser, then commands)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from rigaudit.agents.llm.testing.server import ScriptedOpenAIServer, call, calls, fail, say
from rigaudit.orchestrator.change.approval import ScriptedConsole
from rigaudit.orchestrator.cli import build_parser
from rigaudit.orchestrator.commands.chat import run_chat
from rigaudit.tools.bench.fake_server import FakeTiming, OpenAIStreamServer, fake_server
from rigaudit.tools.schema.events.apply import ApprovalDecided
from rigaudit.tools.schema.events.chat import LlmExchange, Message
from rigaudit.tools.schema.events.union import Event

STORY = (
    "write down in system-improve.md, apply the changes runtime only for now, check that p2p works with some manual "
    "micro bench, then rerun inference benchmark"
)
ANSWERS = ["yes", "all", "yes", "yes"]  # the report; the apply gate (all runtime steps); the P2P run; the rerun
ASKED = [
    "Go ahead: write the report system-improve.md?",
    "Apply ",
    "Go ahead: run the P2P micro-benchmark?",
    "Go ahead: rerun the inference benchmark?",
]
DONE = [
    "write the report to system-improve.md: done",
    "apply the runtime changes: done",
    "run the P2P micro-benchmark:",
    "rerun the inference benchmark: done",
]
NUMA = Path("files/proc/sys/kernel/numa_balancing")


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The conversation's folder (and its journals) in RAM when possible: an apply fsyncs every journal entry."""
    shm = Path("/dev/shm")
    ram = shm.is_dir() and os.access(shm, os.W_OK)
    folder = Path(tempfile.mkdtemp(prefix="rigaudit-chat-test-", dir=shm)) if ram else tmp_path
    monkeypatch.chdir(folder)
    monkeypatch.setenv("XDG_STATE_HOME", str(folder / "state"))
    yield folder
    if ram:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def inference() -> Iterator[OpenAIStreamServer]:
    with fake_server(FakeTiming(ttft_s=0.0, itl_s=0.0)) as server:
        yield server


def _chat(
    seed: Path,
    work: Path,
    lines: Sequence[str],
    answers: Sequence[str],
    *extra: str,
    interactive: bool = True,
    bench_url: str | None = None,
) -> tuple[int, ScriptedConsole, list[Event]]:
    argv = ["chat", "--snapshot", str(seed), "--into", str(work / "copy"), "--no-live", "--transcript", str(work / "chat.jsonl")]
    if bench_url:
        argv += [
            "--bench-base-url",
            bench_url,
            "--bench-model",
            "m",
            "--bench-args",
            "--concurrency 1 --requests 2 --max-tokens 4 --warmup 0",
        ]
    console = ScriptedConsole(list(answers))
    events: list[Event] = []
    args = build_parser().parse_args([*argv, *extra])
    code = run_chat(args, lines=lines, console=console, interactive=interactive, consumers=[events.append])
    return code, console, events


def _said(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, Message) and e.role == "assistant"]


def _in_order(text: str, marks: Sequence[str]) -> None:
    """Each mark appears in ``text``, each after the one before."""
    position = -1
    for mark in marks:
        position = text.index(mark, position + 1)


def _assert_asked(asked: Sequence[str]) -> None:
    assert len(asked) == 4 and asked[0] == ASKED[0] and asked[1].startswith(ASKED[1]) and list(asked[2:]) == ASKED[2:]


def _assert_story_files(seed: Path, work: Path) -> None:
    """The copy changed, the snapshot did not; the report and the transcript hold the story."""
    assert (work / "copy" / NUMA).read_text().strip() == "0"
    assert (seed / NUMA).read_text().strip() == "1"
    report = (work / "system-improve.md").read_text()
    assert "## Applied changes" in report and "| numa.balancing |" in report
    assert "Inference benchmark" in report.split("## Validation", 1)[1]  # the rerun, appended by bench
    recorded = [json.loads(line) for line in (work / "chat.jsonl").read_text().splitlines()[1:]]
    assert STORY in [r["text"] for r in recorded if r.get("type") == "message" and r.get("role") == "user"]
    assert sum(r.get("type") == "approval" for r in recorded) >= 4


def test_the_story_without_an_llm_then_again_with_commands(seed_dir: Path, work: Path, inference: OpenAIStreamServer) -> None:
    lines = [
        "why numa.balancing",
        STORY,
        "/rollback",
        "/report",
        "/apply runtime",
        "/bench p2p",
        "/bench inference",
        "/quit",
        "/audit",
    ]
    code, console, events = _chat(seed_dir, work, lines, [*ANSWERS, "yes", *ANSWERS], bench_url=inference.base_url)
    assert code == 0
    asked = console.asked
    _assert_asked(asked[:4])
    assert asked[4].startswith("Go ahead: roll back ")
    _assert_asked(asked[5:])
    console.assert_complete()
    said = _said(events)
    assert said[0].startswith("explain numa.balancing: done. numa.balancing [problem medium]")
    assert said[1].startswith("I will: 1. write the report to system-improve.md; 2. apply the runtime changes; 3. run the P2P")
    text = "\n".join(said)
    _in_order(text, [f"[{i}/4] {mark}" for i, mark in enumerate(DONE, 1)] + ["roll back the last apply: done", *DONE])
    assert text.count("Re-audit: numa.balancing ok, power.cstates ok, pcie.mrrs ok") == 2  # in the plan's order
    assert "skipped. not run here: needs torch/CUDA" in text or "run the P2P micro-benchmark: done" in text
    assert "Compared with" in said[-2]  # the second run is compared with the first
    assert said[-1] == "Bye."  # nothing after /quit
    assert inference.requests == 4
    _assert_story_files(seed_dir, work)


def test_the_story_with_an_llm_through_the_loopback_server(seed_dir: Path, work: Path, inference: OpenAIStreamServer) -> None:
    script = [
        call("write_report", path="system-improve.md"),
        calls(("apply_runtime", {}), ("bench_p2p", {})),
        call("bench_inference"),
        say("Done: the report is written, the runtime fixes are on the copy, P2P and the rerun were requested."),
    ]
    llm = ["--llm", "--base-url", "", "--model", "scripted"]
    with ScriptedOpenAIServer({"preflight": [say("OK")], "chat": script}) as server:
        llm[2] = server.base_url
        code, console, events = _chat(seed_dir, work, [STORY], ANSWERS, *llm, bench_url=inference.base_url)
        server.assert_complete()
        last = server.requests[-1].messages
    assert code == 0
    _assert_asked(console.asked)
    console.assert_complete()
    decided = [e.step_id for e in events if isinstance(e, ApprovalDecided) and e.decision != "auto"]
    assert decided[0] == "write the report system-improve.md"
    assert decided[-2:] == ["run the P2P micro-benchmark", "rerun the inference benchmark"]
    _in_order("\n".join(_said(events)), DONE)
    results = [m["content"] for m in last if m["role"] == "tool"]  # what the model was told, step by step
    assert [r.split(":", 1)[0] for r in results] == ["done", "done", results[2].split(":", 1)[0], "done"]
    assert results[2].startswith(("skipped: not run here: needs torch/CUDA", "done"))
    assert _said(events)[-1].startswith("Done: the report is written")
    assert [e.agent for e in events if isinstance(e, LlmExchange)] == ["chat"] * 4 + ["total"]
    assert inference.requests == 2
    _assert_story_files(seed_dir, work)


def test_a_refused_step_stops_the_sequence(seed_dir: Path, work: Path) -> None:
    code, console, events = _chat(seed_dir, work, [STORY], ["yes", "quit"])
    assert code == 0 and len(console.asked) == 2  # the P2P run and the rerun are never asked about
    said = "\n".join(_said(events))
    assert "apply the runtime changes: refused" in said
    assert "Stopped at step 2 (apply the runtime changes: refused); not done: run the P2P micro-benchmark, rerun" in said
    assert (work / "system-improve.md").exists()
    assert (work / "copy" / NUMA).read_text().strip() == "1"  # quit before any change


def test_without_a_terminal_nothing_is_approved_unless_yes(seed_dir: Path, work: Path) -> None:
    code, console, events = _chat(seed_dir, work, ["/report", "/apply runtime"], [], interactive=False)
    assert code == 0 and console.asked == []
    said = _said(events)
    assert said[0].startswith("write the report to system-improve.md: refused. no terminal to ask for approval and no --yes")
    assert said[1].startswith("apply the runtime changes: refused")
    assert not (work / "system-improve.md").exists() and not (work / "copy").exists()


def test_a_failing_model_leaves_the_commands_working(seed_dir: Path, work: Path) -> None:
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "rigaudit" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"llm": {"retries": 0, "client_retries": 0}}))
    with ScriptedOpenAIServer({"preflight": [say("OK")], "chat": [fail(500, "down")]}) as server:
        llm = ["--llm", "--base-url", server.base_url, "--model", "scripted"]
        code, _, events = _chat(seed_dir, work, ["what should we fix?", "/plan"], [], *llm)
    said = _said(events)
    assert code == 0 and said[0].startswith("The model failed:") and "HTTP 500" in said[0]
    assert said[1].startswith("show the plan: done. [P0]")


@pytest.mark.slow
def test_a_pipe_feeds_one_command_per_line_and_eof_ends(seed_dir: Path, work: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rigaudit.orchestrator.cli", "chat", "--snapshot", str(seed_dir), "--no-transcript"],
        input="/plan\n/why pcie.mrrs\nhello?\n",
        capture_output=True,
        text=True,
        timeout=60,
        cwd=work,
    )
    assert done.returncode == 0, done.stderr
    assert "[P0]" in done.stdout and "pcie.mrrs [problem medium]" in done.stdout
    assert "I did not catch what to do" in done.stdout
