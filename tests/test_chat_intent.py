"""The chat's deterministic understanding: the intent parser and the slash commands."""

from __future__ import annotations

import pytest

from rigaudit.agents.llm.client import ToolCallRequest
from rigaudit.orchestrator.chat.intent import parse_intent
from rigaudit.orchestrator.chat.planner import step_for
from rigaudit.orchestrator.chat.steps import CommandError, Step, parse_command

STORY = (
    "write down in system-improve.md, apply the changes runtime only for now, check that p2p works with some manual "
    "micro bench, then rerun inference benchmark"
)


def _kinds(text: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(s.kind, s.args) for s in parse_intent(text)]


def test_the_seed_story_sentence_becomes_four_steps_in_order() -> None:
    assert _kinds(STORY) == [
        ("report", ("system-improve.md",)),
        ("apply_runtime", ()),
        ("bench_p2p", ()),
        ("bench_inference", ()),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "rerun the inference benchmark and then write it down in notes/after.md",
            [("bench_inference", ()), ("report", ("notes/after.md",))],
        ),
        ("audit the host, then show me the plan", [("audit", ()), ("plan", ())]),
        ("why is numa.balancing a problem?", [("explain", ("numa.balancing",))]),
        ("compare base.json and after.json", [("compare", ("base.json", "after.json"))]),
        ("undo that", [("rollback", ())]),
        ("check that p2p works", [("bench_p2p", ())]),
        ("apply it, apply it again", [("apply_runtime", ())]),
        ("what is the weather like", []),
    ],
)
def test_sentences(text: str, expected: list[tuple[str, tuple[str, ...]]]) -> None:
    assert _kinds(text) == expected


@pytest.mark.parametrize(
    ("line", "step"),
    [
        ("/audit", Step("audit")),
        ("/plan", Step("plan")),
        ("/why pcie.mrrs", Step("explain", ("pcie.mrrs",))),
        ("/report", Step("report")),
        ("/report 'my notes.md'", Step("report", ("my notes.md",))),
        ("/apply runtime", Step("apply_runtime")),
        ("/bench p2p", Step("bench_p2p")),
        (
            "/bench inference --base-url http://127.0.0.1:1/v1 --model m",
            Step("bench_inference", ("--base-url", "http://127.0.0.1:1/v1", "--model", "m")),
        ),
        ("/compare a.json b.json", Step("compare", ("a.json", "b.json"))),
        ("/rollback j.jsonl", Step("rollback", ("j.jsonl",))),
    ],
)
def test_commands(line: str, step: Step) -> None:
    assert parse_command(line) == step


def test_help_quit_and_mistakes() -> None:
    assert parse_command("/help") == "help" and parse_command("/quit") == "quit" and parse_command("/exit") == "quit"
    for line, hint in (
        ("/apply everything", "/apply runtime"),
        ("/why", "/why CHECK"),
        ("/bench gpu", "/bench p2p"),
        ("/frobnicate", "no command /frobnicate"),
        ("/report 'open", "cannot read"),
    ):
        with pytest.raises(CommandError, match=hint):
            parse_command(line)


def test_model_tool_calls_map_to_the_same_steps() -> None:
    def call(name: str, arguments: str = "{}") -> Step | str:
        return step_for(ToolCallRequest("c1", name, arguments))

    assert call("write_report", '{"path": "system-improve.md"}') == Step("report", ("system-improve.md",))
    assert call("bench_inference", '{"args": "--concurrency 1"}') == Step("bench_inference", ("--concurrency", "1"))
    assert call("apply_runtime") == Step("apply_runtime")
    assert "not valid JSON" in str(call("audit", "{oops"))
    assert "no tool named 'reboot'" in str(call("reboot"))
    assert "explain needs" in str(call("explain"))
