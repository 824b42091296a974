"""power.scaling_driver: the CPU frequency scaling driver (amd-pstate on AMD Zen 2+ with CPPC, intel_pstate on Intel)."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.cpulist import cpu_ranges
from rigaudit.agents.investigators.power import premises
from rigaudit.agents.investigators.power.cpu_facts import AMD_PSTATE_STATUS, CPU, CpuPowerFacts, cpu_where, no_cpufreq
from rigaudit.tools.hosts.probe import file_ref
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix, SysfsWriteAction

SCALING_DRIVER_CHECK = Check(
    "power.scaling_driver",
    "CPU frequency scaling driver",
    reads="`cpufreq/scaling_driver`, `amd_pstate/status`, `acpi_cppc/`, `/proc/cpuinfo`, `/proc/cmdline`",
    problem="`acpi-cpufreq` on AMD Zen 2+ with CPPC",
    fix="`amd_pstate=active` on the boot line",
    kinds=("reboot", "runtime"),
    premises=(premises.PLATFORM, premises.CPU, premises.KERNEL, premises.CMDLINE),
)


def judge_scaling_driver(facts: CpuPowerFacts) -> Finding:
    if not facts.cpufreq_present:
        return no_cpufreq(SCALING_DRIVER_CHECK, facts)
    cpu0 = facts.cpus[0]
    refs = (file_ref(f"{CPU}/cpu{cpu0}/cpufreq/scaling_driver"), "file:/proc/cpuinfo", f"exists:{CPU}/cpu{cpu0}/acpi_cppc")
    if facts.driver is None:
        return SCALING_DRIVER_CHECK.unknown(f"{CPU}/cpu{cpu0}/cpufreq/scaling_driver is not readable", evidence=refs[:1])
    amd = facts.vendor == "AuthenticAMD" and facts.family is not None and facts.family >= 0x17
    intel = facts.vendor == "GenuineIntel"
    if amd and facts.driver == "acpi-cpufreq" and facts.has_cppc:
        return _amd_pstate_problem(facts, refs)
    if amd and facts.driver == "acpi-cpufreq":
        why = "no acpi_cppc: amd_pstate needs CPPC, which the BIOS does not expose (see firmware.cppc)"
        return SCALING_DRIVER_CHECK.ok(f"acpi-cpufreq ({why})", expected="amd-pstate-epp", evidence=refs)
    if intel and facts.driver == "acpi-cpufreq":
        disabled = facts.cmdline is not None and "intel_pstate=disable" in facts.cmdline
        fix = Fix(
            kind="reboot",
            where=cpu_where(facts.platform),
            summary="Let intel_pstate drive the CPU: drop intel_pstate=disable from the boot line"
            if disabled
            else "Let intel_pstate drive the CPU: enable HWP ('Hardware P-States: Native') in the BIOS",
            actions=facts.boot.remove("intel_pstate=disable")
            if disabled
            else (CommandAction(description="BIOS: Hardware P-States = Native (HWP), then reboot"),),
            verify=f"cat {CPU}/cpu0/cpufreq/scaling_driver  -> intel_pstate",
            revert="restore the previous boot line / BIOS setting and reboot",
        )
        return SCALING_DRIVER_CHECK.problem_at(
            "low",
            "acpi-cpufreq on an Intel CPU" + (" (intel_pstate=disable on the boot line)" if disabled else ""),
            "intel_pstate",
            "intel_pstate with HWP lets the core pick its frequency within microseconds and exposes EPP; acpi-cpufreq "
            "only switches between a few ACPI P-states at the governor's pace. The gain for inference is small "
            "(ramp latency on the CPU threads that drive the GPUs).",
            fix,
            subjects=(cpu_ranges(facts.cpus),),
            evidence=(*refs[:2], "file:/proc/cmdline"),
        )
    return SCALING_DRIVER_CHECK.ok(facts.driver, evidence=refs[:2])


def _kernel_lacks_it(facts: CpuPowerFacts, refs: tuple[str, ...]) -> Finding:
    """acpi-cpufreq on a CPPC-capable Zen CPU whose running kernel has no amd_pstate, or may not have it."""
    d = facts.drivers
    known_missing = d.amd_pstate == "no"
    where = cpu_where(facts.platform)
    fix = Fix(
        kind="reboot",
        where=where,
        summary="Boot a kernel that has amd_pstate (Linux 5.17+), then add amd_pstate=active"
        if known_missing
        else "Check whether this kernel has amd_pstate; if it has, add amd_pstate=active, else boot one that has",
        actions=(
            *(
                ()
                if known_missing
                else (CommandAction(description=f"grep CONFIG_X86_AMD_PSTATE /boot/config-{d.release_text}  -> =y"),)
            ),
            CommandAction(
                description="install the distribution's newer kernel series (Ubuntu 22.04: linux-generic-hwe-22.04, "
                "6.8; Debian 11: the bookworm-backports kernel; RHEL 8: none carries it) with the NVIDIA driver "
                "built for it (DKMS)"
            ),
            *facts.boot.add("amd_pstate=active"),
        ),
        risk="medium",
        verify=f"uname -r; cat {CPU}/cpu0/cpufreq/scaling_driver  -> amd-pstate-epp",
        revert="boot the previous kernel (it stays installed)",
        persist="the new kernel stays the default boot entry",
    )
    why = (
        f"The running kernel has no amd_pstate driver ({d.how}): amd_pstate arrived in Linux 5.17 and its active "
        "(EPP) mode in 6.3, so the boot option alone would be ignored and the advice is a kernel change first. "
        if known_missing
        else f"Whether this kernel carries amd_pstate cannot be told here ({d.how}): its build configuration would "
        f"tell (/boot/config-{d.release_text}). "
    )
    return SCALING_DRIVER_CHECK.problem_at(
        "low",
        f"scaling_driver acpi-cpufreq on AMD family 0x{facts.family or 0:x} with acpi_cppc present; kernel "
        f"{d.release_text}: amd_pstate {'absent' if known_missing else 'unknown'}",
        "amd-pstate-epp on a kernel that has it",
        why + "Low: with the performance governor acpi-cpufreq already holds the top P-state and boost; what amd_pstate "
        "adds (per-core CPPC requests, EPP, preferred cores) is a small gain in CPU-bound decode steps, and it costs "
        "a kernel change on this host.",
        fix,
        subjects=(cpu_ranges(facts.cpus),),
        evidence=(*refs, *d.refs),
    )


def _switch_fix(facts: CpuPowerFacts, param: str, active: bool) -> tuple[Fix, str]:
    """The switch to amd-pstate: at runtime where its status file exists, else by the boot option; and a note on it."""
    where = cpu_where(facts.platform)
    persist = facts.boot.words(f"add {param}")
    if facts.amd_pstate_status is not None:
        fix = Fix(
            kind="runtime",
            where=where,
            summary=f"Switch to amd-pstate in active (EPP) mode now via {AMD_PSTATE_STATUS}; persist {param} on the boot line",
            actions=(SysfsWriteAction(paths=(AMD_PSTATE_STATUS,), value="active"),),
            risk="medium",
            verify=f"cat {CPU}/cpu0/cpufreq/scaling_driver  -> amd-pstate-epp",
            revert=f"echo {facts.amd_pstate_status} > {AMD_PSTATE_STATUS}",
            persist=persist,
        )
        runtime_note = f"{AMD_PSTATE_STATUS} exists ({facts.amd_pstate_status}), so the switch can be made at runtime."
    else:
        fix = Fix(
            kind="reboot",
            where=where,
            summary=f"Add {param} to the kernel command line and reboot",
            actions=facts.boot.add(param),
            risk="low",
            verify=f"grep -o {param} /proc/cmdline; cat {CPU}/cpu0/cpufreq/scaling_driver  -> "
            + ("amd-pstate-epp" if active else "amd-pstate"),
            revert=facts.boot.words(f"remove {param}"),
            persist="the boot line is persistent by itself",
        )
        runtime_note = (
            f"A runtime switch is possible only when {AMD_PSTATE_STATUS} exists; it is absent here (the driver did not "
            "register at boot), so this needs the boot option and a reboot."
        )
    if not active:
        runtime_note += (
            f" This kernel ({facts.drivers.release_text}) has amd_pstate without its active (EPP) mode (6.3+): passive "
            "mode under the performance governor is what it offers."
        )
    return fix, runtime_note


def _amd_pstate_problem(facts: CpuPowerFacts, refs: tuple[str, ...]) -> Finding:
    if facts.drivers.amd_pstate != "yes":
        return _kernel_lacks_it(facts, refs)
    active = facts.drivers.amd_pstate_active == "yes"
    param = "amd_pstate=active" if active else "amd_pstate=passive"
    fix, runtime_note = _switch_fix(facts, param, active)
    explanation = (
        "This AMD Zen 2+ CPU exposes ACPI CPPC, but the kernel runs the legacy acpi-cpufreq driver, which only knows "
        "a handful of ACPI P-states and leaves boost decisions coarse. amd-pstate in active mode hands frequency selection "
        "to the CPU's own firmware through CPPC (continuous performance levels, per-core decisions in well under a "
        "millisecond, EPP hints, preferred-core ranking on recent kernels), so the bursty CPU work of an inference "
        "server (scheduler step, sampling, kernel launches, NCCL proxy threads) runs at full clock sooner. Expect a "
        "small to moderate gain in single-stream decode latency; measure before and after. On EPYC servers the kernel "
        "does not pick amd-pstate on its own (the firmware declares a server power profile), so it must be asked for "
        "on the command line. "
        + runtime_note
        + " After the switch, keep governor 'performance' (or EPP 'performance'); see power.epp."
    )
    return SCALING_DRIVER_CHECK.problem_at(
        "medium" if active else "low",
        f"scaling_driver acpi-cpufreq on AMD family 0x{facts.family or 0:x} with acpi_cppc present",
        "amd-pstate-epp (amd_pstate=active)" if active else "amd-pstate (amd_pstate=passive)",
        explanation,
        fix,
        subjects=(cpu_ranges(facts.cpus),),
        evidence=(*refs, file_ref(AMD_PSTATE_STATUS), "file:/proc/cmdline", *facts.drivers.refs),
    )
