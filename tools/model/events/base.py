"""What every event is, and what takes events: :class:`BaseEvent`, :data:`EventSink`, :func:`discard`."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from rigaudit.tools.model.events.union import Event


class BaseEvent(BaseModel):
    """What every event holds: when it happened."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    """``defer_build``: each event's validator is built when first used, not at import (a command uses few)."""

    t: float = Field(default_factory=time.time)
    """Wall-clock time (epoch seconds) when the event happened."""

    verbatim: ClassVar[bool] = False
    """True for events that hold only rigaudit's own text (the check catalog, a schema, the policy's rules), never
    a host's, a person's or a model's: the transcript records them unredacted (a catalog's ``-k KERNEL`` is no
    secret), so a replay shows them as they were."""


EventSink = Callable[["Event"], None]
"""Anything that takes events: a session's ``emit``, the terminal UI, the transcript writer."""


def discard(event: Event) -> None:
    """The sink that ignores every event (work run with nobody watching)."""
    del event
