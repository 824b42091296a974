"""Driver: the NVIDIA kernel driver, its modules and its services.

The facts live in :mod:`rigaudit.agents.investigators._driver_facts`; the rules in ``_driver_version`` (driver.version),
``_driver_modules`` (peermem, nouveau, uvm), ``_driver_services`` (persistence, fabricmanager), ``_driver_install``
(library_mismatch, dkms, secure_boot) and ``_driver_fabric`` (fabricmanager_version).
"""

from __future__ import annotations

import re

from rigaudit.agents.facts.nvidia_driver import kernel_version
from rigaudit.agents.investigator import CheckDoc, Investigator
from rigaudit.agents.investigators._driver_fabric import judge_fabricmanager_version
from rigaudit.agents.investigators._driver_facts import DriverFacts, collect
from rigaudit.agents.investigators._driver_install import judge_dkms, judge_library_mismatch, judge_secure_boot
from rigaudit.agents.investigators._driver_modules import judge_nouveau, judge_peermem, judge_uvm
from rigaudit.agents.investigators._driver_services import judge_fabricmanager, judge_persistence
from rigaudit.agents.investigators._driver_version import judge_version
from rigaudit.tools.model.finding import Finding

CHECKS = (
    "driver.version",
    "driver.persistence",
    "driver.peermem",
    "driver.nouveau",
    "driver.uvm",
    "driver.fabricmanager",
    "driver.library_mismatch",
    "driver.dkms",
    "driver.secure_boot",
    "driver.fabricmanager_version",
)
__all__ = ["CHECKS", "INVESTIGATOR", "kernel_version"]


def judge(facts: DriverFacts) -> list[Finding]:
    return [
        judge_version(facts),
        judge_persistence(facts),
        judge_peermem(facts),
        judge_nouveau(facts),
        judge_uvm(facts),
        judge_fabricmanager(facts),
        judge_library_mismatch(facts.install),
        judge_dkms(facts.install),
        judge_secure_boot(facts.install),
        judge_fabricmanager_version(facts.platform, _switches(facts), facts.nvml_version or _kernel(facts), facts.fabric_version),
    ]


def _kernel(facts: DriverFacts) -> str | None:
    return kernel_version(facts.proc_version)[0] or facts.module_version


def _switches(facts: DriverFacts) -> str | None:
    """How the NVSwitches were seen, or None on a host without them."""
    if facts.fabricmanager is None:
        return None
    switches_dev = [e for e in facts.dev or () if re.fullmatch(r"nvidia-nvswitch\d+", e)]
    switches = list(facts.nvswitch_pci) or switches_dev
    return f"{len(switches)} NVSwitches" if switches else "an NVSwitch fabric (NVML)"


DOCS = {
    "driver.version": CheckDoc(
        "NVIDIA driver version and flavor",
        "`/proc/driver/nvidia/version`, `/sys/module/nvidia/version`, NVML driver version and GPU architecture",
        "branch too old for the GPU; proprietary flavor on Blackwell (needs the open kernel module); open flavor on pre-Turing",
        "install a supported driver",
        ("reboot",),
    ),
    "driver.persistence": CheckDoc(
        "GPU persistence mode",
        "NVML persistence mode, `systemctl is-active nvidia-persistenced`",
        "disabled (every CUDA start pays driver init; settings are lost in between)",
        "`systemctl enable --now nvidia-persistenced`",
        ("runtime",),
    ),
    "driver.peermem": CheckDoc(
        "nvidia_peermem (GPUDirect RDMA)",
        "`/proc/modules`, `modules.dep`, `/sys/class/infiniband`",
        "an RDMA NIC is present and `nvidia_peermem` is not loaded; without an RDMA NIC: not applicable",
        "`modprobe nvidia_peermem` + `/etc/modules-load.d`",
        ("runtime",),
    ),
    "driver.nouveau": CheckDoc(
        "nouveau driver", "`/proc/modules`", "nouveau loaded", "blacklist nouveau, rebuild the initramfs", ("reboot",)
    ),
    "driver.uvm": CheckDoc(
        "nvidia_uvm module and /dev/nvidia-uvm",
        "`/proc/modules`, `/dev`, `/proc/devices`",
        "nvidia_uvm not loaded or `/dev/nvidia-uvm` missing (CUDA init fails; containers bind-mount it at start)",
        "`modprobe nvidia_uvm`; `nvidia-modprobe -c0 -u`",
        ("runtime",),
    ),
    "driver.fabricmanager": CheckDoc(
        "NVIDIA Fabric Manager (NVSwitch)",
        "NVIDIA PCI bridges (class 0x0680), `/dev/nvidia-nvswitch*`, NVML fabric info, "
        "`systemctl is-active nvidia-fabricmanager`",
        "NVSwitch system with the fabric manager not active",
        "start and enable nvidia-fabricmanager",
        ("runtime",),
    ),
    "driver.library_mismatch": CheckDoc(
        "Driver user-space libraries vs the loaded kernel module",
        "`/proc/driver/nvidia/version`, NVML init error and driver version, `libnvidia-ml.so.1`/`libcuda.so.1` links on the "
        "host and in server containers (`/proc/PID/root`), libcuda mapped by the server (`/proc/PID/maps`)",
        "any user-space library version differs from the kernel module's, or NVML reports LIB_RM_VERSION_MISMATCH",
        "reboot after a driver upgrade (host), or install the matching libraries in the container",
        ("reboot", "restart"),
    ),
    "driver.dkms": CheckDoc(
        "NVIDIA module built for the running and newer kernels",
        "`/proc/sys/kernel/osrelease`, `/lib/modules/*/modules.dep`, `/boot/vmlinuz-*`, `/var/lib/dkms/nvidia`, `/proc/modules`",
        "no nvidia.ko for the running kernel (high when not loaded), or a newer installed kernel (the next boot) without it",
        "`dkms autoinstall -k KERNEL` with its headers installed",
        ("runtime",),
    ),
    "driver.secure_boot": CheckDoc(
        "Secure Boot and the NVIDIA module's signature",
        "EFI variable `SecureBoot-8be4df61-…`, `/sys/kernel/security/lockdown`, `/proc/modules`, kernel log (unsigned "
        "module rejected, Lockdown)",
        "an NVIDIA module is not loaded while Secure Boot/lockdown is on or the kernel log shows it rejected",
        "sign the module with an enrolled MOK (`mokutil --import`) or turn Secure Boot off",
        ("reboot",),
    ),
    "driver.fabricmanager_version": CheckDoc(
        "Fabric Manager version vs the driver",
        "`dpkg-query -W nvidia-fabricmanager*`, `/var/log/fabricmanager.log`, driver version (NVSwitch systems only)",
        "the fabric manager's version differs from the driver's (it refuses to start; no NVLink fabric)",
        "install the fabric manager of exactly the driver's version, restart it with the GPUs idle",
        ("restart",),
    ),
}


INVESTIGATOR = Investigator(
    area="driver",
    title="NVIDIA driver, modules and services",
    checks=CHECKS,
    collect=collect,
    judge=judge,
    docs=DOCS,
)
