"""kernel.grace_boot: the boot options NVIDIA's Grace tuning guides recommend that no other check reads.

NVIDIA's Grace CPU benchmarking guide (platform configuration) recommends ``init_on_alloc=0`` (do not zero every
newly allocated page and heap object; Ubuntu's kernels zero them by default, CONFIG_INIT_ON_ALLOC_DEFAULT_ON), with
``numa_balancing=disable`` (numa.balancing reads that) and the performance governor (power.governor). The kernel
prints what it does at boot: ``mem auto-init: stack:off, heap alloc:on, heap free:off``.
"""

from __future__ import annotations

import re

from rigaudit.agents.check import Check
from rigaudit.agents.investigators.kernel import premises
from rigaudit.agents.investigators.kernel.params import KernelParamsFacts, fix_where
from rigaudit.tools.hosts.probe import command_ref, file_ref
from rigaudit.tools.schema.finding import Finding, Fix

GRACE_GUIDE = "https://nvidia.github.io/grace-cpu-benchmarking-guide/platform/index.html"

GRACE_BOOT_CHECK = Check(
    "kernel.grace_boot",
    "Boot options of NVIDIA's Grace tuning guide",
    reads="`/proc/cpuinfo` (Neoverse V2: CPU part 0xd4f), the kernel log's `mem auto-init` line, `/proc/cmdline`",
    problem="on Grace: page zeroing on allocation on (no `init_on_alloc=0`)",
    fix="add `init_on_alloc=0` to the boot line",
    kinds=("reboot",),
    premises=(premises.PLATFORM_FIX, premises.CMDLINE),
)


def judge_grace_boot(facts: KernelParamsFacts) -> Finding:
    if not facts.grace:
        return GRACE_BOOT_CHECK.not_applicable("not an NVIDIA Grace CPU: the guide's boot options concern Grace")
    if facts.platform.in_container:
        return GRACE_BOOT_CHECK.not_applicable("inside a container: the boot line is the container host's")
    refs = [file_ref("/proc/cpuinfo"), file_ref("/proc/cmdline")]
    words = (facts.cmdline or "").split()
    given = next((w.split("=", 1)[1] for w in reversed(words) if w.startswith("init_on_alloc=")), None)
    auto = re.search(r"heap alloc:(on|off)", facts.mem_auto_init or "")
    if auto:
        refs.append(command_ref(["dmesg"]))
    state = auto.group(1) if auto else ("off" if given == "0" else "on" if given in ("1",) else None)
    if state is None:
        return GRACE_BOOT_CHECK.unknown(
            "Grace; whether pages are zeroed on allocation is unknown: no init_on_alloc= on the boot line and no "
            "'mem auto-init' line in the kernel log (dmesg as root, or CONFIG_INIT_ON_ALLOC_DEFAULT_ON in the "
            "kernel's config, would tell)",
            evidence=refs,
        )
    observed = f"Grace; heap alloc zeroing {state}" + (f" (init_on_alloc={given} on the boot line)" if given else "")
    if state == "off":
        return GRACE_BOOT_CHECK.ok(observed, expected="init_on_alloc=0", evidence=refs)
    fix = Fix(
        kind="reboot",
        where=fix_where(facts.platform),
        summary="Add init_on_alloc=0 to the kernel command line and reboot",
        actions=facts.boot.add("init_on_alloc=0"),
        risk="low",
        verify="dmesg | grep 'mem auto-init'  -> heap alloc:off",
        revert=facts.boot.words("remove init_on_alloc=0"),
        persist="the boot line is persistent by itself",
    )
    return GRACE_BOOT_CHECK.problem_at(
        "low",
        observed,
        "init_on_alloc=0 (NVIDIA's Grace tuning guide)",
        "The kernel zeroes every page and heap object it allocates: on Grace, with hundreds of GB of LPDDR5X and the "
        "GPU's memory as a NUMA node, large allocations (model loading, pinned host buffers, KV-cache offload) pay "
        f"for the zeroing on the CPU. NVIDIA's Grace guide recommends init_on_alloc=0 ({GRACE_GUIDE}); it trades a "
        "hardening default for speed, so keep it where the host's security policy requires.",
        fix,
        subjects=("kernel command line",),
        evidence=refs,
    )
