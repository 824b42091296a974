"""Feed recorded events to a consumer again, at the recorded pace scaled by ``speed`` or at once.

The clock and the sleep are injectable, so tests replay at "real" pace without waiting.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from rigaudit.tools.core.record import Record
from rigaudit.tools.schema.events.sink import EventSink
from rigaudit.tools.schema.events.union import Event

DEFAULT_MAX_GAP_S = 2.0
"""A pause longer than this (a person thinking over an approval) is shortened to it."""
_MIN_SLEEP_S = 0.005


class ReplayStats(Record, frozen=False):
    events: int = 0
    slept_s: float = 0.0


def replay_events(
    events: Iterable[Event],
    consumer: EventSink,
    *,
    speed: float = 0.0,
    max_gap_s: float = DEFAULT_MAX_GAP_S,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> ReplayStats:
    """Give every event to ``consumer`` in order; ``speed`` 0 means as fast as possible.

    With ``speed`` > 0 each recorded gap is capped at ``max_gap_s`` and divided by ``speed``; the
    schedule is kept against the clock, so many tiny gaps do not add up to oversleeping, and an event recorded
    before the latest one is given at once (the pauses add up to the recorded span at most).
    """
    stats = ReplayStats()
    if speed <= 0:
        for event in events:
            consumer(event)
            stats.events += 1
        return stats
    start = clock()
    offset = 0.0
    previous: float | None = None
    for event in events:
        if previous is not None:
            offset += min(max(0.0, event.t - previous), max_gap_s) / speed
        previous = event.t if previous is None else max(previous, event.t)  # a step back in time is never slept again
        wait = start + offset - clock()
        if wait >= _MIN_SLEEP_S:
            sleep(wait)
            stats.slept_s += wait
        consumer(event)
        stats.events += 1
    return stats
