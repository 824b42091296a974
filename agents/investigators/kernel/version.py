"""kernel.version: is the running kernel right for the GPU driver and the CPU's frequency driver?"""

from __future__ import annotations

import re
from collections.abc import Mapping

from rigaudit.agents.check import Check
from rigaudit.agents.facts.cpufreq_drivers import FrequencyDrivers, collect_frequency_drivers
from rigaudit.agents.facts.gpus import collect_gpus
from rigaudit.agents.facts.platform import Platform, detect_platform, fix_where
from rigaudit.agents.investigators.kernel import premises
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, command_ref, dir_ref, file_ref
from rigaudit.tools.schema.finding import SEVERITY_ORDER, Area, CommandAction, Finding, Fix, Severity

AREA: Area = "kernel"
OSRELEASE = "/proc/sys/kernel/osrelease"
NV_VERSION = "/proc/driver/nvidia/version"
NV_MODULE_VERSION = "/sys/module/nvidia/version"
MIN_KERNEL_FOR_DRIVER = (4, 15)
"""Oldest kernel the current NVIDIA driver branches (R525 and later, open and proprietary) build for."""
AMD_PSTATE_EPP_KERNEL = (6, 3)

KernelVersion = tuple[int, int, int]


class KernelVersionFacts(Record):
    platform: Platform
    release: str | None
    proc_version: str | None
    nv_version_line: str | None
    """The ``NVRM version:`` line of /proc/driver/nvidia/version (the loaded module)."""
    module_version: str | None
    module_gcc: str | None
    """The compiler the loaded NVIDIA module was built with (its ``GCC version:`` line)."""
    nvidia_loaded: bool | None
    gpu_count: int
    modules_dir_exists: bool | None
    modules_dep_has_nvidia: bool | None
    installed_kernels: tuple[str, ...] | None
    """Kernels with a module tree under /lib/modules (None: not listable); empty: the image holds none."""
    booted_from_image: bool | None
    """The kernel was booted from this filesystem (``BOOT_IMAGE=`` on its command line, or its ``/boot/vmlinuz``)."""
    drivers: FrequencyDrivers
    cpu_vendor: str | None
    cpu_family: int | None
    cpu_model: int | None
    refs: Mapping[str, tuple[str, ...]]
    cpuinfo_read: bool = True
    """``/proc/cpuinfo`` was read (an Arm CPU's has no ``vendor_id``): the premise ``cpu``."""


def parse_kernel_version(release: str | None) -> KernelVersion | None:
    """``6.8.12-11-pve`` -> (6, 8, 12)."""
    match = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?", release or "")
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def parse_nvrm(line: str | None) -> tuple[str | None, bool | None]:
    """(driver version, open kernel module?) from the ``NVRM version:`` line."""
    if not line:
        return None, None
    version = re.search(r"\s(\d+\.\d+(?:\.\d+)?)\s", line + " ")
    return (version.group(1) if version else None), ("Open Kernel Module" in line)


def _gcc(text: str | None) -> str | None:
    match = re.search(r"gcc[^0-9]*?(\d+\.\d+\.\d+)", text or "")
    return match.group(1) if match else None


async def _module_tree(probe: Probe, release: str | None, refs: list[str]) -> tuple[bool | None, bool | None]:
    """(``/lib/modules/RELEASE`` exists, its modules.dep lists nvidia.ko); None where not read."""
    if not release:
        return None, None
    modules_dir = f"/lib/modules/{release}"
    exists = await probe.exists(modules_dir)
    refs.append(f"exists:{modules_dir}")
    if not exists:
        return exists, None
    dep = await probe.text(f"{modules_dir}/modules.dep")
    if dep is None:
        return exists, None
    refs.append(file_ref(f"{modules_dir}/modules.dep"))
    return exists, bool(re.search(r"(^|/)nvidia\.ko(\.[a-z]+)?:", dep, re.MULTILINE))


