"""Agents' "ask the person" questions: one at a time, in the order asked, none lost while another is answered.

Eight agents against the scripted loopback server each want to run ``nvidia-smi -l 1`` (the policy's
``ask``). The person takes a while over each question; together far longer than one agent's time
limit, so agents whose clocks ran while they queued were lost (the last two or three of eight). Each agent waits only for its own
answer: every one answers, each gets its own yes or no. With no person (not interactive) every
question is "no" at once.
"""

from __future__ import annotations

import argparse

import anyio
import pytest

from rigaudit.agents.llm import LLMBrain, LlmConfig
from rigaudit.agents.llm.ask_queue import AskQueue
from rigaudit.agents.llm.testing.server import ScriptedOpenAIServer, call, final
from rigaudit.orchestrator.audit.run import AuditOptions, current_area, run_audit
from rigaudit.orchestrator.commands._llm import add_llm_arguments, brain_from_args
from rigaudit.tools.policy.verdict import Verdict
from rigaudit.tools.schema.audit import AuditResult
from tests.test_llm_support import SeedHost, rule_findings

AREAS = ["kernel", "numa", "pcie", "power", "container", "runtime", "cuda", "driver"]
THINK_S = 0.4
"""How long the person takes over one question."""
AGENT_TIME_S = 3.0
"""One agent's time limit: less than the person takes over the eight questions (3.2 s)."""


class Person:
    """Answers one question at a time (noting if two come at once); yes only to the kernel agent."""

    def __init__(self) -> None:
        self.asked: list[str | None] = []
        self.now = 0
        self.most = 0

    async def __call__(self, verdict: Verdict) -> bool:
        self.now += 1
        self.most = max(self.most, self.now)
        self.asked.append(current_area())
        try:
            await anyio.sleep(THINK_S)  # the person reads and thinks: the time the queue must not charge
        finally:
            self.now -= 1
        return current_area() == "kernel"


def _script() -> dict[str, list]:  # type: ignore[type-arg]
    return {area: [call("shell", command="nvidia-smi -l 1"), final({"findings": []})] for area in AREAS}


def _audit(brain: LLMBrain) -> AuditResult:
    async def audit() -> AuditResult:
        try:
            return await run_audit(SeedHost(), options=AuditOptions(brain=brain, areas=AREAS))
        finally:
            await brain.aclose()

    return anyio.run(audit)


def _told(server: ScriptedOpenAIServer, area: str) -> str:
    return str(server.requests_for(area)[1].messages[-1]["content"])


def test_queued_questions_are_not_lost_and_each_agent_gets_its_own_answer() -> None:
    person = Person()
    with ScriptedOpenAIServer(_script()) as server:
        config = LlmConfig(base_url=server.base_url, model="scripted", agent_time_s=AGENT_TIME_S, max_parallel=8)
        result = _audit(LLMBrain(config, approver=person))
        server.assert_complete()
        told = {area: _told(server, area) for area in AREAS}
    assert person.most == 1 and sorted(a or "" for a in person.asked) == sorted(AREAS)
    assert result.llm is not None and result.llm.status == "ok" and result.llm.failed == ()
    assert {r.area: r.llm for r in result.investigators} == dict.fromkeys(AREAS, "answered")
    assert "\n$ nvidia-smi -l 1  (" in told["kernel"]  # its yes: run
    assert all(told[a].startswith("not run: needs approval") for a in AREAS if a != "kernel")  # their no
    assert [f.model_dump(mode="json") for f in result.findings] == rule_findings(AREAS)


def test_with_no_person_every_question_is_no_at_once() -> None:
    parser = argparse.ArgumentParser()
    add_llm_arguments(parser)
    with ScriptedOpenAIServer(_script()) as server:
        args = parser.parse_args(["--llm", "--base-url", server.base_url, "--model", "scripted", "--llm-timeout", "600"])
        brain = brain_from_args(args)  # pytest's stdin is no terminal: no one to ask
        assert brain is not None and brain.approver is None
        result = _audit(brain)
        server.assert_complete()
        told = {area: _told(server, area) for area in AREAS}
    assert result.llm is not None and result.llm.status == "ok"
    assert all(t.startswith("not run: needs approval") and "no one is here to approve it" in t for t in told.values())


def test_questions_are_asked_in_the_order_asked() -> None:
    answered: list[str] = []
    release = {name: anyio.Event() for name in ("a", "b", "c", "d")}

    async def person(verdict: Verdict) -> bool:
        await release[verdict.argv[0]].wait()
        answered.append(verdict.argv[0])
        return verdict.argv[0] == "a"

    queue = AskQueue(person)
    got: dict[str, bool] = {}

    async def agent(name: str) -> None:
        got[name] = await queue(Verdict("ask", "scripted", (name,)))

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for name in ("a", "b", "c", "d"):
                group.start_soon(agent, name)
                await anyio.wait_all_tasks_blocked()
            assert queue.waiting == 4
            for name in ("d", "b", "a", "c"):  # the person's answers are set in any order; asked in turn
                release[name].set()
            await anyio.wait_all_tasks_blocked()

    anyio.run(main)
    assert answered == ["a", "b", "c", "d"] and got == {"a": True, "b": False, "c": False, "d": False}
    assert queue.waiting == 0


@pytest.mark.parametrize("waiting", [1, 3])
def test_an_agent_that_ends_while_it_waits_leaves_the_queue(waiting: int) -> None:
    """An agent ended (its deadline, Ctrl-C) while its question waits: the question is gone, the next one asked."""
    answered: list[str] = []
    gate = anyio.Event()

    async def person(verdict: Verdict) -> bool:
        await gate.wait()
        answered.append(verdict.argv[0])
        return True

    queue = AskQueue(person)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(queue, Verdict("ask", "scripted", ("first",)))
            await anyio.wait_all_tasks_blocked()
            async with anyio.create_task_group() as leaving:
                for i in range(waiting):
                    leaving.start_soon(queue, Verdict("ask", "scripted", (f"gone{i}",)))
                await anyio.wait_all_tasks_blocked()
                leaving.cancel_scope.cancel()  # they end while "first" is being answered
            group.start_soon(queue, Verdict("ask", "scripted", ("last",)))
            await anyio.wait_all_tasks_blocked()
            gate.set()

    anyio.run(main)
    assert answered == ["first", "last"]
