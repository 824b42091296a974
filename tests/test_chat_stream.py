"""The chat shows the model's text as it streams: the first piece before the stream ends, escaped, the same
final text and transcript; what may be shown of a partial answer (``agents/llm/streamed.py``)."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from rigaudit.agents.llm.streamed import shown_so_far
from rigaudit.agents.llm.testing.server import Reply, ScriptedOpenAIServer
from rigaudit.orchestrator.cli import build_parser
from rigaudit.orchestrator.commands.chat import run_chat
from rigaudit.orchestrator.ui.terminal import TerminalUI
from rigaudit.tools.schema.events.chat import LlmExchange, Message, ReplyStreamed
from rigaudit.tools.schema.events.union import Event
from rigaudit.transcripts.reader import read_transcript
from tests.support.tty import plain, spawn
from tests.test_llm_support import SEED

PIECES = ("First of all it sees: ", "See [link=https://e.x]", "this[/link] [bold]ok!.")
"""The scripted server streams a content in three pieces of a third each."""
TEXT = "".join(PIECES)


@pytest.fixture
def held() -> Iterator[tuple[ScriptedOpenAIServer, threading.Event]]:
    assert len({len(p) for p in PIECES}) == 1  # each piece is one chunk of the stream
    hold = threading.Event()
    with ScriptedOpenAIServer({"chat": [Reply(content=TEXT, hold=hold)]}) as server:
        yield server, hold
    hold.set()


def _argv(server: ScriptedOpenAIServer, *extra: str) -> list[str]:
    return ["chat", "--snapshot", str(SEED), "--llm", "--base-url", server.base_url, "--model", "scripted",
            "--llm-no-preflight", *extra]  # fmt: skip


def test_the_first_piece_is_shown_before_the_stream_ends(
    held: tuple[ScriptedOpenAIServer, threading.Event], tmp_path: Path
) -> None:
    server, hold = held
    streamed: list[tuple[str, bool]] = []
    events: list[Event] = []

    def seen(event: Event) -> None:
        events.append(event)
        if isinstance(event, ReplyStreamed):
            streamed.append((event.text, hold.is_set()))
            hold.set()  # the rest of the answer may come now

    transcript = tmp_path / "chat.jsonl"
    args = build_parser().parse_args(_argv(server, "--transcript", str(transcript)))
    assert run_chat(args, lines=["what do you see?"], interactive=False, consumers=[seen]) == 0
    assert streamed[0] == ("First of all it sees:", False)  # shown while the server still held the rest
    assert [text for text, _ in streamed[1:]] == [
        "First of all it sees: See",
        "First of all it sees: See [link=https://e.x]this[/link]",
        "",
    ]
    said = [e.text for e in events if isinstance(e, Message) and e.role == "assistant"]
    assert said == [TEXT]  # the whole answer, said as before
    recorded = read_transcript(transcript).events
    assert not any(e.type == "reply_streamed" for e in recorded)
    assert [e.text for e in recorded if isinstance(e, Message) and e.role == "assistant"] == [TEXT]
    chat = [e for e in recorded if isinstance(e, LlmExchange) and e.agent == "chat"]
    assert len(chat) == 1 and chat[0].response["content"] == TEXT
    assert server.requests[0].body["stream"] is True


def test_streamed_text_is_shown_as_written_never_as_markup() -> None:
    out = io.StringIO()
    ui = TerminalUI(Console(file=out, force_terminal=True, width=100, height=20), live=True)
    ui(ReplyStreamed(text="See [link=https://evil.example]here[/link] [bold]now[/bold]"))
    live = plain(out.getvalue())
    ui(ReplyStreamed(text=""))
    ui(Message(role="assistant", text="done"))
    ui.close()
    assert "See [link=https://evil.example]here[/link] [bold]now[/bold]" in live
    assert "\x1b]8;" not in out.getvalue()  # no hyperlink escape: the markup was never read
    quiet = io.StringIO()
    TerminalUI(Console(file=quiet, width=100), live=True)(ReplyStreamed(text="partial"))
    assert quiet.getvalue() == ""  # not at a terminal: only the whole answer is printed


@pytest.mark.parametrize(
    ("so_far", "shown"),
    [
        ("Hello wor", "Hello"),  # the last word waits for its end
        ("Hello world ", "Hello world"),
        ("<think>the user wants", ""),
        ("<think>done</think>The answer is ", "The answer is"),
        ('Running it. <tool_call>{"name": "audit"', "Running it."),
        ('[TOOL_CALLS] [{"name"', ""),
        ('{"findings": [', ""),
        ("the key is sk-proj-abcdefghijklmnopqrstuvwx", "the key is"),  # a secret never shows in part
        ("password=hunter2 then ", "password=<redacted>"),  # redacted as the whole answer is
    ],
)
def test_what_of_a_partial_answer_is_shown(so_far: str, shown: str) -> None:
    assert shown_so_far(so_far) == shown


@pytest.mark.slow
def test_at_a_terminal_the_text_shows_as_it_streams(held: tuple[ScriptedOpenAIServer, threading.Event], tmp_path: Path) -> None:
    server, hold = held
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    tty = spawn([*_argv(server), "--no-transcript"], env=env, cols=120)
    at = tty.expect("you> ")
    tty.send("what do you see?\n")
    at = tty.expect("First of all it sees:", after=at)  # the server holds the rest until this is seen
    assert "[bold]ok!." not in tty.text[at:]
    hold.set()
    at = tty.expect("[bold]ok!.", after=at)
    at = tty.expect("you> ", after=at)
    tty.send("/quit\n")
    code = tty.wait()
    assert code == 0 and "Traceback" not in tty.words, tty.words
    assert "See [link=https://e.x]this[/link] [bold]ok!." in tty.words
