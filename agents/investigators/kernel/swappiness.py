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
    reads="`/proc/sys/vm/swappiness`, swap in use, the servers' `VmSwap` (`/proc/PID/status`)",
    problem="server process swapping",
    fix="`vm.swappiness=10`",
    kinds=("runtime",),
    premises=(premises.PLATFORM_FIX, premises.OS),
)


_LOWER = "A lower swappiness makes the kernel reclaim page cache first."
_COST = (
    "Pages of a serving process (tokenizer, scheduler, pinned-buffer bookkeeping) that are swapped out cost a disk "
    f"read on the next touch: latency spikes on the CPU path that feeds the GPUs. {_LOWER}"
)


def _whose(facts: KernelParamsFacts, used_mib: int) -> str:
    """Whose pages the swap holds, as far as the servers' VmSwap tells."""
    read = [(label, kb) for label, kb in facts.server_swap if kb is not None]
    swapped = [(label, kb) for label, kb in read if kb > 0]
    if swapped:
        shown = ", ".join(f"{label} {kb // 1024} MiB" for label, kb in swapped)
        return f"Servers' pages are swapped out (VmSwap: {shown}). {_COST}"
    if read and len(read) == len(facts.server_swap):
        return (
            f"The servers swap nothing (VmSwap 0 kB in the {len(read)} server and GPU worker process(es) read): the "
            f"{used_mib} MiB in swap are not theirs. Under the next memory pressure the kernel may swap the servers' anonymous "
            f"memory too, which would then cost a disk read on the next touch. {_LOWER}"
        )
    why = "no server process was found" if not facts.server_swap else "the servers' VmSwap was not read"
    return f"Whose pages are swapped is not known here ({why}). {_COST}"


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
        persist=sysctl_persist("vm.swappiness", str(SWAPPINESS_TARGET), facts.platform.image),
    )
    return SWAPPINESS_CHECK.problem_at(
        "low",
        observed=observed,
        expected=f"vm.swappiness<={SWAPPINESS_TARGET} with swap in use",
        explanation=_whose(facts, used_mib),
        fix=fix,
        evidence=evidence,
    )
