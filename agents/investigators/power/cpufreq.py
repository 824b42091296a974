"""power.governor, power.epp, power.boost: the CPU frequency policy of every CPU."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.cpulist import cpu_ranges
from rigaudit.agents.findings import not_applicable, ok, problem, unknown
from rigaudit.agents.investigators.power.cpu_facts import (
    AREA,
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
from rigaudit.tools.model.finding import Finding, Fix, Severity, SysfsWriteAction
from rigaudit.tools.probe import file_ref

GOVERNOR_CHECK = Check(
    "power.governor",
    "CPU frequency governor",
    reads="`/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor`",
    problem="not `performance`",
    fix="write `performance` on every policy",
    kinds=("runtime",),
)


def judge_governor(facts: CpuPowerFacts) -> Finding:
    check, title = GOVERNOR_CHECK.id, GOVERNOR_CHECK.title
    if not facts.cpufreq_present:
        return no_cpufreq(check, title, facts)
    refs = [file_ref(f"{CPU}/cpu{c}/cpufreq/scaling_governor") for c in facts.governors]
    groups = by_value(facts.governors)
    bad = {v: cpus for v, cpus in groups.items() if v != "performance"}
    if not bad:
        return ok(check, AREA, title, f"performance on {cpu_ranges(facts.governors)}", expected="performance", evidence=cap(refs))
    if set(bad) == {"<unreadable>"}:
        return unknown(
            check, AREA, title, f"scaling_governor not readable on {cpu_ranges(bad['<unreadable>'])}", evidence=cap(refs)
        )
    offenders = sorted(c for cpus in bad.values() for c in cpus)
    paths = tuple(f"{CPU}/cpu{c}/cpufreq/scaling_governor" for c in facts.governors)
    active_epp = facts.driver in EPP_DRIVERS and set(bad) <= {"powersave", "<unreadable>"}
    severity: Severity = "low" if active_epp else "medium"
    fix = Fix(
        kind="runtime",
        where=cpu_where(facts.platform),
        summary=f"Set the performance governor on every CPU ({len(paths)} cpufreq policies)",
        actions=(SysfsWriteAction(paths=paths, value="performance"),),
        risk="low",
        verify=f"cat {CPU}/cpu*/cpufreq/scaling_governor | sort | uniq -c  -> only 'performance'",
        revert="write the previous governor back to each CPU's scaling_governor: " + describe(bad),
        persist=oneshot_unit(
            "rigaudit-cpu-governor",
            f"for f in {CPU}/cpu[0-9]*/cpufreq/scaling_governor; do echo performance > $f; done",
        ),
    )
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
    )
    return problem(
        check,
        AREA,
        title,
        severity,
        describe(bad),
        "performance on every CPU",
        explanation,
        fix,
        subjects=(cpu_ranges(offenders),),
        evidence=cap([file_ref(f"{CPU}/cpu{c}/cpufreq/scaling_governor") for c in offenders]),
    )


EPP_CHECK = Check(
    "power.epp",
    "CPU energy-performance preference",
    reads="`cpufreq/energy_performance_preference`",
    problem="not `performance` under amd-pstate-epp / intel_pstate",
    fix="write `performance`",
    kinds=("runtime",),
)


def judge_epp(facts: CpuPowerFacts) -> Finding:
    check, title = EPP_CHECK.id, EPP_CHECK.title
    if not facts.cpufreq_present:
        return no_cpufreq(check, title, facts)
    if facts.driver not in EPP_DRIVERS:
        why = (
            f"{facts.driver or 'this driver'} has no energy_performance_preference "
            "(EPP exists under amd-pstate-epp and intel_pstate)"
        )
        return not_applicable(check, AREA, title, why, evidence=(file_ref(f"{CPU}/cpu{facts.cpus[0]}/cpufreq/scaling_driver"),))
    paths = {c: f"{CPU}/cpu{c}/cpufreq/energy_performance_preference" for c in facts.epp}
    groups = by_value(facts.epp)
    bad = {v: cpus for v, cpus in groups.items() if v != "performance"}
    if not bad:
        return ok(
            check, AREA, title, f"performance on {cpu_ranges(facts.epp)}", evidence=cap([file_ref(p) for p in paths.values()])
        )
    if set(bad) == {"<unreadable>"}:
        why = f"energy_performance_preference not readable on {cpu_ranges(bad['<unreadable>'])}"
        return unknown(check, AREA, title, why, evidence=cap([file_ref(p) for p in paths.values()]))
    offenders = sorted(c for cpus in bad.values() for c in cpus)
    severity: Severity = "medium" if set(bad) & {"power", "balance_power"} else "low"
    fix = Fix(
        kind="runtime",
        where=cpu_where(facts.platform),
        summary="Set energy_performance_preference to performance on every CPU",
        actions=(SysfsWriteAction(paths=tuple(paths[c] for c in offenders), value="performance"),),
        risk="low",
        verify=f"cat {CPU}/cpu*/cpufreq/energy_performance_preference | sort | uniq -c  -> only 'performance'",
        revert="write the previous values back: " + describe(bad),
        persist=oneshot_unit(
            "rigaudit-cpu-epp",
            f"for f in {CPU}/cpu[0-9]*/cpufreq/energy_performance_preference; do echo performance > $f; done",
        ),
    )
    explanation = (
        f"Under {facts.driver} the CPU picks its own clocks; EPP is the hint that biases it between saving energy and "
        "ramping fast. Anything but 'performance' delays ramp-up on the short CPU bursts between decode steps. "
        "With governor 'performance' the kernel pins EPP to performance and refuses other values (EBUSY)."
    )
    return problem(
        check,
        AREA,
        title,
        severity,
        describe(bad),
        "performance on every CPU",
        explanation,
        fix,
        subjects=(cpu_ranges(offenders),),
        evidence=cap([file_ref(paths[c]) for c in offenders]),
    )


BOOST_CHECK = Check(
    "power.boost",
    "CPU boost / turbo",
    reads="`/sys/devices/system/cpu/cpufreq/boost`, `intel_pstate/no_turbo`",
    problem="boost off",
    fix="write 1 to boost (0 to no_turbo)",
    kinds=("runtime",),
)


def judge_boost(facts: CpuPowerFacts) -> Finding:
    check, title = BOOST_CHECK.id, BOOST_CHECK.title
    if facts.boost is not None:
        path, value, want, on = BOOST, facts.boost, "1", facts.boost == "1"
    elif facts.no_turbo is not None:
        path, value, want, on = NO_TURBO, facts.no_turbo, "0", facts.no_turbo == "0"
    elif not facts.cpufreq_present:
        return no_cpufreq(check, title, facts)
    elif facts.vendor not in ("AuthenticAMD", "GenuineIntel"):
        why = (
            f"{facts.driver or 'this frequency driver'} on a CPU without x86 boost (no {BOOST}): the firmware owns "
            "the frequency headroom"
        )
        return not_applicable(check, AREA, title, why, evidence=(file_ref(BOOST), file_ref(NO_TURBO)))
    else:
        why = f"neither {BOOST} nor {NO_TURBO} exists; boost is then set in the BIOS (Core Performance Boost / Turbo)"
        return unknown(check, AREA, title, why, evidence=(file_ref(BOOST), file_ref(NO_TURBO)))
    name = path.rsplit("/", 1)[-1]
    if on:
        return ok(check, AREA, title, f"{name}={value}", expected=f"{name}={want}", evidence=(file_ref(path),))
    fix = Fix(
        kind="runtime",
        where=cpu_where(facts.platform),
        summary=f"Enable boost: write {want} to {path}",
        actions=(SysfsWriteAction(paths=(path,), value=want),),
        risk="low",
        verify=f"cat {path}  -> {want}",
        revert=f"echo {value} > {path}",
        persist=oneshot_unit("rigaudit-cpu-boost", f"echo {want} > {path}"),
    )
    return problem(
        check,
        AREA,
        title,
        "medium",
        f"{name}={value}",
        f"{name}={want}",
        "Boost is off, so every core is capped at its base clock (often 15-30% below the single-core boost clock). "
        "The CPU side of each decode step (Python scheduler, sampling, launches) scales with single-thread speed.",
        fix,
        subjects=(cpu_ranges(facts.cpus),),
        evidence=(file_ref(path),),
    )
