"""power.cstates: enabled CPU idle states whose exit latency stalls the threads that drive the GPUs."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.cpulist import cpu_ranges
from rigaudit.agents.facts.tuned import by_tuned
from rigaudit.agents.investigators.power import premises
from rigaudit.agents.investigators.power.cpu_facts import (
    CPU,
    CSTATE_LIMIT_US,
    CpuPowerFacts,
    IdleState,
    cap,
    cpu_where,
    oneshot_unit,
)
from rigaudit.tools.hosts.probe import file_ref
from rigaudit.tools.schema.finding import Finding, Fix, Severity, SysfsWriteAction

CSTATES_CHECK = Check(
    "power.cstates",
    "CPU idle states (C-states)",
    reads="`/sys/devices/system/cpu/cpu*/cpuidle/state*/{name,latency,disable}`; tuned's state and active profile",
    problem="enabled idle states with exit latency above 10 µs; under a running tuned whose profile holds a numeric "
    "`[cpu] force_latency` L, only those at or below L (cpuidle enters no state above the held latency)",
    fix="write 1 to `stateN/disable` on every CPU; `processor.max_cstate=1`; where tuned runs, a tuned profile with "
    "`[cpu] force_latency`",
    kinds=("runtime", "reboot"),
    premises=(premises.PLATFORM,),
)


LATENCY_PROFILES = frozenset(
    {"latency-performance", "network-latency", "realtime", "cpu-partitioning", "accelerator-performance", "hpc-compute"}
)
"""tuned profiles that hold a CPU DMA latency (force_latency): deep states stay unused although enabled in sysfs.
Used by name only where the running tuned's profile files are unread; otherwise the profile's own [cpu] force_latency
decides (``_held_by_tuned``)."""
_BATCH_FLAGS = ("--max-num-seqs", "--max-running-requests", "--max-batch-size", "--max_batch_size")


def latency_bound(servers: tuple[tuple[str, ...], ...]) -> bool | None:
    """Whether the serving is latency-bound (batch capped at a few sequences), from the servers' command lines;
    None when no server is seen."""
    if not servers:
        return None
    for argv in servers:
        for i, arg in enumerate(argv):
            flag, sep, value = arg.partition("=")
            text = value if sep else (argv[i + 1] if i + 1 < len(argv) else "")
            if flag in _BATCH_FLAGS and text.isdecimal() and int(text) <= 4:
                return True
    return False


FORCE_LATENCY = "cstate.id_no_zero:1|3"
"""tuned's [cpu] force_latency that latency-performance sets: hold the exit latency of cpuidle state 1 (C1), 3 us
where it cannot be read, so no deeper state is entered."""


def _held_by_tuned(facts: CpuPowerFacts) -> tuple[str, int] | None:
    """Why a running tuned keeps deep states unused (its profile's [cpu] force_latency, a PM QoS hold on
    /dev/cpu_dma_latency) and the exit latency up to which states are still entered, or None. cpuidle never enters a
    state whose exit latency is above the held value: ``cstate.id_no_zero:1|3`` or a number up to the limit holds
    every deep state (the limit returned), a larger number L only those above L (L returned). A stopped tuned holds
    nothing, whatever /etc/tuned/active_profile names."""
    state = facts.tuned_state
    if state is None or not state.running:
        return None
    value = state.owns("cpu", "force_latency")
    if value is not None:
        why = f"tuned's {state.active} profile sets [cpu] force_latency={value}"
        if value.startswith("cstate."):
            return why, CSTATE_LIMIT_US
        return (why, max(int(value), CSTATE_LIMIT_US)) if value.isdecimal() else None
    if state.unread and facts.tuned in LATENCY_PROFILES:
        return f"tuned's {state.active} profile (unread here) is one that holds a CPU DMA latency", CSTATE_LIMIT_US
    return None


def _by_tuned(facts: CpuPowerFacts, fix: Fix) -> tuple[Fix, str]:
    """On a host run by tuned, a child profile with [cpu] force_latency instead of the write and a oneshot unit."""
    held, note = by_tuned(facts.tuned_state, "cpu", "force_latency", FORCE_LATENCY, fix, whenever_running=True)
    if held is fix:
        return fix, note
    verify = f"{held.verify.split(';', 1)[0]}; the deep states' 'usage' counters stop growing ({CPU}/cpu*/cpuidle/state*/usage)"
    return held.model_copy(update={"verify": verify}), note


SHALLOW_US = 50
"""Exit latencies up to this (Intel C1E, AMD C1) cost little against a decode step; above it (C6, AMD C2) they show."""


def _no_cpuidle(facts: CpuPowerFacts) -> Finding:
    """No cpuidle states listed: the hypervisor's or the host's to check, or this kernel has none."""
    if facts.platform.in_vm:
        return CSTATES_CHECK.unknown("no cpuidle in this guest; check on the hypervisor", evidence=facts.platform.evidence)
    if facts.platform.in_container:
        why = "no cpuidle in the kernel this container shares with its host; check on the container's host"
        return CSTATES_CHECK.unknown(why, evidence=facts.platform.evidence)
    why = f"no cpuidle states under {CPU}/cpu*/cpuidle (driver: {facts.cpuidle_driver or 'unknown'})"
    return CSTATES_CHECK.unknown(why, evidence=(file_ref(f"{CPU}/cpuidle/current_driver"),))


def _disable_fix(facts: CpuPowerFacts, bad: list[IdleState]) -> Fix:
    """Write 1 to each deep state's disable file, persisted by a oneshot unit (the boot option the alternative)."""
    paths = tuple(f"{s.path}/disable" for s in bad)
    driver = facts.cpuidle_driver or "acpi_idle"
    boot = "intel_idle.max_cstate=1" if driver == "intel_idle" else "processor.max_cstate=1"
    return Fix(
        kind="runtime",
        where=cpu_where(facts.platform),
        summary=f"Disable idle states with exit latency above {CSTATE_LIMIT_US} us on every CPU ({len(paths)} states)",
        actions=(SysfsWriteAction(paths=paths, value="1"),),
        risk="low",
        verify=f"grep . {CPU}/cpu*/cpuidle/state*/disable: each listed state reads 1; its 'usage' counter stops growing",
        revert=f"write 0 to the same {len(paths)} stateN/disable files",
        persist=oneshot_unit(
            "rigaudit-cstates",
            f"for s in {CPU}/cpu[0-9]*/cpuidle/state*; do "
            f"[ $(cat $s/latency) -gt {CSTATE_LIMIT_US} ] && echo 1 > $s/disable; done; true",
            facts.platform.image,
        )
        + f"\n(alternative, with a reboot: {boot} on the kernel command line; do not use idle=poll or cpuidle.off=1, "
        "which burn power on idle cores, cost boost headroom, and remove the shallow states too)",
    )


