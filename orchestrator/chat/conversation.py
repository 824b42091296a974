"""The conversation loop: each line the person types becomes a command, an intent, or a turn of the model.

Lines starting with ``/`` are commands, always (with or without an LLM). Other lines go to the
model when there is one, else to the deterministic intent parser. End of input ends the session.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable

from rigaudit.orchestrator.chat.coordinator import Coordinator
from rigaudit.orchestrator.chat.intent import parse_intent
from rigaudit.orchestrator.chat.planner import LlmPlanner
from rigaudit.orchestrator.chat.steps import HELP, CommandError, parse_command
from rigaudit.tools.schema.events.chat import Message

GREETING = "rigaudit chat: say what you want done, or type /help. End with /quit (or end of input)."


class Conversation:
    def __init__(self, coordinator: Coordinator, planner: LlmPlanner | None = None) -> None:
        self.coordinator = coordinator
        self.planner = planner

    async def handle(self, line: str) -> bool:
        """Answer one line; ``False`` when the person ends the conversation. What the LLM client met meanwhile
        (the endpoint check, an audit's agents) is said after it, once (:meth:`LlmPlanner.tell_notices`)."""
        going_on = await self._handle(line)
        if self.planner is not None:
            self.planner.tell_notices()
        return going_on

    async def _handle(self, line: str) -> bool:
        text = line.strip()
        if not text:
            return True
        self.coordinator.emit(Message(role="user", text=text))
        say = self.coordinator.say
        if text.startswith("/"):
            try:
                command = parse_command(text)
            except CommandError as exc:
                say(str(exc))
                return True
            if command == "quit":
                say("Bye.")
                return False
            if command == "help":
                say(HELP)
                return True
            await self.coordinator.run_steps([command])
            return True
        if self.planner is not None:
            await self.planner.turn(text)
            return True
        steps = parse_intent(text)
        if not steps:
            say(
                "I did not catch what to do (without an LLM I understand audit, plan, why CHECK, report FILE, apply runtime, "
                "p2p bench, inference benchmark, compare, rollback). /help lists the commands."
            )
            return True
        await self.coordinator.run_steps(steps)
        return True

    async def run(self, lines: AsyncIterator[str] | Iterable[str]) -> None:
        self.coordinator.emit(Message(role="system", text=GREETING))
        if self.planner is not None:
            self.planner.tell_notices()  # the endpoint check's
        if isinstance(lines, Iterable):
            for line in lines:
                if not await self.handle(line):
                    return
            return
        async for line in lines:
            if not await self.handle(line):
                return
