"""What takes events: an :data:`EventSink`, and :func:`discard`, the one that ignores them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rigaudit.tools.schema.events.union import Event

EventSink = Callable[["Event"], None]
"""Anything that takes events: a session's ``emit``, the terminal UI, the transcript writer."""


def discard(event: Event) -> None:
    """The sink that ignores every event (work run with nobody watching)."""
    del event
