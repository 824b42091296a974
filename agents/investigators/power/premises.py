"""power's premises: the facts its verdicts rest on (:mod:`rigaudit.agents.premise`), read off :class:`PowerFacts`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rigaudit.agents.facts import premise_reads as reads
from rigaudit.agents.premise import Premise, Reading, held, missing

if TYPE_CHECKING:
    from rigaudit.agents.investigators.power.facts import PowerFacts


def _settled(facts: PowerFacts) -> Reading | None:
    """A frequency driver other than acpi-cpufreq is judged by itself: the CPU and the boot line do not decide it."""
    driver = facts.cpu.driver
    return held(f"not needed: the driver is {driver}") if driver and driver != "acpi-cpufreq" else None


def _cmdline(facts: PowerFacts) -> Reading:
    settled = _settled(facts)
    return settled or reads.text(facts.cpu.cmdline, "", "/proc/cmdline would tell")


def _cpu(facts: PowerFacts) -> Reading:
    settled = _settled(facts)
    if settled is not None:
        return settled
    cpu = facts.cpu
    if not cpu.cpuinfo_read:
        return missing("/proc/cpuinfo (vendor_id, cpu family, model) would tell")
    if cpu.vendor is None:
        return held("no vendor_id (an Arm CPU)")
    return held(f"{cpu.vendor} family {cpu.family} model {cpu.model}")


def _cpufreq(facts: PowerFacts) -> Reading:
    cpu = facts.cpu
    if not cpu.cpufreq_present:
        return held("no cpufreq (" + (cpu.platform.label if cpu.platform.layers else "platform unknown") + ")")
    return held(f"{cpu.driver or 'driver unknown'}; kernel {cpu.drivers.release or '?'}: {cpu.drivers.how}")


def _tuned(facts: PowerFacts) -> Reading:
    state = facts.cpu.tuned_state
    if state is None:
        return held("not installed")
    if state.unread:
        return missing(f"profile(s) {', '.join(state.unread)} unreadable; /usr/lib/tuned and /etc/tuned would tell")
    return held(f"{state.service or 'service state unknown'}, profile {state.active or 'none'}")


def _gpus(facts: PowerFacts) -> Reading:
    inventory = facts.gpu.inventory
    if inventory is None:
        return held(f"{len(facts.gpu.gpus)} GPU(s)")
    return reads.gpus(inventory)


def _nvml(facts: PowerFacts) -> Reading:
    if facts.gpu.nvml_error:
        return missing(f"NVML: {facts.gpu.nvml_error}; NVML (libnvidia-ml.so.1 with the driver loaded) would tell")
    return held("NVML answered")


def _gpu_config(facts: PowerFacts) -> Reading:
    inventory = facts.gpu.inventory
    return reads.gpu_config(inventory) if inventory is not None else held("no vGPU")


PLATFORM = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.cpu.platform))
PLATFORM_FIX = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.cpu.platform), guards=("problem",))
"""Where a fix runs (this host, the hypervisor, the container's host): a problem rests on it, an ok does not."""
CPU = Premise("cpu", "`/proc/cpuinfo`", _cpu)
KERNEL = Premise("kernel", reads.KERNEL_READS, lambda f: reads.kernel(f.cpu.drivers.release), guards=("problem",))
"""acpi-cpufreq is a fault only on a kernel that has amd_pstate; a working driver is ok on any."""
CMDLINE = Premise("cmdline", "`/proc/cmdline`", _cmdline)
CPUFREQ = Premise("cpufreq", reads.CPUFREQ_READS, _cpufreq)
TUNED = Premise("tuned", "`systemctl is-active tuned`, `/etc/tuned/active_profile` and its profiles", _tuned)
GPUS = Premise("gpus", reads.GPUS_READS, _gpus)
NVML = Premise("nvml", reads.NVML_READS, _nvml)
GPU_CONFIG = Premise("gpu_config", "NVML virtualization mode", _gpu_config)
