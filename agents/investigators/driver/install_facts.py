"""driver install facts: the kernel module's and the user-space libraries' versions (host and server containers),
the installed kernels' module trees, DKMS builds, Secure Boot and lockdown, and the kernel log."""

from __future__ import annotations

import posixpath
import re

from rigaudit.agents.facts.deliberate import compat_library
from rigaudit.agents.facts.driver_origin import DriverOrigin, read_origin
from rigaudit.agents.facts.gpus import Gpu, GpuInventory, collect_gpus
from rigaudit.agents.facts.kernel_log import read_kernel_log
from rigaudit.agents.facts.nvidia_driver import MODULES, PROC_VERSION, kernel_version, loaded_modules, version_key
from rigaudit.agents.facts.pending_reboot import PendingReboot, collect_pending_reboot
from rigaudit.agents.facts.platform import Platform, detect_platform
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.facts.processes import ServerProcess, find_servers
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import CommandResult
from rigaudit.tools.hosts.probe import Probe, file_ref
from rigaudit.tools.schema.finding import Where

LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/aarch64-linux-gnu", "/usr/lib")
LIB_LINKS = ("libnvidia-ml.so.1", "libcuda.so.1")
_LIB_VERSION = r"lib(?:nvidia-ml|cuda)\.so\.(\d+\.\d+(?:\.\d+)?)$"
_MAPS_LIB = r"(?m)\s(/\S*/lib(?:cuda|nvidia-ml)\.so\.(\d+\.\d+(?:\.\d+)?))\s*$"
MODULES_ROOT = "/lib/modules"
DKMS_TREE = "/var/lib/dkms/nvidia"
_KERNEL_LIMIT = 8
_BUILD_LOG_TAIL = 64 * 1024
_NVIDIA_KO = r"(?m)(?:^|/)nvidia\.ko(?:\.(?:xz|gz|zst))?:"
SECURE_BOOT = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
EFI = "/sys/firmware/efi"
LOCKDOWN = "/sys/kernel/security/lockdown"
MOK_NEW = "/sys/firmware/efi/efivars/MokNew-605dab50-e046-4300-abb6-3dd810dd8b23"
"""shim's EFI variable of the keys queued by ``mokutil --import`` for MokManager to enroll at the next boot (a file
read: ``mokutil --list-new`` itself needs a person's approval under the policy)."""


class UserLibrary(Record):
    """The NVIDIA user-space library version a place resolves to."""

    where: str
    """``this host``, ``pid 5000 (sglang in lxc 101)``..."""
    version: str
    ref: str
    in_container: bool
    path: str = ""
    """The library file it resolves to (a mapped path for a server: ``/usr/local/cuda-12.8/compat/libcuda.so.570...``)."""


class KernelModules(Record):
    kernel: str
    modules_dep: str | None
    """Text of /lib/modules/KERNEL/modules.dep, or None when unreadable."""
    error: str | None
    has_image: bool

    @property
    def has_nvidia(self) -> bool | None:
        return None if self.modules_dep is None else bool(re.search(_NVIDIA_KO, self.modules_dep))


class BuildLog(Record):
    """DKMS's log of its last NVIDIA module build: for which kernel, and the compiler's first error."""

    path: str
    kernel: str | None
    error: str | None

    @classmethod
    def parse(cls, path: str, text: str) -> BuildLog:
        header = re.search(r"DKMS make\.log for \S+ for kernel (\S+)", text)
        error = re.search(r"(?m)^.*\berror: .*$", text[-_BUILD_LOG_TAIL:])
        return cls(path, header.group(1) if header else None, error.group(0).strip()[:300] if error else None)


class InstallFacts(Record):
    platform: Platform
    gpus: tuple[Gpu, ...]
    pending: PendingReboot
    proc_version: str | None
    nvml_init_error: str | None
    nvml_version: str | None
    libraries: tuple[UserLibrary, ...]
    lib_refs: tuple[str, ...]
    modules: frozenset[str] | None
    modules_error: str | None
    running: str | None
    kernels: tuple[KernelModules, ...]
    dkms_versions: tuple[str, ...]
    secure_boot: bytes | None
    secure_boot_error: str | None
    efi: bool
    lockdown: str | None
    dmesg: CommandResult
    origin: DriverOrigin = DriverOrigin("unknown", "not read")
    """Where the driver comes from (DKMS, Ubuntu's precompiled modules, the GPU Operator, a guest's via vfio-pci)."""
    build_log: BuildLog | None = None
    mok_new: bool = False
    """A Machine Owner Key is queued for enrolment at the next boot (read only where Secure Boot is on and the nvidia
    module is not loaded)."""
    """DKMS's make.log of its newest NVIDIA build, read only where a kernel lacks the module."""

    @property
    def kernel_module(self) -> str | None:
        return kernel_version(self.proc_version)[0]


