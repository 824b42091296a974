"""power.scaling_driver: the CPU frequency scaling driver (amd-pstate on AMD Zen 2+ with CPPC, intel_pstate on Intel)."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.cpulist import cpu_ranges
from rigaudit.agents.findings import ok, problem, unknown
from rigaudit.agents.investigators.power.cpu_facts import AMD_PSTATE_STATUS, AREA, CPU, CpuPowerFacts, cpu_where, no_cpufreq
from rigaudit.tools.model.finding import Action, CommandAction, Finding, Fix, SysfsWriteAction
from rigaudit.tools.probe import file_ref


def _boot_line_actions(param: str, cmdline: str | None) -> tuple[Action, ...]:
    grub = (
        CommandAction(
            description=f"GRUB (BOOT_IMAGE= in /proc/cmdline): append {param} to GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub",
            argv=(
                "sed",
                "-i",
                rf's/^GRUB_CMDLINE_LINUX_DEFAULT="\(.*\)"/GRUB_CMDLINE_LINUX_DEFAULT="\1 {param}"/',
                "/etc/default/grub",
            ),
        ),
        CommandAction(
            description="GRUB: regenerate the boot config (Proxmox: proxmox-boot-tool refresh also syncs every ESP; "
            "plain Debian: update-grub)",
            argv=("proxmox-boot-tool", "refresh"),
        ),
    )
    sdboot = (
        CommandAction(
            description=f"systemd-boot (Proxmox ZFS/UEFI via proxmox-boot-tool): /etc/kernel/cmdline is one line; append {param}",
            argv=("sed", "-i", f"1s/$/ {param}/", "/etc/kernel/cmdline"),
        ),
        CommandAction(description="systemd-boot: copy the new command line to every ESP", argv=("proxmox-boot-tool", "refresh")),
    )
    head = (
        CommandAction(
            description="See which boot loader this host uses (GRUB or systemd-boot)", argv=("proxmox-boot-tool", "status")
        ),
    )
    tail = (CommandAction(description=f"Reboot, then check that {param} is in /proc/cmdline", argv=("systemctl", "reboot")),)
    if cmdline is not None and "BOOT_IMAGE=" in cmdline:
        return head + grub + tail
    if cmdline is not None and "initrd=" in cmdline:
        return head + sdboot + tail
    return head + grub + sdboot + tail


SCALING_DRIVER_CHECK = Check(
    "power.scaling_driver",
    "CPU frequency scaling driver",
    reads="`cpufreq/scaling_driver`, `amd_pstate/status`, `acpi_cppc/`, `/proc/cpuinfo`, `/proc/cmdline`",
    problem="`acpi-cpufreq` on AMD Zen 2+ with CPPC",
    fix="`amd_pstate=active` on the boot line",
    kinds=("reboot", "runtime"),
)


def judge_scaling_driver(facts: CpuPowerFacts) -> Finding:
    check, title = SCALING_DRIVER_CHECK.id, SCALING_DRIVER_CHECK.title
    if not facts.cpufreq_present:
        return no_cpufreq(check, title, facts)
    cpu0 = facts.cpus[0]
    refs = (file_ref(f"{CPU}/cpu{cpu0}/cpufreq/scaling_driver"), "file:/proc/cpuinfo", f"exists:{CPU}/cpu{cpu0}/acpi_cppc")
    if facts.driver is None:
        return unknown(check, AREA, title, f"{CPU}/cpu{cpu0}/cpufreq/scaling_driver is not readable", evidence=refs[:1])
    amd = facts.vendor == "AuthenticAMD" and facts.family is not None and facts.family >= 0x17
    intel = facts.vendor == "GenuineIntel"
    if amd and facts.driver == "acpi-cpufreq" and facts.has_cppc:
        return _amd_pstate_problem(facts, refs)
    if amd and facts.driver == "acpi-cpufreq":
        why = "no acpi_cppc: amd_pstate needs CPPC, which the BIOS does not expose (see firmware.cppc)"
        return ok(check, AREA, title, f"acpi-cpufreq ({why})", expected="amd-pstate-epp", evidence=refs)
    if intel and facts.driver == "acpi-cpufreq":
        disabled = facts.cmdline is not None and "intel_pstate=disable" in facts.cmdline
        fix = Fix(
            kind="reboot",
            where=cpu_where(facts.platform),
            summary="Let intel_pstate drive the CPU: drop intel_pstate=disable from the boot line"
            if disabled
            else "Let intel_pstate drive the CPU: enable HWP ('Hardware P-States: Native') in the BIOS",
            actions=(
                CommandAction(
                    description="Remove intel_pstate=disable from /etc/default/grub or /etc/kernel/cmdline, then "
                    "proxmox-boot-tool refresh (or update-grub) and reboot"
                    if disabled
                    else "BIOS: Hardware P-States = Native (HWP), then reboot"
                ),
            ),
            verify=f"cat {CPU}/cpu0/cpufreq/scaling_driver  -> intel_pstate",
            revert="restore the previous boot line / BIOS setting and reboot",
        )
        return problem(
            check,
            AREA,
            title,
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
    return ok(check, AREA, title, facts.driver, evidence=refs[:2])


def _amd_pstate_problem(facts: CpuPowerFacts, refs: tuple[str, ...]) -> Finding:
    param = "amd_pstate=active"
    where = cpu_where(facts.platform)
    status_ref = file_ref(AMD_PSTATE_STATUS)
    persist = f"add {param} to the kernel command line (/etc/default/grub or /etc/kernel/cmdline, then proxmox-boot-tool refresh)"
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
            actions=_boot_line_actions(param, facts.cmdline),
            risk="low",
            verify=f"grep -o {param} /proc/cmdline; cat {CPU}/cpu0/cpufreq/scaling_driver  -> amd-pstate-epp; "
            f"cat {AMD_PSTATE_STATUS}  -> active",
            revert=f"remove {param} from the same file, proxmox-boot-tool refresh (or update-grub), reboot",
            persist="the boot line is persistent by itself",
        )
        runtime_note = (
            f"A runtime switch is possible only when {AMD_PSTATE_STATUS} exists; it is absent here (the driver did not "
            "register at boot), so this needs the boot option and a reboot."
        )
    explanation = (
        "This AMD Zen 2+ CPU exposes ACPI CPPC, but the kernel runs the legacy acpi-cpufreq driver, which only knows "
        "a handful of ACPI P-states and leaves boost decisions coarse. amd-pstate in active mode hands frequency selection "
        "to the CPU's own firmware through CPPC (continuous performance levels, per-core decisions in well under a "
        "millisecond, EPP hints, preferred-core ranking on recent kernels), so the bursty CPU work of an inference "
        "server (scheduler step, sampling, kernel launches, NCCL proxy threads) runs at full clock sooner. Expect a "
        "small to moderate gain in single-stream decode latency; measure before and after. On EPYC servers the kernel "
        "does not pick amd-pstate on its own, so it must be asked for on the command line. "
        + runtime_note
        + " After the switch, keep governor 'performance' (or EPP 'performance'); see power.epp."
    )
    return problem(
        "power.scaling_driver",
        AREA,
        "CPU frequency scaling driver",
        "medium",
        f"scaling_driver acpi-cpufreq on AMD family 0x{facts.family or 0:x} with acpi_cppc present",
        "amd-pstate-epp (amd_pstate=active)",
        explanation,
        fix,
        subjects=(cpu_ranges(facts.cpus),),
        evidence=(*refs, status_ref, "file:/proc/cmdline"),
    )
