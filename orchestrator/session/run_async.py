"""``anyio.run`` for results of any size: the result is held outside the main task.

At exit, asyncio's runner looks up the SIGINT handler it installed (``signal.getsignal``), which formats that
handler, the main task and so the task's result, with ``repr()`` (CPython 3.11). For an audit that is a few
hundred milliseconds; for a fleet of thousands of hosts it was half the run and hundreds of megabytes. A main task
that returns nothing costs nothing to format.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def run_held(function: Callable[[], Awaitable[T]]) -> T:
    """``anyio.run(function)``'s result, which the main task never returns (see the module docstring)."""
    import anyio

    held: list[T] = []

    async def main() -> None:
        held.append(await function())

    anyio.run(main)
    return held[0]


__all__ = ["run_held"]
