"""A rich console that never passes text's control sequences to the terminal (:mod:`rigaudit.tools.core.printable`).

Rich strips a few control codes from text (BEL, backspace, carriage return) but writes ``ESC`` and
bidi overrides through; the text rigaudit shows comes from hosts, snapshots, transcripts and models.
Only rich's own control segments (cursor moves of the live board) and styles reach the terminal.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from rich.console import Console
from rich.segment import Segment

from rigaudit.tools.core.printable import printable

_gone: list[bool] = []  # set once a console's reader went away; read by the CLI for its exit status


def reader_gone() -> bool:
    """Whether a console's reader went away (``| head``) during this process."""
    return bool(_gone)


class SafeConsole(Console):
    """``rich.console.Console`` whose rendered text is :func:`~rigaudit.tools.core.printable.printable`."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            segment if segment.control else Segment(printable(segment.text), segment.style) for segment in buffer
        )

    def on_broken_pipe(self) -> None:
        """A reader gone away (``| head``): the rest goes to the null device, not rich's ``SystemExit`` in a task."""
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, self.file.fileno())
        self.quiet = True
        _gone.append(True)
