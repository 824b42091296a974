"""An agent's time limit that does not count the time it waits for a request slot.

Thirteen agents share ``max_parallel`` slots: an agent queued behind the others has not used its
time. The agent runs under :func:`agent_deadline`; the client waits for a slot inside :func:`paused`,
which stops the agent's clock meanwhile (a cancellation from outside, Ctrl-C, still ends the wait).
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Iterator
from contextlib import contextmanager

import anyio

_scope: contextvars.ContextVar[anyio.CancelScope | None] = contextvars.ContextVar("rigaudit_agent_deadline", default=None)


@contextmanager
def agent_deadline(seconds: float) -> Iterator[anyio.CancelScope]:
    """A cancel scope ``seconds`` from now, moved later by every :func:`waited` inside it."""
    with anyio.CancelScope(deadline=anyio.current_time() + seconds) as scope:
        token = _scope.set(scope)
        try:
            yield scope
        finally:
            _scope.reset(token)


@contextmanager
def paused() -> Iterator[None]:
    """The current agent's clock stopped: its deadline cannot fire inside, and moves by the time spent."""
    scope = _scope.get()
    if scope is None:
        yield
        return
    left = scope.deadline - anyio.current_time()
    scope.deadline = math.inf
    try:
        yield
    finally:
        scope.deadline = anyio.current_time() + left
