"""The hard stop: past the deadline and a grace, print the reason line and end the process (exit 3).

Cancellation at the deadline ends everything that awaits; a read blocked in a thread (a hung NVML
call, a device file in uninterruptible sleep) cannot be cancelled, and a gate that hangs is worse
than one that says "could not check". A daemon thread's timer needs no signal and nothing else.
"""

from __future__ import annotations

import os
import sys
import threading

from rigaudit.orchestrator.gate import NOT_CHECKED


def grace_s(deadline_s: float) -> float:
    """How long past the deadline the cooperative stop gets before the hard one: a quarter of the deadline,
    at least 3 s (a loaded machine still finishes what the deadline cancelled) and at most 5 s."""
    return max(3.0, min(5.0, deadline_s * 0.25))


class Watchdog:
    """Armed on entry, disarmed on exit; firing writes ``line`` to stdout and ``_exit``\\ s with 3."""

    def __init__(self, deadline_s: float, line: str) -> None:
        self.after_s = deadline_s + grace_s(deadline_s)
        self.line = line
        self._timer = threading.Timer(self.after_s, self._fire)
        self._timer.daemon = True

    def _fire(self) -> None:
        try:
            sys.stdout.flush()
        finally:
            os.write(1, (self.line + "\n").encode("utf-8", "replace"))
            os._exit(NOT_CHECKED)

    def __enter__(self) -> Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


__all__ = ["Watchdog", "grace_s"]
