"""A Ctrl-C at an approval question ends the run at once, from the moment the question can be seen.

The approval question is asked on the event loop's thread, which it blocks while it reads; the loop's own
SIGINT handler (asyncio's runner: it only notes the signal and cancels the main task) would act once the read
returned, after the question's deadline. So the question must be shown inside the guard that makes Ctrl-C
raise: ``tests/test_tty_apply.py`` sends Ctrl-C as soon as the question shows, and under heavy load the
question used to show before the guard was in place (the run then waited out the deadline). Here that moment
is made certain: the signal arrives while the question is printed.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from types import FrameType, SimpleNamespace

import pytest

from rigaudit.orchestrator.change.approval import TerminalConsole


class Noting:
    """A SIGINT handler that only notes the signal, as an event loop's does."""

    def __init__(self) -> None:
        self.seen = 0

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        del signum, frame
        self.seen += 1


@pytest.fixture
def loop_handler() -> Iterator[Noting]:
    noting = Noting()
    previous = signal.signal(signal.SIGINT, noting)
    try:
        yield noting
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def silent_stdin(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """A terminal nobody types at: the read end of a pipe kept open."""
    read_end, write_end = os.pipe()
    monkeypatch.setattr("sys.stdin", SimpleNamespace(fileno=lambda: read_end))
    try:
        yield write_end
    finally:
        os.close(read_end)
        os.close(write_end)


def _console_interrupted_while(when: str) -> TerminalConsole:
    """A console whose printing of the question (``when`` it shows: ``print``) or flushing raises SIGINT."""
    console = TerminalConsole(timeout_s=5.0)
    inner = console._console

    def interrupting(*args: object, **kwargs: object) -> None:
        inner.print(*args, **kwargs)  # type: ignore[arg-type]
        if when == "print":
            os.kill(os.getpid(), signal.SIGINT)

    class Flushing:
        def __getattr__(self, name: str) -> object:
            return getattr(inner.file, name)

        def flush(self) -> None:
            inner.file.flush()
            if when == "flush":
                os.kill(os.getpid(), signal.SIGINT)

    console._console = SimpleNamespace(print=interrupting, file=Flushing(), width=inner.width)  # type: ignore[assignment]
    return console


@pytest.mark.parametrize("when", ["print", "flush"])
def test_a_ctrl_c_as_the_question_shows_raises_at_once_and_the_loop_handler_comes_back(
    when: str, loop_handler: Noting, silent_stdin: int
) -> None:
    console = _console_interrupted_while(when)
    with pytest.raises(KeyboardInterrupt):
        console.ask("Apply power.cstates?", ["yes", "no"], "no")  # never waits out the 5 s deadline
    assert loop_handler.seen == 0  # the guard took it, not the loop's handler
    assert signal.getsignal(signal.SIGINT) is loop_handler


def test_an_answer_restores_the_loop_handler(loop_handler: Noting, silent_stdin: int) -> None:
    os.write(silent_stdin, b"y\n")
    assert TerminalConsole(timeout_s=5.0).ask("Apply numa.balancing?", ["yes", "no"], "no") == "y"
    assert signal.getsignal(signal.SIGINT) is loop_handler
