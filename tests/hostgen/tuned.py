"""TuneD as a host has it: the service, /etc/tuned/active_profile and the packaged profiles' tuned.conf.

The profile texts follow the upstream tuned repository's profiles/ (redhat-performance/tuned): throughput-performance
sets ``[cpu] governor=performance`` (RHEL's documented default for servers), balanced ``governor=conservative|powersave``
with ``energy_performance_preference=balance_performance``, accelerator-performance throughput-performance's settings
and ``force_latency=99`` (cpuidle then enters no state whose exit latency is above 99 us). The exact file RHEL 9.4's
tuned-2.21 package installs was not read from a public source here: the options rules read ([cpu], [vm], [sysctl]) are
the upstream ones, the rest (comments, [disk], [acpi], [audio]) is left out.
"""

from __future__ import annotations

from tests.hostgen.tree import Tree

PROFILES: dict[str, str] = {
    "throughput-performance": (
        "#\n# tuned configuration\n#\n\n[main]\nsummary=Broadly applicable tuning that provides excellent performance "
        "across a variety of common server workloads\n\n[cpu]\ngovernor=performance\nenergy_perf_bias=performance\n"
        "min_perf_pct=100\n\n[vm]\ntransparent_hugepages=always\n\n[sysctl]\nvm.dirty_ratio = 40\n"
        "vm.dirty_background_ratio = 10\nvm.swappiness=10\n"
    ),
    "balanced": (
        "#\n# tuned configuration\n#\n\n[main]\nsummary=General non-specialized tuned profile\n\n[modules]\n"
        "cpufreq_conservative=+r\n\n[cpu]\npriority=10\ngovernor=conservative|powersave\nenergy_perf_bias=normal\n"
        "energy_performance_preference=balance_performance\n"
    ),
    "accelerator-performance": (
        "#\n# tuned configuration\n#\n\n[main]\nsummary=Throughput performance based tuning with disabled higher "
        "latency STOP states\n\n[cpu]\ngovernor=performance\nenergy_perf_bias=performance\nmin_perf_pct=100\n"
        "force_latency=99\n\n[vm]\ntransparent_hugepages=always\n\n[sysctl]\nkernel.sched_min_granularity_ns = 10000000\n"
        "vm.dirty_ratio = 40\nvm.dirty_background_ratio = 10\nvm.swappiness=10\n"
    ),
    "latency-performance": (
        "#\n# tuned configuration\n#\n\n[main]\nsummary=Optimize for deterministic performance at the cost of increased "
        "power consumption\n\n[cpu]\nforce_latency=cstate.id_no_zero:1|3\ngovernor=performance\n"
        "energy_perf_bias=performance\nmin_perf_pct=100\n\n[sysctl]\nvm.dirty_ratio=10\nvm.dirty_background_ratio=3\n"
        "vm.swappiness=10\n"
    ),
}


def write_tuned(tree: Tree, profile: str, *, service: str = "active") -> None:
    tree.file("/etc/tuned/active_profile", profile + "\n")
    tree.file("/etc/tuned/profile_mode", "manual\n")
    tree.file("/etc/tuned/tuned-main.conf", "daemon = 1\ndynamic_tuning = 0\nsleep_interval = 1\nupdate_interval = 10\n")
    for name, text in PROFILES.items():
        tree.file(f"/usr/lib/tuned/{name}/tuned.conf", text)
    tree.command(("systemctl", "is-active", "tuned"), service + "\n", exit_code=0 if service == "active" else 3)
