"""the approver: nothing changes a host (and no benchmark loads its GPUs) without a recorded yes.

In a terminal each step is shown, with the machine (by host name) or the snapshot copy (by path)
it changes, and the person answers yes / no / all (yes to every remaining runtime step of this
plan) / details / quit, or their first letters. End of input (Ctrl-D), or no answer within the
console's deadline (:data:`~rigaudit.orchestrator.change.timed_prompt.APPROVAL_TIMEOUT_S` unless set), is "no"
to that step and "quit" to the rest; Ctrl-C at a prompt raises ``KeyboardInterrupt`` at once (the caller ends the
whole run). Without a terminal nothing is approved unless ``--yes`` was given:
:class:`NotApprovedError` (exit status 3). Every decision is an :class:`~tools.journal.Approval`
(who, when, the plan's hash), emitted as an ``ApprovalDecided`` event; apply also keeps it in its
journal.
"""

from __future__ import annotations

import getpass
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol

from rigaudit.orchestrator.change.timed_prompt import APPROVAL_TIMEOUT_S, read_line
from rigaudit.tools.actions.journal import Approval, Decision
from rigaudit.tools.actions.preview import StepView, target_text
from rigaudit.tools.core.errors import NotApprovedError
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.schema.events.apply import ApprovalDecided
from rigaudit.tools.schema.events.sink import EventSink, discard

CHOICES = ("yes", "no", "all", "details", "quit")
_SHORT = {"y": "yes", "n": "no", "a": "all", "d": "details", "q": "quit"}
EOF_ANSWER = "\x04"
"""What :meth:`Console.ask` returns at end of input (Ctrl-D): no to this step, quit for the rest."""
ANSWER_ROOM = len("details") + 1
"""Columns the question leaves free on its last line for the answer the terminal echoes as it is typed."""
TIMEOUT_ANSWER = "\x00"
"""What :meth:`Console.ask` returns when nobody answered in time: no to this step, and nothing more is asked
(whoever ran it is not there)."""


@contextmanager
def sigint_raises() -> Iterator[None]:
    """While a person is asked, Ctrl-C raises ``KeyboardInterrupt`` at once (an event loop's own handler
    would only note it, and the next Enter would read as an answer)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class Console(Protocol):
    """Where the approver shows a step and reads the answer (a terminal, or a script in tests)."""

    def show(self, text: str) -> None: ...

    def ask(self, question: str, choices: Sequence[str], default: str) -> str: ...


class TerminalConsole:
    """rich output and a line read from the real terminal (every word or its first letter is an answer);
    every question waits at most ``timeout_s`` (then it is :data:`TIMEOUT_ANSWER`, said in one line).
    What it shows and asks is wrapped at spaces to the terminal's width, never broken mid-word by it."""

    def __init__(self, timeout_s: float = APPROVAL_TIMEOUT_S) -> None:
        from rigaudit.orchestrator.ui.safe_console import SafeConsole as RichConsole

        self._console = RichConsole(highlight=False)
        self.timeout_s = timeout_s

    def show(self, text: str) -> None:
        from rich.text import Text

        from rigaudit.orchestrator.ui.wrap import wrap

        self._console.print(wrap(Text(text), self._console.width), soft_wrap=True)

    def ask(self, question: str, choices: Sequence[str], default: str) -> str:
        from rich.text import Text

        from rigaudit.orchestrator.ui.wrap import wrap

        asked = Text(f"{question} ")
        for n, choice in enumerate(choices):
            asked.append("/" if n else "")
            asked.append(choice[0], style="bold")
            asked.append(choice[1:])
        asked.append(f" ({default}; no answer within {self.timeout_s:g} s: no)", style="dim")
        asked = wrap(asked, max(20, self._console.width - ANSWER_ROOM))
        asked.append(" ")
        with sigint_raises():  # before the question shows: a Ctrl-C once it is there ends the run at once
            self._console.print(asked, end="", soft_wrap=True)
            self._console.file.flush()
            answer = read_line(sys.stdin.fileno(), self.timeout_s)
        if answer is None:
            self._console.print(f"\nno answer within {self.timeout_s:g} s: no", markup=False)
            return TIMEOUT_ANSWER
        if answer == EOF_ANSWER:
            self._console.print()
            return EOF_ANSWER
        return answer.strip() or default


class ScriptedConsole(Record, frozen=False):
    """A console that answers from a list (tests): records what was shown and asked."""

    answers: list[str]
    shown: list[str] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)

    def show(self, text: str) -> None:
        self.shown.append(text)

    def ask(self, question: str, choices: Sequence[str], default: str) -> str:
        self.asked.append(question)
        if not self.answers:
            raise AssertionError(f"ScriptedConsole ran out of answers at: {question}")
        return self.answers.pop(0)

    def assert_complete(self) -> None:
        assert not self.answers, f"answers left unused: {self.answers}"


