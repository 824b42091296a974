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


def test_model_tool_calls_map_to_the_same_steps_with_typed_arguments() -> None:
    def call(name: str, arguments: str = "{}") -> Step | str:
        return step_for(ToolCallRequest("c1", name, arguments))

    assert call("write_report", '{"path": "system-improve.md"}') == Step("report", ("system-improve.md",), origin="model")
    bench = call("bench_inference", '{"concurrency": [1, 4], "requests": 8}')
    assert isinstance(bench, Step) and bench.bench is not None and bench.origin == "model"
    assert bench.bench.words() == ("--concurrency", "1,4", "--requests", "8")
    assert call("apply_runtime") == Step("apply_runtime", origin="model")
    assert "not valid JSON" in str(call("audit", "{oops"))
    assert "no tool named 'reboot'" in str(call("reboot"))
    assert "explain: check: Field required" in str(call("explain"))


@pytest.mark.parametrize(
    ("name", "arguments", "why"),
    [
        ("bench_inference", '{"args": "--command=/bin/sh"}', "args: Extra inputs are not permitted"),
        ("bench_inference", '{"command": "id"}', "command: Extra inputs are not permitted"),
        ("bench_inference", '{"concurrency": [100000]}', "less than or equal to 256"),
        ("bench_inference", '{"requests": "8; rm -rf /"}', "requests: Input should be a valid integer"),
        ("write_report", '{"path": "/etc/cron.d/x.md"}', "a relative file name"),
        ("write_report", '{"path": "../outside.md"}', "no '..'"),
        ("write_report", '{"path": "notes.sh"}', "a .md file"),
        ("write_report", '{"path": "~/.bashrc.md"}', "each part"),
        ("compare", '{"base": "/etc/passwd", "new": "b.json"}', "a relative file name"),
        ("rollback", '{"journal": "/root/other.jsonl"}', "journal: Extra inputs are not permitted"),
        ("explain", '{"check": "x; reboot"}', "check: String should match pattern"),
    ],
)
def test_a_model_cannot_pass_argv_paths_outside_or_anything_untyped(name: str, arguments: str, why: str) -> None:
    answer = step_for(ToolCallRequest("c1", name, arguments))
    assert isinstance(answer, str) and answer.startswith(f"error: {name}: ") and why in answer, answer


def test_the_tool_schemas_are_closed_objects_with_no_free_text_argv() -> None:
    from rigaudit.orchestrator.chat.actions import TOOLS

    for tool in TOOLS:
        parameters = tool["function"]["parameters"]
        assert parameters["type"] == "object" and parameters["additionalProperties"] is False
        assert "args" not in parameters["properties"] and "command" not in parameters["properties"]
