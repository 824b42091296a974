"""A check's own verdict constructors: the finding carries the check's id, area and title, as the free functions do."""

from __future__ import annotations

from rigaudit.agents import findings
from rigaudit.agents.check import Check
from rigaudit.tools.schema.finding import Fix

CHECK = Check("kernel.example", "An example", reads="r", problem="p", fix="f", kinds=("runtime",))


def test_each_verdict_equals_the_free_constructor_it_stands_for() -> None:
    fix = Fix(kind="runtime", where="host", summary="do it")
    assert CHECK.ok("fine", evidence=("e",)) == findings.ok("kernel.example", "kernel", "An example", "fine", evidence=("e",))
    assert CHECK.unknown("unread", subjects=("s",)) == findings.unknown(
        "kernel.example", "kernel", "An example", "unread", subjects=("s",)
    )
    assert CHECK.problem_at("high", "bad", "good", "why", fix) == findings.problem(
        "kernel.example", "kernel", "An example", "high", "bad", "good", "why", fix
    )
    assert CHECK.not_applicable("none") == findings.not_applicable("kernel.example", "kernel", "An example", "none")
    assert CHECK.problem_at("low", "o", "e", "x", None).status == "problem"