def _explanation(summary: str, worst: int, severity: Severity, bound: bool | None) -> str:
    """What deep idle states cost a decode step, and why this severity."""
    return (
        f"Deep idle states are enabled: {summary}. The inference server's threads block between "
        "decode steps (waiting on the GPU, on NCCL, on the next request); a core that dropped into a deep C-state pays "
        "its exit latency before it can launch the next kernel or answer a collective, and with tensor parallelism "
        "every step waits for the slowest rank. On latency-bound single-stream decode this is typically a few percent "
        "of TPOT plus jitter. Keeping C1 (and POLL) preserves most idle savings; idle power rises (often tens of watts "
        "per socket) and some all-core boost headroom may be lost, so measure. The menu/teo governor avoids deep "
        f"states for predicted short idles, but mispredictions hit the full exit cost. The {CPU}/cpu*/cpuidle writes "
        "take effect immediately, without a reboot. "
        + (
            f"Medium: the deepest enabled state costs {worst} us per wake-up, a noticeable share of a decode step "
            "of a few milliseconds at batch 1 (the server caps its batch, so decode is latency-bound)."
            if severity == "medium"
            else f"Low: the deepest enabled state costs {worst} us per wake-up, "
            + (
                "little against a decode step of a few milliseconds."
                if worst <= SHALLOW_US
                else "which a batching server overlaps with tens of milliseconds of GPU work per step; no server "
                "visible: medium if it serves at batch 1 (single-stream, latency-bound decode)."
                if bound is None
                else "which a batching server overlaps with tens of milliseconds of GPU work per step; it matters at "
                "batch 1 (single-stream, latency-bound decode)."
            )
        )
    )


