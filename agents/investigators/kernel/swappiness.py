"""kernel.swappiness: swappiness on a host whose processes swap."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.investigators.kernel import premises
from rigaudit.agents.investigators.kernel.params import SWAPPINESS, SWAPPINESS_TARGET, KernelParamsFacts, fix_where
from rigaudit.agents.persist import sysctl_persist
from rigaudit.tools.schema.finding import Finding, Fix, SysctlAction

SWAPPINESS_CHECK = Check(
    "kernel.swappiness",
    "Swappiness and swap in use",
    reads="`/proc/sys/vm/swappiness`, swap in use",
    problem="server process swapping",
    fix="`vm.swappiness=10`",
    kinds=("runtime",),
    premises=(premises.PLATFORM_FIX,),
)


def judge_swappiness(facts: KernelParamsFacts) -> Finding:
    evidence = list(facts.refs.get("swap", ()))
    if facts.swappiness is None:
        return SWAPPINESS_CHECK.unknown(f"{SWAPPINESS} not readable", evidence=evidence)
    total, free = facts.swap_total_kb, facts.swap_free_kb
    if total is None or free is None:
        return SWAPPINESS_CHECK.ok(
            f"vm.swappiness={facts.swappiness}; swap use unknown (/proc/meminfo not readable)",
            explanation="Swappiness only matters when swap is actually used.",
            evidence=evidence,
        )
    used_mib = (total - free) // 1024
    observed = f"vm.swappiness={facts.swappiness}; swap {used_mib} MiB used of {total // 1024} MiB"
    if used_mib <= 0 or facts.swappiness <= SWAPPINESS_TARGET:
        explanation = (
            "No swap in use, so swappiness has no effect now."
            if used_mib <= 0
            else ("Swap is in use although swappiness is already low: that is memory pressure, not this knob.")
        )
        return SWAPPINESS_CHECK.ok(
            observed,
            expected="no swapping of the serving process",
            explanation=explanation,
            evidence=evidence,
        )
    fix = Fix(
        kind="runtime",
        where=fix_where(facts.platform),
        summary=f"Prefer dropping page cache to swapping anonymous memory: vm.swappiness={SWAPPINESS_TARGET}",
        actions=(SysctlAction(key="vm.swappiness", value=str(SWAPPINESS_TARGET)),),
        risk="low",
        verify=f"cat {SWAPPINESS} shows {SWAPPINESS_TARGET}; SwapFree in /proc/meminfo stops falling",
        revert=f"sysctl -w vm.swappiness={facts.swappiness}",
        persist=sysctl_persist("vm.swappiness", str(SWAPPINESS_TARGET)),
    )
    return SWAPPINESS_CHECK.problem_at(
        "low",
        observed=observed,
        expected=f"vm.swappiness<={SWAPPINESS_TARGET} with swap in use",
        explanation="Pages of the serving process (tokenizer, scheduler, pinned-buffer bookkeeping) that are swapped out "
        "cost a disk read on the next touch: latency spikes on the CPU path that feeds the GPUs. A lower swappiness "
        "makes the kernel reclaim page cache first.",
        fix=fix,
        evidence=evidence,
    )
