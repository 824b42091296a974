"""Power, CPU side: frequency scaling (governor, driver, EPP, boost) and idle states.

The facts live in :mod:`rigaudit.agents.investigators._power_cpu_facts`; the rules in ``_power_cpufreq`` (power.governor,
power.epp, power.boost), ``_power_scaling_driver`` (power.scaling_driver) and ``_power_cstates`` (power.cstates).
"""

from __future__ import annotations

from rigaudit.agents.investigators._power_cpu_facts import (
    AMD_PSTATE_STATUS,
    AREA,
    BOOST,
    CPU,
    CSTATE_LIMIT_US,
    EPP_DRIVERS,
    GUEST_NO_CPUFREQ,
    NO_TURBO,
    CpuPowerFacts,
    IdleState,
    collect_cpu,
)
from rigaudit.agents.investigators._power_cpufreq import judge_boost, judge_epp, judge_governor
from rigaudit.agents.investigators._power_cstates import judge_cstates
from rigaudit.agents.investigators._power_scaling_driver import judge_scaling_driver

__all__ = [
    "AMD_PSTATE_STATUS",
    "AREA",
    "BOOST",
    "CPU",
    "CSTATE_LIMIT_US",
    "EPP_DRIVERS",
    "GUEST_NO_CPUFREQ",
    "NO_TURBO",
    "CpuPowerFacts",
    "IdleState",
    "collect_cpu",
    "judge_boost",
    "judge_cstates",
    "judge_epp",
    "judge_governor",
    "judge_scaling_driver",
]
