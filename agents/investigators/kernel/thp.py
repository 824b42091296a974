"""kernel.thp: transparent huge pages with synchronous defrag, and the compaction stalls it causes."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.tuned import by_tuned
from rigaudit.agents.investigators.kernel import premises
from rigaudit.agents.investigators.kernel.params import THP, KernelParamsFacts, fix_where
from rigaudit.tools.schema.finding import Finding, Fix, SysfsWriteAction

THP_CHECK = Check(
    "kernel.thp",
    "Transparent huge pages and compaction stalls",
    reads="`/sys/kernel/mm/transparent_hugepage/{enabled,defrag}`, `/proc/vmstat`",
    problem="`always` + synchronous defrag with compaction stalls rising",
    fix="`madvise`",
    kinds=("runtime",),
    premises=(premises.PLATFORM_FIX,),
)


def judge_thp(facts: KernelParamsFacts) -> Finding:
    evidence = list(facts.refs.get("thp", ()))
    if facts.thp_enabled is None or facts.thp_defrag is None:
        return THP_CHECK.unknown(f"{THP}/enabled or defrag not readable", evidence=evidence)
    observed = f"enabled={facts.thp_enabled}, defrag={facts.thp_defrag}"
    synchronous = facts.thp_enabled == "always" and facts.thp_defrag == "always"
    if not synchronous:
        return THP_CHECK.ok(
            observed,
            expected="no synchronous compaction for every allocation (defrag madvise/defer)",
            evidence=evidence,
        )
    if facts.compact_stall is None:
        why = f"/proc/vmstat not readable: {facts.vmstat_error}" if facts.vmstat_error else "no compact_stall counter"
        return THP_CHECK.ok(
            f"{observed}; compaction stalls unknown ({why})",
            expected="no compaction stalls",
            explanation="THP always with synchronous defrag can stall page faults in direct compaction, but without "
            "/proc/vmstat it is unknown whether stalls happen here; check compact_stall growth under load.",
            evidence=evidence,
        )
    if facts.compact_stall == 0:
        return THP_CHECK.ok(f"{observed}; compact_stall 0", expected="no compaction stalls", evidence=evidence)
    path = f"{THP}/defrag"
    fix = Fix(
        kind="runtime",
        where=fix_where(facts.platform),
        summary="Compact only for madvise()d regions: defrag=madvise",
        actions=(SysfsWriteAction(paths=(path,), value="madvise"),),
        risk="low",
        verify=f"cat {path} shows [madvise]; compact_stall in /proc/vmstat stops rising under load",
        revert=f"echo {facts.thp_defrag} > {path}",
        persist="echo 'w /sys/kernel/mm/transparent_hugepage/defrag - - - - madvise' > /etc/tmpfiles.d/90-rigaudit-thp.conf",
    )
    fix, by_tuned_note = by_tuned(facts.tuned, "vm", "transparent_hugepage.defrag", "madvise", fix)
    return THP_CHECK.problem_at(
        "low",
        observed=f"{observed}; compact_stall {facts.compact_stall}",
        expected="defrag madvise (or defer) on a serving host",
        explanation="With THP 'always' and synchronous defrag, a page fault that cannot get a huge page compacts memory "
        "in the faulting thread: the CPU thread feeding the GPUs stalls for milliseconds. compact_stall counts these "
        "stalls since boot. defrag=madvise keeps huge pages where asked for and removes the stalls elsewhere." + by_tuned_note,
        fix=fix,
        evidence=evidence,
    )
