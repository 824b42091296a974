"""kernel's premises: the facts its verdicts rest on (:mod:`rigaudit.agents.premise`), read off :class:`KernelFacts`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rigaudit.agents.facts import premise_reads as reads
from rigaudit.agents.premise import Premise, Reading, held, missing

if TYPE_CHECKING:
    from rigaudit.agents.investigators.kernel.facts import KernelFacts


def _gpus(facts: KernelFacts) -> Reading:
    gpus = facts.params.gpus
    return held(f"{len(gpus)} GPU(s): {', '.join(dict.fromkeys(g.gpu.name for g in gpus))}" if gpus else "no NVIDIA GPU")


def _driver(facts: KernelFacts) -> Reading:
    version = facts.version
    line = version.nv_version_line or version.module_version
    if line:
        return held(line.strip())
    if version.nvidia_loaded is False or version.gpu_count == 0:
        return held("no NVIDIA module loaded")
    return missing("/proc/driver/nvidia/version or /sys/module/nvidia/version would tell")


def _cpu(facts: KernelFacts) -> Reading:
    version = facts.version
    if not version.cpuinfo_read:
        return missing("/proc/cpuinfo (vendor_id, cpu family, model) would tell")
    if version.cpu_vendor is None:
        return held("no vendor_id (an Arm CPU)")
    return held(f"{version.cpu_vendor} family {version.cpu_family} model {version.cpu_model}")


PLATFORM = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.params.platform))
PLATFORM_FIX = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.params.platform), guards=("problem",))
"""Where a fix runs (this host, the hypervisor, the container's host): a problem rests on it, an ok does not."""
GPUS = Premise("gpus", "`/sys/bus/pci/devices`, NVML", _gpus)
CMDLINE = Premise("cmdline", "`/proc/cmdline`", lambda f: reads.text(f.params.cmdline, "", "/proc/cmdline would tell"))
KERNEL = Premise("kernel", reads.KERNEL_READS, lambda f: reads.kernel(f.version.release))
DRIVER = Premise("driver", "`/proc/driver/nvidia/version`, `/sys/module/nvidia/version`", _driver, guards=("ok",))
"""A kernel too old for the CPU stands without the driver; an ok needs the driver's build read too."""
CPU = Premise("cpu", "`/proc/cpuinfo`", _cpu, guards=("ok",))
OS = Premise("os", reads.OS_READS, lambda f: reads.os_image(f.params.platform.image), guards=())
"""How a fix persists (systemctl and /etc, or an image-based OS's own configuration): recorded, guarding no verdict."""
