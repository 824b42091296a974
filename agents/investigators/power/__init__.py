"""power: CPU frequency scaling (governor, driver, EPP, boost), idle states, GPU power limits and performance states.

``facts`` reads the evidence (``cpu_facts`` and ``gpu``); the rules: ``cpufreq`` (power.governor, power.epp,
power.boost), ``scaling_driver`` (power.scaling_driver), ``cstates`` (power.cstates) and ``gpu``
(power.gpu_power_limit, power.gpu_pstate).
"""

from __future__ import annotations

from rigaudit.agents.investigator import Investigator
from rigaudit.agents.investigators.power.cpu_facts import AREA
from rigaudit.agents.investigators.power.cpufreq import (
    BOOST_CHECK,
    EPP_CHECK,
    GOVERNOR_CHECK,
    judge_boost,
    judge_epp,
    judge_governor,
)
from rigaudit.agents.investigators.power.cstates import CSTATES_CHECK, judge_cstates
from rigaudit.agents.investigators.power.facts import PowerFacts, collect
from rigaudit.agents.investigators.power.gpu import (
    GPU_POWER_LIMIT_CHECK,
    GPU_PSTATE_CHECK,
    judge_gpu_power_limit,
    judge_gpu_pstate,
)
from rigaudit.agents.investigators.power.scaling_driver import SCALING_DRIVER_CHECK, judge_scaling_driver
from rigaudit.tools.schema.finding import Finding

ORDER = 80


def judge(facts: PowerFacts) -> list[Finding]:
    return [
        judge_governor(facts.cpu),
        judge_scaling_driver(facts.cpu),
        judge_epp(facts.cpu),
        judge_boost(facts.cpu),
        judge_cstates(facts.cpu),
        judge_gpu_power_limit(facts.gpu),
        judge_gpu_pstate(facts.gpu),
    ]


INVESTIGATOR: Investigator[PowerFacts] = Investigator(
    area=AREA,
    title="CPU power management, GPU power limits and performance states",
    checks=(
        GOVERNOR_CHECK,
        SCALING_DRIVER_CHECK,
        EPP_CHECK,
        BOOST_CHECK,
        CSTATES_CHECK,
        GPU_POWER_LIMIT_CHECK,
        GPU_PSTATE_CHECK,
    ),
    collect=collect,
    judge=judge,
)
