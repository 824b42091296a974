"""One pace for every agent's requests to one endpoint: after a 429 they all wait, not each on its own.

Thirteen agents retrying a rate limit each by itself keep colliding: the gateway counts every try, so
they lose their retries together. :class:`RateGate` is shared by all requests of one client: before
a request is sent it waits its turn; a 429 holds every later request until the server's
``Retry-After`` (``retry-after-ms``, seconds, or an HTTP date) has passed, and widens the spacing
between requests by half (once per pace: a 429 of a request sent before the last slow-down does not
count again); a run of answers narrows it by a quarter, down to no spacing at all.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any

import anyio

MIN_INTERVAL_S = 0.05
"""The spacing between request starts after the first 429."""
MAX_INTERVAL_S = 10.0
MAX_PAUSE_S = 60.0
"""The longest ``Retry-After`` honoured (a gateway's "come back in an hour" is a failure, not a wait)."""
SLOWER = 1.5
"""How much a 429 widens the spacing (gently: the gateway's window, not the pace, often refused it)."""
FASTER = 0.75
SPEEDUP_AFTER = 8
"""Answers in a row after which the spacing narrows by :data:`FASTER`."""


class RateGate:
    """When the next request to one endpoint may start; shared by every agent (one event loop)."""

    def __init__(self) -> None:
        self.interval = 0.0
        """Seconds between request starts; 0 until the server first answers 429."""
        self._next = -math.inf
        self._changed = -math.inf
        self._clean = 0
        self.limited_count = 0
        """429s seen."""

    async def wait(self) -> float:
        """Wait for this request's turn; returns when it started (to hand to :meth:`limited`)."""
        while True:
            now = anyio.current_time()
            if now >= self._next:
                self._next = now + self.interval
                return now
            await anyio.sleep(self._next - now)  # then look again: a 429 meanwhile moves the turn later

    def limited(self, started: float, retry_after_s: float | None) -> None:
        """A request sent at ``started`` was answered 429: every later request waits."""
        now = anyio.current_time()
        self.limited_count += 1
        self._clean = 0
        if started >= self._changed:  # sent at the current pace: it is too fast
            self.interval = min(MAX_INTERVAL_S, max(MIN_INTERVAL_S, self.interval * SLOWER))
            self._changed = now
        pause = self.interval if retry_after_s is None else min(MAX_PAUSE_S, retry_after_s)
        self._next = max(self._next, now + pause)

    def passed(self) -> None:
        """A request was answered: after :data:`SPEEDUP_AFTER` in a row the spacing narrows."""
        if not self.interval:
            return
        self._clean += 1
        if self._clean >= SPEEDUP_AFTER:
            self._clean = 0
            narrower = self.interval * FASTER
            self.interval = narrower if narrower >= MIN_INTERVAL_S else 0.0


def retry_after(exc: Any, *, now: datetime | None = None) -> float | None:
    """The seconds an error response asks to wait: ``retry-after-ms``, else ``retry-after`` as seconds or an
    HTTP date; ``None`` when it says nothing readable."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return _finite(float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return _finite(float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(str(value))
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())


def _finite(seconds: float) -> float | None:
    return max(0.0, seconds) if math.isfinite(seconds) else None