async def _booted_from_image(probe: Probe, release: str | None) -> bool | None:
    """``BOOT_IMAGE=`` on the command line, or the release's ``/boot/vmlinuz``; None when neither is read."""
    cmdline = await probe.text("/proc/cmdline")
    image = await probe.exists(f"/boot/vmlinuz-{release}") if release else False
    return None if cmdline is None and not image else ("BOOT_IMAGE=" in (cmdline or "") or image)


def _cpu_field(cpuinfo: str | None, key: str) -> str | None:
    match = re.search(rf"^{key}\s*:\s*(.+)$", cpuinfo or "", re.MULTILINE)
    return match.group(1).strip() if match else None


def _cpu_int(cpuinfo: str | None, key: str) -> int | None:
    value = _cpu_field(cpuinfo, key)
    return int(value) if value and value.isdecimal() else None


async def collect(probe: Probe) -> KernelVersionFacts:
    inventory = await collect_gpus(probe)
    paths = (OSRELEASE, "/proc/version", NV_VERSION, NV_MODULE_VERSION, "/proc/modules", "/proc/cpuinfo")
    release, proc_version, nv_version, module_version, modules, cpuinfo = await probe.gather(
        *[lambda p=p: probe.text(p) for p in paths]
    )
    refs = [file_ref(p) for p in paths[:5]]
    if release is None:
        uname = await probe.run(["uname", "-r"])
        release = uname.stdout if uname.ok else None
        refs.append(command_ref(["uname", "-r"]))
    release = release.strip() if release else None
    modules_dir_exists, dep_has_nvidia = await _module_tree(probe, release, refs)
    root = await probe.list_dir("/lib/modules")
    installed = tuple(e for e in root.entries or () if re.match(r"\d+\.\d+", e)) if root.ok or root.error == "ENOENT" else None
    refs.append(dir_ref("/lib/modules"))
    drivers = await collect_frequency_drivers(probe)
    booted = await _booted_from_image(probe, release)
    platform = await detect_platform(probe)
    nv_lines = (nv_version or "").splitlines()
    nv_line = next((ln for ln in nv_lines if ln.startswith("NVRM version")), None)
    loaded = None if modules is None else any(ln.split()[:1] == ["nvidia"] for ln in modules.splitlines())
    return KernelVersionFacts(
        platform=platform,
        release=release,
        proc_version=proc_version.strip() if proc_version else None,
        nv_version_line=nv_line,
        module_version=module_version.strip() if module_version else None,
        module_gcc=_gcc(next((ln for ln in nv_lines if ln.startswith("GCC")), None)),
        nvidia_loaded=True if nv_line or module_version else loaded,
        gpu_count=len(inventory.gpus),
        modules_dir_exists=modules_dir_exists,
        modules_dep_has_nvidia=dep_has_nvidia,
        installed_kernels=installed,
        booted_from_image=booted,
        drivers=drivers,
        cpu_vendor=_cpu_field(cpuinfo, "vendor_id"),
        cpu_family=_cpu_int(cpuinfo, "cpu family"),
        cpu_model=_cpu_int(cpuinfo, "model"),
        refs={"kernel": tuple(refs), "cpu": (file_ref("/proc/cpuinfo"),)},
        cpuinfo_read=cpuinfo is not None,
    )


def _zen2_or_later(facts: KernelVersionFacts) -> bool:
    if facts.cpu_vendor != "AuthenticAMD" or facts.cpu_family is None:
        return False
    return facts.cpu_family > 0x17 or (facts.cpu_family == 0x17 and (facts.cpu_model or 0) >= 0x30)


def _v(version: tuple[int, ...]) -> str:
    return ".".join(str(p) for p in version)


KERNEL_VERSION_CHECK = Check(
    "kernel.version",
    "Kernel version vs GPU driver and CPU frequency driver",
    reads="`/proc/sys/kernel/osrelease`, `/proc/version`, driver build",
    problem="kernel too old for the CPU's frequency driver or the GPU driver branch; module built for another kernel",
    fix="upgrade the kernel",
    kinds=("reboot",),
    premises=(premises.KERNEL, premises.CPU, premises.DRIVER),
)