async def _libraries(probe: Probe, servers: tuple[ServerProcess, ...]) -> tuple[list[UserLibrary], list[str]]:
    found: list[UserLibrary] = []
    refs: list[str] = []
    roots = [("", "", False)] + [(s.root, f"{s.label}: ", True) for s in servers if s.foreign_mnt_ns]
    for root, owner, inside in roots:
        for folder in LIB_DIRS:
            for name in LIB_LINKS:
                path = f"{root}{folder}/{name}"
                target = await probe.readlink(path)
                if target and (match := re.search(_LIB_VERSION, target)):
                    file = posixpath.join(folder, target) if not target.startswith("/") else target
                    found.append(UserLibrary(f"{owner}{folder}/{name}", match.group(1), f"link:{path}", inside, file))
                    refs.append(f"link:{path}")
                    break
            else:
                continue
            break
    for server in servers:
        maps = await probe.text(f"/proc/{server.pid}/maps")
        matches = list(re.finditer(_MAPS_LIB, maps or ""))
        compat = [m for m in matches if compat_library(m.group(1))]
        for match in compat or matches:
            inside = bool(server.container) or bool(server.foreign_mnt_ns)
            ref = file_ref(f"/proc/{server.pid}/maps")
            found.append(UserLibrary(f"{server.label} (loaded)", match.group(2), ref, inside, match.group(1)))
            refs.append(file_ref(f"/proc/{server.pid}/maps"))
            break
    return found, refs


async def _kernels(probe: Probe, running: str | None) -> tuple[KernelModules, ...]:
    listing = await probe.list_dir(MODULES_ROOT)
    names = [n for n in listing.entries or () if re.match(r"\d+\.\d+", n)]
    names = sorted(set(names) | ({running} if running else set()), key=version_key, reverse=True)[:_KERNEL_LIMIT]
    deps = await probe.gather(*[lambda k=k: probe.read(f"{MODULES_ROOT}/{k}/modules.dep") for k in names])
    images = await probe.gather(*[lambda k=k: probe.exists(f"/boot/vmlinuz-{k}") for k in names])
    return tuple(KernelModules(k, d.text(), d.error, img or k == running) for k, d, img in zip(names, deps, images, strict=True))


async def collect_install(probe: Probe) -> InstallFacts:
    paths = (PROC_VERSION, MODULES, "/proc/sys/kernel/osrelease", LOCKDOWN)
    proc_version, modules, osrelease, lockdown = await probe.gather(*[lambda p=p: probe.read(p) for p in paths])
    secure_boot = await probe.read(SECURE_BOOT)
    efi = await probe.exists(EFI)
    inventory: GpuInventory = await collect_gpus(probe)
    init = await probe.nvml("nvmlInit")
    platform = await detect_platform(probe)
    scan = await find_servers(probe)
    libraries, lib_refs = await _libraries(probe, scan.servers[:8])
    running = (osrelease.text() or "").strip() or None
    if running is None:
        uname = await probe.run(["uname", "-r"])
        running = (uname.stdout.strip() or None) if uname.ok else None
    kernels = await _kernels(probe, running)
    dkms = await probe.list_dir(DKMS_TREE)
    dkms_versions = tuple(sorted((e for e in dkms.entries or () if re.match(r"\d", e)), key=version_key))
    dmesg = await read_kernel_log(probe)
    dep = next((k.modules_dep for k in kernels if k.kernel == running), None)
    return InstallFacts(
        pending=await collect_pending_reboot(probe),
        platform=platform,
        gpus=inventory.gpus,
        proc_version=proc_version.text(),
        nvml_init_error=init.error,
        nvml_version=inventory.driver_version,
        libraries=tuple(libraries),
        lib_refs=tuple(dict.fromkeys(lib_refs)),
        modules=loaded_modules(modules.text()),
        modules_error=modules.error,
        running=running,
        kernels=kernels,
        dkms_versions=dkms_versions,
        secure_boot=secure_boot.data,
        secure_boot_error=secure_boot.error,
        efi=efi,
        lockdown=(lockdown.text() or "").strip() or None,
        dmesg=dmesg,
        origin=await read_origin(probe, inventory.gpus, dep, dkms_versions),
        build_log=await _build_log(probe, kernels, dkms_versions),
        mok_new=await _mok_new(probe, secure_boot.data, loaded_modules(modules.text())),
    )


def secure_boot_state(data: bytes | None) -> bool | None:
    """The SecureBoot EFI variable: 4 bytes of attributes, then 1 (on) or 0 (off)."""
    if data is None or len(data) < 5:
        return None
    return data[4] == 1


async def _mok_new(probe: Probe, secure_boot: bytes | None, modules: frozenset[str] | None) -> bool:
    if secure_boot_state(secure_boot) is not True or modules is None or "nvidia" in modules:
        return False
    return await probe.exists(MOK_NEW)


async def _build_log(probe: Probe, kernels: tuple[KernelModules, ...], versions: tuple[str, ...]) -> BuildLog | None:
    """DKMS's make.log of the newest NVIDIA version, where an installed kernel has no NVIDIA module."""
    if not versions or not any(k.has_image and k.has_nvidia is False for k in kernels):
        return None
    path = f"{DKMS_TREE}/{versions[-1]}/build/make.log"
    text = await probe.text(path)
    return None if text is None else BuildLog.parse(path, text)


def host_where(platform: Platform) -> Where:
    """Kernel and module fixes from inside a container belong to the container's host."""
    return layer_where(platform, "kernel")
