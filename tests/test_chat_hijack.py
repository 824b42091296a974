"""A hijacked chat model runs nothing and writes nothing the person did not name, with and without --yes.

The model only has typed actions (no argv, no paths outside the work directory); ``--yes`` approves a
model's step only when the person's own words asked for it as the model chose it; a prompt shows
exactly what runs and where, and says when the model chose it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import anyio
import pytest

from rigaudit.agents.llm.testing import ScriptedModel
from rigaudit.agents.llm.testing.server import Reply, call, say
from rigaudit.agents.llm.usage import UsageBook
from rigaudit.orchestrator.change.approval import ScriptedConsole
from rigaudit.orchestrator.chat.coordinator import ChatSettings, Coordinator
from rigaudit.orchestrator.chat.planner import LlmPlanner
from rigaudit.orchestrator.commands._bench import inference_run
from rigaudit.tools.bench.fake_server import FakeTiming, OpenAIStreamServer, fake_server
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.events.chat import Message
from rigaudit.tools.schema.events.union import Event


@pytest.fixture
def inference() -> Iterator[OpenAIStreamServer]:
    with fake_server(FakeTiming(ttft_s=0.0, itl_s=0.0)) as server:
        yield server


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


class Chat:
    def __init__(self, seed: Path, work: Path, url: str, *, yes: bool, answers: Sequence[str] = ()) -> None:
        self.work = work
        self.console = ScriptedConsole(list(answers))
        self.events: list[Event] = []
        settings = ChatSettings(
            snapshot=seed,
            into=work / "copy",
            workdir=work,
            assume_yes=yes,
            interactive=bool(answers),
            bench_base_url=url,
            bench_model="m",
            bench_args=("--requests", "2", "--max-tokens", "4", "--warmup", "0"),
        )
        self.coordinator = Coordinator(
            SnapshotHost(seed), settings, console=self.console, emit=self.events.append, bench_words=inference_run
        )

    def turn(self, text: str, script: Sequence[Reply]) -> list[str]:
        """One line of the person's, the model answering ``script``; what the model was told of each call."""
        model = ScriptedModel([*script, say("ok")])
        planner = LlmPlanner(model, self.coordinator, UsageBook(None))
        anyio.run(planner.turn, text)
        model.assert_complete()
        return [str(m["content"]) for m in planner.messages if m["role"] == "tool"]

    def said(self) -> str:
        return "\n".join(e.text for e in self.events if isinstance(e, Message))


HIJACK: list[Reply] = [
    call("bench_inference", args="--command=touch /tmp/rigaudit-pwned"),
    call("bench_inference", command="touch /tmp/rigaudit-pwned"),
    call("write_report", path="/etc/cron.d/rigaudit.md"),
    call("write_report", path="../outside.md"),
    call("compare", base="/etc/shadow.json", new="x.json"),
]


@pytest.mark.parametrize("yes", [True, False])
def test_a_hijacked_chat_model_runs_and_writes_nothing(
    seed_dir: Path, tmp_path: Path, inference: OpenAIStreamServer, yes: bool
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    before = _tree(tmp_path)
    chat = Chat(seed_dir, work, inference.base_url, yes=yes)
    told = chat.turn("what is wrong with numa?", HIJACK)
    assert len(told) == len(HIJACK) and all(t.startswith("error: ") for t in told), told
    # steps the person did not ask for: refused under --yes, and (no terminal) refused without it
    for script in (
        [call("write_report", path="notes.md")],
        [call("apply_runtime")],
        [call("bench_inference", concurrency=[64])],
        [call("bench_p2p")],
        [call("rollback")],
    ):
        told = chat.turn("what is wrong with numa?", script)
        assert told[0].startswith("refused: "), told
    assert _tree(tmp_path) == before  # nothing written, in the work directory or beside it
    assert inference.requests == 0 and not (work / "copy").exists()
    assert not Path("/tmp/rigaudit-pwned").exists()
    assert "beyond what you asked" in chat.said() or not yes


def test_yes_approves_only_what_the_person_asked_for_as_the_model_chose_it(
    seed_dir: Path, tmp_path: Path, inference: OpenAIStreamServer
) -> None:
    chat = Chat(seed_dir, tmp_path, inference.base_url, yes=True)
    told = chat.turn("write the report to notes/audit.md", [call("write_report", path="notes/other.md")])
    assert told[0].startswith("refused: ") and not (tmp_path / "notes").exists()
    told = chat.turn("write the report to notes.md", [call("write_report", path="notes.md")])
    assert told[0].startswith("done: wrote ") and (tmp_path / "notes.md").is_file()
    told = chat.turn("rerun the inference benchmark", [call("bench_inference", concurrency=[64], requests=2)])
    assert told[0].startswith("refused: ") and inference.requests == 0  # 64 is the model's, not the person's
    told = chat.turn("rerun the inference benchmark at concurrency 2", [call("bench_inference", concurrency=[2])])
    assert told[0].startswith("done: result ") and inference.requests == 2


def test_a_report_never_replaces_a_file_rigaudit_did_not_write_nor_follows_a_link_out(
    seed_dir: Path, tmp_path: Path, inference: OpenAIStreamServer
) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (work / "notes.md").write_text("my own notes\n")
    (outside / "target.md").write_text("not rigaudit's\n")
    os.symlink(outside / "target.md", work / "link.md")
    chat = Chat(seed_dir, work, inference.base_url, yes=True)
    told = chat.turn("write the report to notes.md", [call("write_report", path="notes.md")])
    assert told[0].startswith("failed: ") and (work / "notes.md").read_text() == "my own notes\n"
    told = chat.turn("write the report to link.md", [call("write_report", path="link.md")])
    assert told[0].startswith("refused: not run: link.md is outside the work directory")
    assert (outside / "target.md").read_text() == "not rigaudit's\n"


def test_the_prompt_shows_what_runs_where_and_that_the_model_chose_it(
    seed_dir: Path, tmp_path: Path, inference: OpenAIStreamServer
) -> None:
    chat = Chat(seed_dir, tmp_path, inference.base_url, yes=True, answers=["no"])
    told = chat.turn("what is wrong with numa?", [call("bench_inference", concurrency=[4], requests=3)])
    assert told[0].startswith("refused: ") and inference.requests == 0
    assert chat.console.asked == ["Go ahead: rerun the inference benchmark?"]
    shown = "\n".join(chat.console.shown)
    assert f"runs: rigaudit bench inference --base-url {inference.base_url} --model m" in shown
    assert "--concurrency 4 --requests 3" in shown and f"writes {tmp_path.resolve()}/bench-inference-" in shown
    assert "chosen by the model, beyond what you asked: --yes does not approve it" in shown