Issue = tuple[Severity, str, str]
"""(severity, observed, why) of one thing wrong with the kernel."""


def _too_old(facts: KernelVersionFacts, version: KernelVersion, driver: str | None) -> list[Issue]:
    if driver and version[:2] < MIN_KERNEL_FOR_DRIVER:
        return [
            (
                "high",
                f"kernel {facts.release} is older than {_v(MIN_KERNEL_FOR_DRIVER)}",
                f"NVIDIA driver {driver} supports kernels from {_v(MIN_KERNEL_FOR_DRIVER)} on",
            )
        ]
    return []


def _module_tree_issues(facts: KernelVersionFacts) -> tuple[list[Issue], list[str]]:
    """(issues, notes) of the nvidia module against the running kernel's module tree."""
    if facts.gpu_count and facts.nvidia_loaded is False and facts.platform.in_container:
        return [
            (
                "high",
                "the nvidia module is not loaded on the container's host",
                "a container shares its host's kernel: the host must load the NVIDIA driver (inside a container the "
                "missing /lib/modules is normal and says nothing)",
            )
        ], []
    if facts.gpu_count and facts.nvidia_loaded is False:
        if facts.modules_dir_exists is False:
            return [
                (
                    "high",
                    f"/lib/modules/{facts.release} is missing and the nvidia module is not loaded",
                    "the running kernel's module tree was removed (kernel upgraded or purged without a reboot): no module can "
                    "be loaded, the NVIDIA driver included",
                )
            ], []
        if facts.modules_dep_has_nvidia is False:
            return [
                (
                    "high",
                    f"no nvidia.ko in /lib/modules/{facts.release}/modules.dep and the nvidia module is not loaded",
                    "the NVIDIA module was built for another kernel (DKMS build failed or skipped for this one)",
                )
            ], []
        return [], []
    if facts.nvidia_loaded and facts.modules_dir_exists is False and not facts.platform.in_container:
        if facts.installed_kernels == () and facts.booted_from_image is False:
            return [], [
                "no kernel module tree in this image at all: the kernel is booted from outside it (a VM's direct kernel "
                "boot, an appliance), with its modules supplied by the platform"
            ]
        return [
            (
                "medium",
                f"/lib/modules/{facts.release} is missing although the nvidia module is loaded",
                "the running kernel's modules were removed after boot: further modprobe calls (nvidia_peermem, "
                "nvidia_uvm after an unload, vfio) will fail until a reboot into an installed kernel",
            )
        ], []
    return [], []


def _frequency_notes(facts: KernelVersionFacts) -> list[str]:
    """What this kernel lacks for amd_pstate on a Zen 2+ host (power.scaling_driver judges it)."""
    if not _zen2_or_later(facts) or facts.platform.in_vm:
        return []
    if facts.drivers.amd_pstate == "no":
        return [f"this kernel has no amd_pstate driver ({facts.drivers.how}): see power.scaling_driver"]
    if facts.drivers.amd_pstate_active == "no":
        return ["this kernel's amd_pstate has no active (EPP) mode (6.3+): see power.scaling_driver"]
    return []


def _summary(facts: KernelVersionFacts, driver: str | None, open_module: bool | None) -> str:
    """``kernel 6.8.0-45-generic; NVIDIA 570.86.15 open kernel module loaded``."""
    flavor = "open" if open_module else "proprietary" if open_module is False else ""
    summary = f"kernel {facts.release}"
    if driver:
        summary += f"; NVIDIA {driver}" + (f" {flavor} kernel module" if flavor else "")
        summary += " loaded" if facts.nvidia_loaded else ""
    return summary


