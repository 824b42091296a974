"""The person's questions from several agents: asked one at a time, in the order asked, none lost.

Agents run at once and any of them may ask about a command the policy rates ``ask``. There is one
person: :class:`AskQueue` asks them one question at a time, first asked first, and an agent waiting
for its turn has its clock stopped (:func:`~rigaudit.agents.llm.clock.paused`), so a queue of
questions never costs the agents behind it their time limit; only its own question counts. The
audit's deadline still ends any wait.
"""

from __future__ import annotations

from collections import deque

import anyio

from rigaudit.agents.llm.clock import paused
from rigaudit.tools.policy.shell import Approver
from rigaudit.tools.policy.verdict import Verdict


class AskQueue:
    """An :data:`~rigaudit.tools.policy.shell.Approver` that hands ``ask`` one question at a time, in order."""

    def __init__(self, ask: Approver) -> None:
        self._ask = ask
        self._turns: deque[anyio.Event] = deque()

    @property
    def waiting(self) -> int:
        """Questions asked or waiting their turn."""
        return len(self._turns)

    async def __call__(self, verdict: Verdict) -> bool:
        turn = anyio.Event()
        self._turns.append(turn)
        try:
            if self._turns[0] is not turn:
                with paused():  # another agent's question is being asked: not this agent's time
                    await turn.wait()
            return await self._ask(verdict)
        finally:
            first = self._turns[0] is turn
            self._turns.remove(turn)
            if first and self._turns:
                self._turns[0].set()
