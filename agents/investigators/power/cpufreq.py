"""power.governor, power.epp, power.boost: the CPU frequency policy of every CPU."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.cpulist import cpu_ranges
from rigaudit.agents.facts.tuned import by_tuned
from rigaudit.agents.investigators.power import premises
from rigaudit.agents.investigators.power.cpu_facts import (
    BOOST,
    CPU,
    EPP_DRIVERS,
    NO_TURBO,
    CpuPowerFacts,
    by_value,
    cap,
    cpu_where,
    describe,
    no_cpufreq,
    oneshot_unit,
)
from rigaudit.tools.hosts.probe import file_ref
from rigaudit.tools.schema.finding import Finding, Fix, Severity, SysfsWriteAction

_GOVERNOR = "scaling_governor"
_EPP = "energy_performance_preference"


def _path(cpu: int, name: str) -> str:
    return f"{CPU}/cpu{cpu}/cpufreq/{name}"


def _not_performance(values: dict[int, str | None]) -> dict[str, list[int]]:
    """The CPUs by their value of one cpufreq file, leaving out those that read ``performance``."""
    return {v: cpus for v, cpus in by_value(values).items() if v != "performance"}


def _offenders(bad: dict[str, list[int]]) -> list[int]:
    return sorted(c for cpus in bad.values() for c in cpus)


def _settled(
    check: Check, name: str, values: dict[int, str | None], bad: dict[str, list[int]], *, expected: str = ""
) -> Finding | None:
    """ok when every CPU's ``name`` reads performance, unknown when the others could not be read; None: a problem."""
    refs = cap([file_ref(_path(c, name)) for c in values])
    if not bad:
        return check.ok(f"performance on {cpu_ranges(values)}", expected=expected, evidence=refs)
    if set(bad) == {"<unreadable>"}:
        return check.unknown(f"{name} not readable on {cpu_ranges(bad['<unreadable>'])}", evidence=refs)
    return None


def _set_performance(facts: CpuPowerFacts, name: str, summary: str, paths: tuple[str, ...], revert: str, unit: str) -> Fix:
    """The runtime fix that writes ``performance`` to ``paths`` (each CPU's ``name``), kept at boot by a oneshot unit."""
    return Fix(
        kind="runtime",
        where=cpu_where(facts.platform),
        summary=summary,
        actions=(SysfsWriteAction(paths=paths, value="performance"),),
        risk="low",
        verify=f"cat {CPU}/cpu*/cpufreq/{name} | sort | uniq -c  -> only 'performance'",
        revert=revert,
        persist=oneshot_unit(
            unit, f"for f in {CPU}/cpu[0-9]*/cpufreq/{name}; do echo performance > $f; done", facts.platform.image
        ),
    )


def _by_tuned(facts: CpuPowerFacts, option: str, value: str, fix: Fix) -> tuple[Fix, str]:
    return by_tuned(facts.tuned_state, "cpu", option, value, fix)


def _problem(check: Check, name: str, bad: dict[str, list[int]], severity: Severity, explanation: str, fix: Fix) -> Finding:
    offenders = _offenders(bad)
    return check.problem_at(
        severity,
        describe(bad),
        "performance on every CPU",
        explanation,
        fix,
        subjects=(cpu_ranges(offenders),),
        evidence=cap([file_ref(_path(c, name)) for c in offenders]),
    )


GOVERNOR_CHECK = Check(
    "power.governor",
    "CPU frequency governor",
    reads="`/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor`; tuned's active profile and its `[cpu]` settings",
    problem="not `performance`",
    fix="write `performance` on every policy; where tuned's active profile sets the governor, a tuned profile",
    kinds=("runtime",),
    premises=(premises.PLATFORM, premises.CPUFREQ, premises.TUNED),
)


def judge_governor(facts: CpuPowerFacts) -> Finding:
    if not facts.cpufreq_present:
        return no_cpufreq(GOVERNOR_CHECK, facts)
    bad = _not_performance(facts.governors)
    if (settled := _settled(GOVERNOR_CHECK, _GOVERNOR, facts.governors, bad, expected="performance")) is not None:
        return settled
    paths = tuple(_path(c, _GOVERNOR) for c in facts.governors)
    active_epp = facts.driver in EPP_DRIVERS and set(bad) <= {"powersave", "<unreadable>"}
    severity: Severity = "low" if active_epp else "medium"
    fix = _set_performance(
        facts,
        _GOVERNOR,
        f"Set the performance governor on every CPU ({len(paths)} cpufreq policies)",
        paths,
        "write the previous governor back to each CPU's scaling_governor: " + describe(bad),
        "rigaudit-cpu-governor",
    )
    fix, by_tuned = _by_tuned(facts, "governor", "performance", fix)
    explanation = (
        "The governor decides how fast a core ramps up when the inference server's CPU threads wake (scheduler loop, "
        "sampling, kernel launches, NCCL proxy threads). Demand-based governors (schedutil, ondemand, powersave) react to "
        "load after the fact, so the bursty, short CPU phases between decode steps run partly at low clocks; this shows up "
        "as TPOT jitter and a few percent lower single-stream decode speed. "
        + (
            f"Under {facts.driver} the 'powersave' governor with EPP=performance is close to 'performance'; see power.epp. "
            if active_epp
            else ""
        )
        + "Idle power rises only slightly: idle cores still enter C-states."
        + by_tuned
    )
    return _problem(GOVERNOR_CHECK, _GOVERNOR, bad, severity, explanation, fix)