def _deep_states_problem(facts: CpuPowerFacts, bad: list[IdleState], summary: str) -> Finding:
    fix, by_tuned = _by_tuned(facts, _disable_fix(facts, bad))
    worst = max(s.latency_us or 0 for s in bad)
    bound = latency_bound(facts.servers)
    # Medium rests on decode being latency-bound: a server seen capping its batch. With no server visible that premise
    # is unread, and an unread premise never raises the severity.
    severity: Severity = "medium" if worst > SHALLOW_US and bound is True else "low"
    return CSTATES_CHECK.problem_at(
        severity,
        summary + " (enabled)",
        f"no enabled idle state with exit latency above {CSTATE_LIMIT_US} us",
        _explanation(summary, worst, severity, bound) + by_tuned,
        fix,
        subjects=(cpu_ranges(sorted({s.cpu for s in bad})),),
        evidence=cap([ref for s in bad for ref in (file_ref(f"{s.path}/latency"), file_ref(f"{s.path}/disable"))]),
    )


def _summary(states: list[IdleState]) -> str:
    kinds: dict[tuple[str, int], list[int]] = {}
    for s in states:
        kinds.setdefault((s.name or f"state{s.index}", s.latency_us or 0), []).append(s.cpu)
    return "; ".join(f"{n} ({lat} us) on {cpu_ranges(cpus)}" for (n, lat), cpus in sorted(kinds.items()))


def _held_ok(bad: list[IdleState], held: tuple[str, int]) -> Finding:
    """Every enabled deep state lies above the latency tuned holds: none is entered."""
    why, ceiling = held
    never = "never enter them" if ceiling <= CSTATE_LIMIT_US else f"never enter a state whose exit latency is above {ceiling} us"
    return CSTATES_CHECK.ok(
        f"{_summary(bad)} enabled in sysfs, but {why}: it holds /dev/cpu_dma_latency, so cores {never}",
        expected=f"no deep idle state entered (enabled ones above {CSTATE_LIMIT_US} us only under a PM QoS hold)",
        evidence=("file:/etc/tuned/active_profile",),
    )


def judge_cstates(facts: CpuPowerFacts) -> Finding:
    if not facts.idle:
        return _no_cpuidle(facts)
    readable = [s for s in facts.idle if s.latency_us is not None]
    if not readable:
        return CSTATES_CHECK.unknown("cpuidle state latency files are not readable")
    deep = [s for s in readable if (s.latency_us or 0) > CSTATE_LIMIT_US]
    bad = [s for s in deep if s.disabled is False]
    if not bad and any(s.disabled is None for s in deep):
        why = f"the disable flag of idle states above {CSTATE_LIMIT_US} us is not readable"
        return CSTATES_CHECK.unknown(why, evidence=cap([file_ref(f"{s.path}/disable") for s in deep]))
    held = _held_by_tuned(facts) if bad else None
    if held is not None:
        entered = [s for s in bad if (s.latency_us or 0) <= held[1]]
        if not entered:
            return _held_ok(bad, held)
        bad = entered
    summary = _summary(bad or deep)
    if not bad:
        shallow = max((s.latency_us or 0 for s in readable if s not in deep), default=0)
        observed = f"no enabled idle state above {CSTATE_LIMIT_US} us (deepest allowed: {shallow} us)"
        observed += f"; disabled: {summary}" if deep else ""
        refs = [file_ref(f"{s.path}/disable") for s in deep] or [file_ref(f"{readable[0].path}/latency")]
        return CSTATES_CHECK.ok(observed, expected=f"no enabled state above {CSTATE_LIMIT_US} us", evidence=cap(refs))
    problem = _deep_states_problem(facts, bad, summary)
    if held is None:
        return problem
    note = f" {held[0]}: cores never enter states above {held[1]} us, but these lie at or below it and are entered."
    return problem.model_copy(update={"explanation": problem.explanation + note})
