"""Questions at the terminal that never hang the run: each has a deadline, and it can be cancelled.

:func:`read_line` reads one answer with a deadline (approval questions: apply's steps, the chat's actions).

An agent's ``ask`` command is asked here: the caller pauses the live board first (so the question
shows where the board was, not under it), and the answer is read in a thread that watches the
terminal with ``select`` and gives up by itself when the deadline passes or the waiting task is
cancelled (the agent's time limit, Ctrl-C), so no reader is left behind to swallow the next line.
No answer in time, end of input, or anything but yes is "no".
"""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import IO

import anyio

DEFAULT_TIMEOUT_S = 60.0
"""How long an agent's question waits for a person before it counts as "no"."""
APPROVAL_TIMEOUT_S = 300.0
"""How long an approval question (apply's steps, the chat's actions) waits for a person before it counts as "no"."""
POLL_S = 0.05

Pause = Callable[[], AbstractContextManager[None]]
"""Stops the live board while a person is asked (``TerminalUI.paused``), and brings it back."""


def _reader(fd: int, stop: threading.Event) -> Callable[[], str | None]:
    """A line from ``fd`` once one is there; ``None`` when ``stop`` is set first; ``""`` at end of input."""

    def read() -> str | None:
        data = b""
        while not stop.is_set():
            ready, _, _ = select.select([fd], [], [], POLL_S)
            if not ready:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                return data.decode(errors="replace")
            data += chunk
            if b"\n" in data:
                return data.split(b"\n", 1)[0].decode(errors="replace")
        return None

    return read


def read_line(fd: int, timeout_s: float) -> str | None:
    """A line from ``fd`` (without its newline) within ``timeout_s``; ``None`` when the deadline passes first;
    ``"\x04"`` at end of input with nothing typed. Ctrl-C raises in the caller's thread as usual."""
    stop = threading.Event()
    timer = threading.Timer(min(timeout_s, threading.TIMEOUT_MAX), stop.set)  # past it the timer's thread dies
    timer.daemon = True
    timer.start()
    try:
        line = _reader(fd, stop)()
    finally:
        timer.cancel()
    return "\x04" if line == "" else line


async def ask_yes_no(
    text: str,
    question: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    pause: Pause | None = None,
    stdin: IO[str] | None = None,
    stdout: IO[str] | None = None,
) -> bool:
    """Show ``text`` and ask ``question`` (y/n); ``True`` only for a yes given within ``timeout_s``."""
    import sys

    stop = threading.Event()
    answer: list[str | None] = []

    with pause() if pause is not None else nullcontext():
        out = stdout or sys.stdout  # once the board is paused: a live display redirects stdout while it runs
        read = _reader((stdin or sys.stdin).fileno(), stop)

        def run() -> None:
            answer.append(read())

        out.write(f"{text}\n{question} [y/n] (no answer within {timeout_s:g} s: no) ")
        out.flush()
        thread = threading.Thread(target=run, name="rigaudit ask", daemon=True)
        thread.start()
        try:
            with anyio.move_on_after(timeout_s):
                while not answer:
                    await anyio.sleep(POLL_S)
        except BaseException:  # the agent's time limit or Ctrl-C: the question ends with it
            out.write("\nstopped while waiting for an answer: not run\n")
            out.flush()
            raise
        finally:
            stop.set()
        got = answer[0] if answer else None
        if got is None:
            out.write(f"\nno answer within {timeout_s:g} s: not run\n")
        elif got == "":
            out.write("\nend of input: not run\n")
        out.flush()
    return got is not None and got.strip().lower() in ("y", "yes")