EPP_CHECK = Check(
    "power.epp",
    "CPU energy-performance preference",
    reads="`cpufreq/energy_performance_preference`",
    problem="not `performance` under amd-pstate-epp / intel_pstate",
    fix="write `performance`",
    kinds=("runtime",),
    premises=(premises.PLATFORM, premises.CPUFREQ),
)


def judge_epp(facts: CpuPowerFacts) -> Finding:
    if not facts.cpufreq_present:
        return no_cpufreq(EPP_CHECK, facts)
    if facts.driver not in EPP_DRIVERS:
        why = (
            f"{facts.driver or 'this driver'} has no energy_performance_preference "
            "(EPP exists under amd-pstate-epp and intel_pstate)"
        )
        return EPP_CHECK.not_applicable(why, evidence=(file_ref(f"{CPU}/cpu{facts.cpus[0]}/cpufreq/scaling_driver"),))
    bad = _not_performance(facts.epp)
    if (settled := _settled(EPP_CHECK, _EPP, facts.epp, bad)) is not None:
        return settled
    severity: Severity = "medium" if set(bad) & {"power", "balance_power"} else "low"
    fix = _set_performance(
        facts,
        _EPP,
        "Set energy_performance_preference to performance on every CPU",
        tuple(_path(c, _EPP) for c in _offenders(bad)),
        "write the previous values back: " + describe(bad),
        "rigaudit-cpu-epp",
    )
    fix, by_tuned = _by_tuned(facts, "energy_performance_preference", "performance", fix)
    explanation = (
        f"Under {facts.driver} the CPU picks its own clocks; EPP is the hint that biases it between saving energy and "
        "ramping fast. Anything but 'performance' delays ramp-up on the short CPU bursts between decode steps. "
        "With governor 'performance' the kernel pins EPP to performance and refuses other values (EBUSY)." + by_tuned
    )
    return _problem(EPP_CHECK, _EPP, bad, severity, explanation, fix)


BOOST_CHECK = Check(
    "power.boost",
    "CPU boost / turbo",
    reads="`/sys/devices/system/cpu/cpufreq/boost`, `intel_pstate/no_turbo`",
    problem="boost off",
    fix="write 1 to boost (0 to no_turbo)",
    kinds=("runtime",),
    premises=(premises.PLATFORM, premises.CPUFREQ),
)


def judge_boost(facts: CpuPowerFacts) -> Finding:
    if facts.boost is not None:
        path, value, want, on = BOOST, facts.boost, "1", facts.boost == "1"
    elif facts.no_turbo is not None:
        path, value, want, on = NO_TURBO, facts.no_turbo, "0", facts.no_turbo == "0"
    elif not facts.cpufreq_present:
        return no_cpufreq(BOOST_CHECK, facts)
    elif facts.vendor not in ("AuthenticAMD", "GenuineIntel"):
        why = (
            f"{facts.driver or 'this frequency driver'} on a CPU without x86 boost (no {BOOST}): the firmware owns "
            "the frequency headroom"
        )
        return BOOST_CHECK.not_applicable(why, evidence=(file_ref(BOOST), file_ref(NO_TURBO)))
    else:
        why = f"neither {BOOST} nor {NO_TURBO} exists; boost is then set in the BIOS (Core Performance Boost / Turbo)"
        return BOOST_CHECK.unknown(why, evidence=(file_ref(BOOST), file_ref(NO_TURBO)))
    name = path.rsplit("/", 1)[-1]
    if on:
        return BOOST_CHECK.ok(f"{name}={value}", expected=f"{name}={want}", evidence=(file_ref(path),))
    fix = Fix(
        kind="runtime",
        where=cpu_where(facts.platform),
        summary=f"Enable boost: write {want} to {path}",
        actions=(SysfsWriteAction(paths=(path,), value=want),),
        risk="low",
        verify=f"cat {path}  -> {want}",
        revert=f"echo {value} > {path}",
        persist=oneshot_unit("rigaudit-cpu-boost", f"echo {want} > {path}", facts.platform.image),
    )
    return BOOST_CHECK.problem_at(
        "medium",
        f"{name}={value}",
        f"{name}={want}",
        "Boost is off, so every core is capped at its base clock (often 15-30% below the single-core boost clock). "
        "The CPU side of each decode step (Python scheduler, sampling, launches) scales with single-thread speed.",
        fix,
        subjects=(cpu_ranges(facts.cpus),),
        evidence=(file_ref(path),),
    )
