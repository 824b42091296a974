"""A reboot the host is waiting for: the NVIDIA driver upgraded on disk while the old module stays loaded.

After a driver package upgrade without a reboot, the loaded kernel module keeps its version while the user-space
libraries on disk (``libnvidia-ml.so.1``, ``libcuda.so.1``) carry the new one: NVML refuses to start
(``LIB_RM_VERSION_MISMATCH``), the kernel log says ``NVRM: API mismatch``, and Debian/Ubuntu list the packages in
``/var/run/reboot-required.pkgs``. None of this is a broken install: the fix is the reboot (or a module reload with
every GPU user stopped).
"""

from __future__ import annotations

import re

from rigaudit.agents.facts.kernel_log import read_kernel_log
from rigaudit.agents.facts.nvidia_driver import PROC_VERSION, kernel_version
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, command_ref, file_ref

REBOOT_REQUIRED = "/var/run/reboot-required"
REBOOT_PKGS = "/var/run/reboot-required.pkgs"
LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/aarch64-linux-gnu", "/usr/lib")
_LIB = r"libnvidia-ml\.so\.(\d+\.\d+(?:\.\d+)?)$"
_API_MISMATCH = (
    r"NVRM: API mismatch: the client has the version (\d+\.\d+(?:\.\d+)?), but\s+.*?this kernel module has the version "
    r"(\d+\.\d+(?:\.\d+)?)"
)


class PendingReboot(Record):
    loaded: str | None
    """The NVIDIA kernel module's version (``/proc/driver/nvidia/version``)."""
    installed: str | None
    """The user-space library version on this filesystem (``libnvidia-ml.so.1``'s target)."""
    api_mismatch: tuple[str, str] | None
    """(client, module) versions of the kernel log's ``NVRM: API mismatch`` line."""
    reboot_packages: tuple[str, ...] | None
    """``/var/run/reboot-required.pkgs``; None when absent."""
    refs: tuple[str, ...]

    @property
    def driver_upgraded(self) -> bool:
        """The installed driver differs from the loaded one: a reboot (or module reload) is pending."""
        if self.loaded and self.installed and self.loaded != self.installed:
            return True
        return self.api_mismatch is not None and self.api_mismatch[0] != self.api_mismatch[1]

    @property
    def nvidia_packages(self) -> tuple[str, ...]:
        return tuple(p for p in self.reboot_packages or () if "nvidia" in p or "cuda" in p)

    @property
    def new_version(self) -> str | None:
        return self.installed or (self.api_mismatch[0] if self.api_mismatch else None)


async def _library_version(probe: Probe) -> tuple[str | None, str | None]:
    for folder in LIB_DIRS:
        path = f"{folder}/libnvidia-ml.so.1"
        target = await probe.readlink(path)
        if target and (match := re.search(_LIB, target)):
            return match.group(1), f"link:{path}"
    return None, None


async def collect_pending_reboot(probe: Probe) -> PendingReboot:
    proc_version = await probe.text(PROC_VERSION)
    installed, lib_ref = await _library_version(probe)
    dmesg = await read_kernel_log(probe)
    mismatch = re.search(_API_MISMATCH, dmesg.stdout) if dmesg.ok else None
    pkgs = await probe.text(REBOOT_PKGS)
    refs = [file_ref(PROC_VERSION), file_ref(REBOOT_PKGS)]
    if lib_ref:
        refs.append(lib_ref)
    if mismatch:
        refs.append(command_ref(("dmesg",)))
    return PendingReboot(
        loaded=kernel_version(proc_version)[0],
        installed=installed,
        api_mismatch=(mismatch.group(1), mismatch.group(2)) if mismatch else None,
        reboot_packages=tuple(line.strip() for line in pkgs.splitlines() if line.strip()) if pkgs is not None else None,
        refs=tuple(refs),
    )