def who_am_i() -> str:
    """``user@machine`` of whoever runs rigaudit."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid{os.getuid()}"
    return f"{user}@{socket.gethostname()}"


def is_interactive() -> bool:
    """A person can answer: both stdin and stdout are terminals."""
    try:
        return sys.stdin is not None and sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


class StepApprover:
    """Decides, step by step, whether a change may be made; remembers every decision."""

    def __init__(
        self,
        plan_hash: str,
        *,
        assume_yes: bool,
        interactive: bool | None = None,
        console: Console | None = None,
        emit: EventSink | None = None,
        who: str | None = None,
    ) -> None:
        self.plan_hash = plan_hash
        self.assume_yes = assume_yes
        self.interactive = is_interactive() if interactive is None else interactive
        self._console = console
        self._emit = emit or discard
        self.who = who or who_am_i()
        self.decisions: list[Approval] = []
        self._yes_to_all = False
        self.quit = False
        self.ended = False
        """Input ended (Ctrl-D) at a prompt: that step was refused and nothing more is asked."""
        self.timed_out = False
        """Nobody answered a prompt in time: that step was refused and nothing more is asked."""

    @property
    def console(self) -> Console:
        if self._console is None:
            self._console = TerminalConsole()
        return self._console

    def ensure_possible(self, what: str) -> None:
        """Refuse at once (exit 3) when nobody can be asked and ``--yes`` was not given."""
        if not self.assume_yes and not self.interactive:
            raise NotApprovedError(f"no terminal to ask for approval and no --yes: {what}")

    def _record(self, step_id: str, decision: Decision, note: str = "") -> Approval:
        approval = Approval(step_id=step_id, decision=decision, who=self.who, plan_hash=self.plan_hash, note=note)
        self.decisions.append(approval)
        self._emit(ApprovalDecided(step_id=step_id, decision=decision, who=self.who, plan_hash=self.plan_hash, note=note))
        return approval

    def decide(self, view: StepView, *, allow_all: bool = True) -> Approval:
        """Ask (or apply ``--yes`` / an earlier ``all``); ``quit`` sets :attr:`quit`."""
        if self.assume_yes:
            return self._record(view.step_id, "auto", "--yes")
        if self._yes_to_all and allow_all:
            return self._record(view.step_id, "all", "yes to all remaining runtime steps")
        self.ensure_possible(f"{view.step_id} not applied")
        choices = CHOICES if allow_all else tuple(c for c in CHOICES if c != "all")
        self.console.show(view.render())
        while True:
            raw = self.console.ask(view.question or f"Apply {view.step_id}?", choices, "no")
            if raw == EOF_ANSWER:
                self.quit = self.ended = True
                return self._record(view.step_id, "no", "end of input (Ctrl-D): no, and nothing more is asked")
            if raw == TIMEOUT_ANSWER:
                self.quit = self.timed_out = True
                return self._record(view.step_id, "no", "no answer in time: no, and nothing more is asked")
            answer = _SHORT.get(raw.strip().lower(), raw.strip().lower())
            if answer == "details":
                self.console.show("\n".join(view.details) or "(no more details)")
                continue
            if answer == "yes":
                return self._record(view.step_id, "yes")
            if answer == "all" and allow_all:
                self._yes_to_all = True
                return self._record(view.step_id, "all", "yes to this and all remaining runtime steps")
            if answer == "quit":
                self.quit = True
                return self._record(view.step_id, "quit", "stopped here; later steps not attempted")
            if answer == "no":
                return self._record(view.step_id, "no")
            self.console.show(f"answer one of: {', '.join(choices)} (or {', '.join(c[0] for c in choices)})")


def require_approval(
    what: str,
    details: Sequence[str],
    *,
    assume_yes: bool,
    emit: EventSink | None = None,
    interactive: bool | None = None,
    console: Console | None = None,
    plan_hash: str = "",
    where: str = "",
) -> Approval:
    """Approve one action that is not a plan step (a benchmark that loads the GPUs, a rollback) on ``where``
    (:func:`target_text`; default: this machine by its name).

    Returns the approval; raises :class:`NotApprovedError` when refused, or with no terminal and no ``--yes``.
    """
    approver = StepApprover(plan_hash, assume_yes=assume_yes, interactive=interactive, console=console, emit=emit)
    view = StepView(
        step_id=what,
        title="",
        where=where or target_text(socket.gethostname(), "local"),
        changes=tuple(details),
        details=tuple(details),
        question=f"Go ahead: {what}?",
    )
    approval = approver.decide(view, allow_all=False)
    if not approval.approved:
        why = "end of input" if approver.ended else "no answer in time" if approver.timed_out else approval.decision
        raise NotApprovedError(f"{what}: not approved ({why})")
    return approval


__all__ = [
    "CHOICES",
    "EOF_ANSWER",
    "TIMEOUT_ANSWER",
    "Approval",
    "Console",
    "ScriptedConsole",
    "StepApprover",
    "TerminalConsole",
    "is_interactive",
    "require_approval",
    "sigint_raises",
    "who_am_i",
]