def _right_kernel(facts: KernelVersionFacts, summary: str, notes: list[str], evidence: list[str]) -> Finding:
    kernel_gcc = _gcc(facts.proc_version)
    if facts.modules_dir_exists:
        notes.append(f"/lib/modules/{facts.release} present")
    if kernel_gcc and facts.module_gcc:
        notes.append(
            f"module and kernel built with gcc {kernel_gcc}"
            if kernel_gcc == facts.module_gcc
            else f"module built with gcc {facts.module_gcc}, kernel with {kernel_gcc}"
        )
    return KERNEL_VERSION_CHECK.ok(
        summary + ("; " + ", ".join(notes) if notes else ""),
        expected=f"kernel >= {_v(MIN_KERNEL_FOR_DRIVER)} with the NVIDIA module built for it"
        + (f"; >= {_v(AMD_PSTATE_EPP_KERNEL)} for amd_pstate active mode" if _zen2_or_later(facts) else ""),
        explanation=(
            "The loaded NVIDIA module was built for the running kernel, which is new enough for the driver branch"
            if facts.nvidia_loaded
            else "The kernel is new enough for current NVIDIA driver branches"
        )
        + (
            " and for amd_pstate's active (EPP) mode on this Zen CPU."
            if _zen2_or_later(facts) and facts.drivers.amd_pstate_active == "yes"
            else "."
        ),
        evidence=evidence,
    )


def _kernel_fix(facts: KernelVersionFacts, module_issue: bool) -> Fix:
    """Rebuild the module for (or boot) the kernel it belongs to; or upgrade a kernel too old."""
    return Fix(
        kind="reboot",
        where=fix_where(facts.platform, "kernel"),
        summary="Rebuild the NVIDIA module for the running kernel or boot the kernel it was built for"
        if module_issue
        else "Upgrade to a current kernel of the distribution (6.x) and reboot",
        actions=(
            CommandAction(
                description="dkms status; dkms autoinstall -k $(uname -r) (or reinstall the driver package), or boot the "
                "kernel whose /lib/modules holds nvidia.ko"
                if module_issue
                else "Install the distribution's current kernel series (e.g. proxmox-kernel-6.8 / linux-generic-hwe), keep "
                "the NVIDIA DKMS module building for it, reboot"
            ),
        ),
        risk="medium",
        verify="uname -r; cat /proc/driver/nvidia/version; nvidia-smi lists every GPU; re-run the audit",
        revert="select the previous kernel in the boot menu",
        persist="set the default boot entry to the new kernel",
    )


def _wrong_kernel(facts: KernelVersionFacts, summary: str, issues: list[Issue], evidence: list[str]) -> Finding:
    severity: Severity = min((s for s, _, _ in issues), key=lambda s: SEVERITY_ORDER[s])
    module_issue = any("nvidia" in obs or "modules" in obs for _, obs, _ in issues)
    return KERNEL_VERSION_CHECK.problem_at(
        severity,
        summary + "; " + "; ".join(obs for _, obs, _ in issues),
        f"kernel >= {_v(MIN_KERNEL_FOR_DRIVER)} with the NVIDIA module built for it"
        + (f"; >= {_v(AMD_PSTATE_EPP_KERNEL)} on AMD Zen 2+" if _zen2_or_later(facts) else ""),
        "; ".join(why for _, _, why in issues) + ".",
        _kernel_fix(facts, module_issue),
        evidence=evidence,
    )


def judge_kernel_version(facts: KernelVersionFacts) -> Finding:
    evidence = [*facts.refs.get("kernel", ()), *facts.refs.get("cpu", ())]
    version = parse_kernel_version(facts.release)
    if version is None:
        return KERNEL_VERSION_CHECK.unknown(f"{OSRELEASE} and uname -r not readable", evidence=evidence)
    driver, open_module = parse_nvrm(facts.nv_version_line)
    driver = driver or facts.module_version
    tree_issues, notes = _module_tree_issues(facts)
    issues = _too_old(facts, version, driver) + tree_issues
    notes += _frequency_notes(facts)
    summary = _summary(facts, driver, open_module)
    if not issues:
        return _right_kernel(facts, summary, notes, evidence)
    return _wrong_kernel(facts, summary, issues, evidence)
