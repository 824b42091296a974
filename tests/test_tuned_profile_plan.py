"""A host run by tuned with the governor, EPP and C-state faults: every fix is rigaudit's tuned child profile, and
the plan writes that one file once, with every setting (before: three steps each writing the whole file with one
[cpu] line, so whichever ran last undid the other two)."""

from __future__ import annotations

import itertools
import re

from rigaudit.orchestrator.plan import build_plan
from rigaudit.tools.schema.finding import CommandAction
from rigaudit.tools.schema.plan import PlanStep
from tests.hostgen import faults
from tests.hostgen.kinds import KINDS
from tests.support.kinds import audited

CONF = "/etc/tuned/rigaudit-performance/tuned.conf"
HOST = faults.tuned_profile(KINDS["rhel9-hgx-h100-tuned"], "balanced")
WANTED = {"governor=performance", "energy_performance_preference=performance", "force_latency=cstate.id_no_zero:1|3"}


def _written(step: PlanStep) -> list[str] | None:
    """The lines a step's write of the profile leaves in it (the write replaces the whole file), else None."""
    for action in step.actions:
        if isinstance(action, CommandAction) and action.description.startswith(f"write {CONF}:"):
            return re.findall(r"'([^']*)'", action.description.split(" (the rest of ", 1)[0])
    return None


def _profile_steps() -> list[PlanStep]:
    plan, _ = build_plan(audited(HOST).findings)
    return [s for s in plan.steps if _written(s) is not None]


def test_the_three_faults_are_fixed_in_the_child_profile() -> None:
    settled = {c for s in _profile_steps() for c in (s.check, *s.also_checks)}
    assert {"power.governor", "power.epp", "power.cstates"} <= settled


def test_the_profile_holds_every_setting_whatever_order_its_steps_run_in() -> None:
    steps = _profile_steps()
    for ordering in itertools.permutations(steps):
        last = _written(ordering[-1])
        assert last is not None and set(last) >= WANTED, (ordering[-1].id, last)
        assert last[:2] == ["[main]", "include=balanced"] and last.index("[cpu]") < min(last.index(w) for w in WANTED)


def test_one_step_writes_the_profile_and_names_every_check_it_settles() -> None:
    (step,) = _profile_steps()
    assert {step.check, *step.also_checks} == {"power.governor", "power.epp", "power.cstates"}
    for setting in WANTED:
        assert setting in step.title, step.title
    assert "scaling_governor" in step.verify and "energy_performance_preference" in step.verify, step.verify
    assert "cpuidle" in step.verify, step.verify


def test_reverting_the_step_selects_the_previous_profile_and_removes_the_child() -> None:
    (step,) = _profile_steps()
    assert step.revert == "tuned-adm profile balanced; rm -r /etc/tuned/rigaudit-performance", step.revert
