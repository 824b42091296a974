"""Power: CPU frequency scaling (governor, driver, EPP, boost), idle states, GPU power limits and performance states.

The CPU rules live in :mod:`rigaudit.agents.investigators._power_cpu`,
the GPU rules in :mod:`rigaudit.agents.investigators._power_gpu`.
"""

from __future__ import annotations

from dataclasses import dataclass

from rigaudit.agents.facts.cpulist import cpu_ranges, parse_cpulist
from rigaudit.agents.facts.platform import detect_platform
from rigaudit.agents.investigator import CheckDoc, Investigator
from rigaudit.agents.investigators._power_cpu import (
    CpuPowerFacts,
    collect_cpu,
    judge_boost,
    judge_cstates,
    judge_epp,
    judge_governor,
    judge_scaling_driver,
)
from rigaudit.agents.investigators._power_gpu import GpuPowerFacts, collect_gpu, judge_gpu_power_limit, judge_gpu_pstate
from rigaudit.tools.model.finding import Finding
from rigaudit.tools.probe import Probe

__all__ = ["CHECKS", "INVESTIGATOR", "cpu_ranges", "parse_cpulist"]
CHECKS = (
    "power.governor",
    "power.scaling_driver",
    "power.epp",
    "power.boost",
    "power.cstates",
    "power.gpu_power_limit",
    "power.gpu_pstate",
)


@dataclass(frozen=True)
class PowerFacts:
    cpu: CpuPowerFacts
    gpu: GpuPowerFacts


async def collect(probe: Probe) -> PowerFacts:
    cpu = await collect_cpu(probe)
    gpu = await collect_gpu(probe, await detect_platform(probe))
    return PowerFacts(cpu, gpu)


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


DOCS = {
    "power.governor": CheckDoc(
        "CPU frequency governor",
        "`/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor`",
        "not `performance`",
        "write `performance` on every policy",
        ("runtime",),
    ),
    "power.scaling_driver": CheckDoc(
        "CPU frequency scaling driver",
        "`cpufreq/scaling_driver`, `amd_pstate/status`, `acpi_cppc/`, `/proc/cpuinfo`, `/proc/cmdline`",
        "`acpi-cpufreq` on AMD Zen 2+ with CPPC",
        "`amd_pstate=active` on the boot line",
        ("reboot", "runtime"),
    ),
    "power.epp": CheckDoc(
        "CPU energy-performance preference",
        "`cpufreq/energy_performance_preference`",
        "not `performance` under amd-pstate-epp / intel_pstate",
        "write `performance`",
        ("runtime",),
    ),
    "power.boost": CheckDoc(
        "CPU boost / turbo",
        "`/sys/devices/system/cpu/cpufreq/boost`, `intel_pstate/no_turbo`",
        "boost off",
        "write 1 to boost (0 to no_turbo)",
        ("runtime",),
    ),
    "power.cstates": CheckDoc(
        "CPU idle states (C-states)",
        "`/sys/devices/system/cpu/cpu*/cpuidle/state*/{name,latency,disable}`",
        "enabled idle states with exit latency above 10 µs",
        "write 1 to `stateN/disable` on every CPU; `processor.max_cstate=1`",
        ("runtime", "reboot"),
    ),
    "power.gpu_power_limit": CheckDoc(
        "GPU power limit",
        "NVML enforced, requested and default power limits",
        "enforced below default",
        "`nvidia-smi -pl` (by a person), or the BMC power budget",
        ("runtime",),
    ),
    "power.gpu_pstate": CheckDoc(
        "GPU performance state under load",
        "NVML performance state and utilization",
        "a GPU at ≥ 50% utilization in P3 or lower (clocks capped); idle GPUs in P8 are normal",
        "find what holds the clocks (`nvidia-smi -q -d PERFORMANCE`), reset locked clocks",
        ("runtime",),
    ),
}


INVESTIGATOR = Investigator(
    area="power",
    title="CPU power management, GPU power limits and performance states",
    checks=CHECKS,
    collect=collect,
    judge=judge,
    docs=DOCS,
)
