"""What went wrong with the endpoint and the agents, each distinct problem once.

Thirteen agents hitting the same refused key, the same server without ``json_schema`` or the same
truncating context window are one problem, not thirteen warnings: each problem is kept once by its
kind, with how often it happened and which agents it touched. ``degrading`` problems (an agent lost
its answer, the model did not see the whole prompt) make the LLM part of an audit degraded; the
others were handled (a format fallback, tool calls parsed from text) and are told as notes. A
conversation tells each problem once as it happens (:meth:`Problems.untold`), whoever met it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from rigaudit.tools.core.record import Record, field


class Problem(Record, frozen=False):
    key: str
    text: str
    degrading: bool
    count: int = 0
    agents: list[str] = field(default_factory=list)

    def line(self) -> str:
        times = f"; {self.count} times" if self.count > max(1, len(self.agents)) else ""
        who = ""
        if self.agents:
            shown = ", ".join(self.agents[:6]) + (f" and {len(self.agents) - 6} more" if len(self.agents) > 6 else "")
            who = f" ({len(self.agents)} agent{'s' if len(self.agents) > 1 else ''}: {shown}{times})"
        elif times:
            who = f" ({self.count} times)"
        return f"{self.text}{who}"


class Problems(Record, frozen=False):
    """Distinct problems in the order they first happened (thread-safe: clients record from worker threads too)."""

    items: dict[str, Problem] = field(default_factory=dict)
    _told: set[str] = field(default_factory=set, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def note(self, key: str, text: str, *, agent: str = "", degrading: bool = False) -> None:
        """Record one occurrence; the first text of a key is the one told."""
        with self._lock:
            problem = self.items.setdefault(key, Problem(key, text, degrading))
            problem.count += 1
            problem.degrading = problem.degrading or degrading
            if agent and agent not in problem.agents:
                problem.agents.append(agent)

    @property
    def degraded(self) -> bool:
        return any(p.degrading for p in self.items.values())

    def lines(self, *, degrading: bool | None = None) -> list[str]:
        return [p.line() for p in self.items.values() if degrading is None or p.degrading == degrading]

    def untold(self) -> list[Problem]:
        """The problems not told yet, in the order they first happened; from now on they count as told."""
        with self._lock:
            fresh = [p for key, p in self.items.items() if key not in self._told]
            self._told.update(p.key for p in fresh)
        return fresh

    def told(self, keys: Iterable[str]) -> None:
        """``keys`` were told elsewhere (an audit's warnings): :meth:`untold` leaves them out."""
        with self._lock:
            self._told.update(keys)

    def mark(self) -> dict[str, tuple[int, int]]:
        """Where each problem stands (its count, its agents): :meth:`since` a mark tells only what came after."""
        with self._lock:
            return {key: (p.count, len(p.agents)) for key, p in self.items.items()}

    def since(self, mark: dict[str, tuple[int, int]]) -> Problems:
        """The problems that happened after ``mark``: each with the occurrences and agents added since."""
        later = Problems()
        with self._lock:
            for key, p in self.items.items():
                count, agents = mark.get(key, (0, 0))
                if p.count > count:
                    later.items[key] = Problem(key, p.text, p.degrading, p.count - count, p.agents[agents:])
        return later
