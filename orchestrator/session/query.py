"""A query command's session (diff, checks, policy, schema, transcripts, replay --rediagnose).

What it shows is its events, drawn by the terminal; it is recorded only when ``--transcript FILE`` asks.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rigaudit.orchestrator.options.screen import Screen
from rigaudit.orchestrator.report.output import check_writable
from rigaudit.orchestrator.session.core import Session, open_session
from rigaudit.orchestrator.ui.terminal import terminal_for
from rigaudit.tools.core.errors import OperationError


@contextmanager
def query_session(command: str, screen: Screen, transcript: Path | None = None) -> Iterator[Session]:
    """The session of a query: its events go to the terminal, and to ``transcript`` when given (a place that
    cannot be written is one line and exit 2, before anything is shown: a warning would land in a JSON on stdout)."""
    if transcript is not None:
        check_writable(transcript, "--transcript")
    display = terminal_for(screen)
    with open_session(
        command, consumers=[display], transcript=transcript, record=transcript is not None, announce=False
    ) as session:
        yield session
        if session.detached:  # the display is a query's answer: without it, the command failed
            raise OperationError(f"the answer could not be shown ({session.detached[0]})")
