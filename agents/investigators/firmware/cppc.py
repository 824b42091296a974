"""firmware.cppc: does the firmware publish ACPI CPPC, which amd_pstate needs?"""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.investigators.firmware import premises
from rigaudit.agents.investigators.firmware.facts import CPPC_DIR, CpuInfo, FirmwareFacts, firmware_fix
from rigaudit.tools.schema.finding import Finding, Fix

CPPC_CHECK = Check(
    "firmware.cppc",
    "ACPI CPPC for amd_pstate",
    reads="`/sys/devices/system/cpu/cpu0/acpi_cppc/` on AMD; the running kernel and `/boot/config-RELEASE` (amd_pstate)",
    problem="missing on a Zen 2+ CPU whose running kernel has amd_pstate (5.17+ or CONFIG_X86_AMD_PSTATE); na on a kernel "
    "without it, unknown where that cannot be told",
    fix="BIOS: CPPC on",
    kinds=("firmware",),
    premises=(premises.PLATFORM, premises.CPU, premises.KERNEL),
)


def judge_cppc(facts: FirmwareFacts) -> Finding:
    evidence = [*facts.refs.get("cpu", ()), *facts.refs.get("cppc", ())]
    cpu = facts.cpu
    if cpu is None or cpu.vendor is None:
        return CPPC_CHECK.unknown("/proc/cpuinfo not readable", evidence=evidence)
    if skipped := _not_for_amd_pstate(facts, cpu, evidence):
        return skipped
    if facts.cppc_entries is not None:
        return CPPC_CHECK.ok(
            f"{CPPC_DIR} present ({', '.join(facts.cppc_entries[:4]) or 'empty'}) on {cpu.model_name}",
            expected="acpi_cppc present (firmware exposes CPPC)",
            explanation="The firmware publishes CPPC, so amd_pstate can drive this CPU.",
            evidence=evidence,
        )
    if facts.scaling_driver and facts.scaling_driver.startswith("amd-pstate"):
        return CPPC_CHECK.ok(f"scaling_driver {facts.scaling_driver}", evidence=evidence)
    if facts.cppc_error not in (None, "ENOENT"):
        return CPPC_CHECK.unknown(f"{CPPC_DIR} not listable: {facts.cppc_error}", evidence=evidence)
    return _cppc_missing(facts, cpu, evidence)


def _not_for_amd_pstate(facts: FirmwareFacts, cpu: CpuInfo, evidence: list[str]) -> Finding | None:
    """Where CPPC is not this host's to judge: not AMD, a VM guest, before Zen 2, or a guest with no cpufreq."""
    if cpu.vendor != "AuthenticAMD":
        return CPPC_CHECK.not_applicable(f"{cpu.model_name or cpu.vendor}: CPPC for amd_pstate concerns AMD CPUs")
    if facts.platform.in_vm:
        return CPPC_CHECK.not_applicable("VM guest: CPU frequency is managed by the hypervisor's firmware and kernel")
    if not cpu.amd_pstate_capable:
        return CPPC_CHECK.not_applicable(f"{cpu.model_name or 'this AMD CPU'} predates Zen 2: amd_pstate does not support it")
    if facts.platform.is_guest and facts.scaling_driver is None and facts.cppc_entries is None:
        return CPPC_CHECK.unknown(
            f"{facts.platform.kind} with no cpufreq visible: the CPU's frequency and CPPC belong to the host; check there",
            evidence=evidence,
        )
    return None


def _cppc_missing(facts: FirmwareFacts, cpu: CpuInfo, evidence: list[str]) -> Finding:
    """No acpi_cppc: a problem only where the running kernel has amd_pstate, its one user."""
    drivers = facts.drivers
    if drivers is not None:
        evidence = [*evidence, *drivers.refs]
    if drivers is None or drivers.amd_pstate == "unknown":
        how = drivers.how if drivers is not None else "not read"
        return CPPC_CHECK.unknown(
            f"{CPPC_DIR} missing on {cpu.model_name}, but whether kernel {drivers.release_text if drivers else ''} has "
            f"amd_pstate, the only user of CPPC, is unknown ({how}): CONFIG_X86_AMD_PSTATE in /boot/config-$(uname -r) "
            "would tell",
            evidence=evidence,
        )
    if drivers.amd_pstate == "no":
        return CPPC_CHECK.not_applicable(
            f"{CPPC_DIR} missing on {cpu.model_name}, but kernel {drivers.release_text} has no amd_pstate ({drivers.how}): "
            "CPPC in the BIOS would change nothing until a kernel that has it (Linux 5.17+, active mode 6.3+); "
            "see power.scaling_driver and kernel.version",
            evidence=evidence,
        )
    return CPPC_CHECK.problem_at(
        "medium",
        observed=f"{CPPC_DIR} missing on {cpu.model_name} (scaling_driver {facts.scaling_driver or 'unknown'})",
        expected="acpi_cppc present",
        explanation="amd_pstate needs the ACPI _CPC objects the firmware publishes when CPPC is enabled. Without them "
        "the kernel falls back to acpi-cpufreq with three coarse P-states and slow transitions, which delays the CPU "
        "thread that launches GPU kernels and lengthens time per output token in latency-bound decoding.",
        fix=_cppc_fix(facts),
        subjects=["cpu0"],
        evidence=evidence,
    )


def _cppc_fix(facts: FirmwareFacts) -> Fix:
    return firmware_fix(
        facts.platform,
        "Enable CPPC in the BIOS so the kernel can use amd_pstate",
        "BIOS: AMD CBS > NBIO Common Options > SMU Common Options > CPPC = Enabled (and 'CPPC Preferred "
        "Cores' = Enabled where offered), then reboot",
        f"ls {CPPC_DIR} lists highest_perf, nominal_perf...; dmesg has no 'amd_pstate: the _CPC object is not present'",
    )
