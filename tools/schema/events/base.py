"""What every event is: :class:`BaseEvent`."""

from __future__ import annotations

import time
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field


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

    display_only: ClassVar[bool] = False
    """True for an event that a later one makes redundant (an investigator's "now reading" ping, followed
    by the read's :class:`ToolCall`): transcripts leave it out, so recording costs nothing for it."""
