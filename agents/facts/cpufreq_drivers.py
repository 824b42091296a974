"""The CPU frequency drivers the running kernel offers: amd_pstate (and its active, EPP mode) and intel_pstate.

Advice to switch drivers is only advice the system can take when the running kernel has the driver. The kernel
says so best itself: ``/sys/devices/system/cpu/amd_pstate`` exists when the driver registered, and the kernel's build
configuration (``/boot/config-RELEASE``: ``CONFIG_X86_AMD_PSTATE``) when it did not. Without either, the version
decides: amd_pstate arrived in Linux 5.17, its active (EPP) mode in 6.3, ``CONFIG_X86_AMD_PSTATE_DEFAULT_MODE`` in
6.5 (which still leaves acpi-cpufreq on machines whose firmware declares a server power profile). Enterprise kernels
(``.el8``/``.el9``) backport drivers, so their version alone decides nothing.
"""

from __future__ import annotations

import re
from typing import Literal

from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, file_ref

Availability = Literal["yes", "no", "unknown"]
KernelVersion = tuple[int, int, int]
OSRELEASE = "/proc/sys/kernel/osrelease"
CPU = "/sys/devices/system/cpu"
AMD_PSTATE_KERNEL: KernelVersion = (5, 17, 0)
AMD_PSTATE_ACTIVE_KERNEL: KernelVersion = (6, 3, 0)
AMD_PSTATE_DEFAULT_KERNEL: KernelVersion = (6, 5, 0)


def parse_kernel_version(release: str | None) -> KernelVersion | None:
    """``6.8.12-11-pve`` -> (6, 8, 12)."""
    match = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?", release or "")
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def version_text(version: tuple[int, ...]) -> str:
    return ".".join(str(p) for p in version[:2])


def _backports(release: str | None) -> bool:
    """Distribution kernels that carry drivers far newer than their version (RHEL and its rebuilds, SLES)."""
    return bool(re.search(r"\.el\d|\.an\d|-default$|\.oe\d", release or ""))


def config_option(config: str | None, name: str) -> str | None:
    """``y``/``m``/a value of ``CONFIG_NAME`` in a kernel config; ``n`` for ``# CONFIG_NAME is not set``; None if absent."""
    if config is None:
        return None
    if re.search(rf"^# {name} is not set$", config, re.MULTILINE):
        return "n"
    match = re.search(rf"^{name}=(.*)$", config, re.MULTILINE)
    return match.group(1).strip().strip('"') if match else None


class FrequencyDrivers(Record):
    release: str | None
    version: KernelVersion | None
    amd_pstate: Availability
    """The running kernel has the amd_pstate driver."""
    amd_pstate_active: Availability
    """It offers active (EPP) mode (``amd_pstate=active``)."""
    amd_pstate_registered: bool
    """``/sys/devices/system/cpu/amd_pstate`` exists: the driver runs now (its mode can be switched at runtime)."""
    intel_pstate: Availability
    config_read: bool
    """``/boot/config-RELEASE`` was read."""
    how: str
    refs: tuple[str, ...]

    @property
    def release_text(self) -> str:
        return self.release or "the running kernel"


def _availability(config_value: str | None, version: KernelVersion | None, since: KernelVersion, backports: bool) -> Availability:
    if config_value is not None:
        return "no" if config_value == "n" else "yes"
    if version is None:
        return "unknown"
    if version >= since:
        return "yes"
    return "unknown" if backports else "no"


async def collect_frequency_drivers(probe: Probe) -> FrequencyDrivers:
    release_text = await probe.text(OSRELEASE)
    release = release_text.strip() if release_text else None
    version = parse_kernel_version(release)
    config_path = f"/boot/config-{release}" if release else None
    config = await probe.text(config_path) if config_path else None
    registered, intel_dir = await probe.gather(
        lambda: probe.exists(f"{CPU}/amd_pstate"), lambda: probe.exists(f"{CPU}/intel_pstate")
    )
    status = await probe.text(f"{CPU}/amd_pstate/status")
    backports = _backports(release)
    refs = [file_ref(OSRELEASE), f"exists:{CPU}/amd_pstate"]
    if config_path:
        refs.append(file_ref(config_path))
    amd = (
        "yes"
        if registered
        else _availability(config_option(config, "CONFIG_X86_AMD_PSTATE"), version, AMD_PSTATE_KERNEL, backports)
    )
    default_mode = config_option(config, "CONFIG_X86_AMD_PSTATE_DEFAULT_MODE")
    if amd == "no":
        active: Availability = "no"
    elif status is not None or default_mode is not None or (version is not None and version >= AMD_PSTATE_ACTIVE_KERNEL):
        active = "yes"
    elif registered and version is not None and not backports:
        active = "no"
    else:
        active = _availability(None, version, AMD_PSTATE_ACTIVE_KERNEL, backports)
    intel: Availability = (
        "yes" if intel_dir else _availability(config_option(config, "CONFIG_X86_INTEL_PSTATE"), version, (3, 9, 0), backports)
    )
    if registered:
        how = f"{CPU}/amd_pstate exists: the driver is registered"
    elif config is not None:
        how = f"{config_path}: CONFIG_X86_AMD_PSTATE={config_option(config, 'CONFIG_X86_AMD_PSTATE') or 'absent'}"
    elif version is not None:
        how = f"kernel {release}" + (" (an enterprise kernel: its version does not tell what it backports)" if backports else "")
    else:
        how = f"{OSRELEASE} not readable"
    return FrequencyDrivers(release, version, amd, active, registered, intel, config is not None, how, tuple(refs))
