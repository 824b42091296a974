"""driver.library_mismatch, driver.dkms, driver.secure_boot: is the installed driver the one that runs, and can it load?"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agents.facts.gpus import Gpu, GpuInventory, collect_gpus
from agents.facts.kernel_log import DMESG_REF, log_unavailable, read_kernel_log
from agents.facts.nvidia_driver import MODULES, PROC_VERSION, kernel_version, loaded_modules, version_key
from agents.facts.platform import Platform, detect_platform
from agents.facts.processes import ServerProcess, find_servers
from agents.findings import not_applicable, ok, problem, unknown
from tools.hosts.base import CommandResult
from tools.model.finding import Area, CommandAction, Finding, Fix, FixKind, Severity, Where
from tools.probe import Probe, dir_ref, file_ref

AREA: Area = "driver"
LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/aarch64-linux-gnu", "/usr/lib")
LIB_LINKS = ("libnvidia-ml.so.1", "libcuda.so.1")
_LIB_VERSION = re.compile(r"lib(?:nvidia-ml|cuda)\.so\.(\d+\.\d+(?:\.\d+)?)$")
_MAPS_LIB = re.compile(r"\s(/\S*/lib(?:cuda|nvidia-ml)\.so\.(\d+\.\d+(?:\.\d+)?))\s*$", re.MULTILINE)
MODULES_ROOT = "/lib/modules"
DKMS_TREE = "/var/lib/dkms/nvidia"
_KERNEL_LIMIT = 8
_NVIDIA_KO = re.compile(r"(?:^|/)nvidia\.ko(?:\.(?:xz|gz|zst))?:", re.MULTILINE)
SECURE_BOOT = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
EFI = "/sys/firmware/efi"
LOCKDOWN = "/sys/kernel/security/lockdown"
_REJECTED = re.compile(
    r"(Lockdown: .*unsigned module|Loading of unsigned module is rejected|Key was rejected by service|"
    r"module verification failed.*(?:rejected|denied)|nvidia\S*: .*Key was rejected)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class UserLibrary:
    """The NVIDIA user-space library version a place resolves to."""

    where: str
    """``this host``, ``pid 5000 (sglang in lxc 101)``..."""
    version: str
    ref: str
    in_container: bool


@dataclass(frozen=True)
class KernelModules:
    kernel: str
    modules_dep: str | None
    """Text of /lib/modules/KERNEL/modules.dep, or None when unreadable."""
    error: str | None
    has_image: bool

    @property
    def has_nvidia(self) -> bool | None:
        return None if self.modules_dep is None else bool(_NVIDIA_KO.search(self.modules_dep))


@dataclass(frozen=True)
class InstallFacts:
    platform: Platform
    gpus: tuple[Gpu, ...]
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
                if target and (match := _LIB_VERSION.search(target)):
                    found.append(UserLibrary(f"{owner}{folder}/{name}", match.group(1), f"link:{path}", inside))
                    refs.append(f"link:{path}")
                    break
            else:
                continue
            break
    for server in servers:
        maps = await probe.text(f"/proc/{server.pid}/maps")
        for match in _MAPS_LIB.finditer(maps or ""):
            inside = bool(server.container) or bool(server.foreign_mnt_ns)
            ref = file_ref(f"/proc/{server.pid}/maps")
            found.append(UserLibrary(f"{server.label} (loaded)", match.group(2), ref, inside))
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
    dmesg = await read_kernel_log(probe)
    return InstallFacts(
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
        dkms_versions=tuple(e for e in dkms.entries or () if re.match(r"\d", e)),
        secure_boot=secure_boot.data,
        secure_boot_error=secure_boot.error,
        efi=efi,
        lockdown=(lockdown.text() or "").strip() or None,
        dmesg=dmesg,
    )


def _host_where(platform: Platform) -> Where:
    return "hypervisor" if platform.in_container else "host"


# -- driver.library_mismatch ------------------------------------------------------------------


def judge_library_mismatch(f: InstallFacts) -> Finding:
    check, title = "driver.library_mismatch", "Driver user-space libraries vs the loaded kernel module"
    kernel = f.kernel_module
    refs = [file_ref(PROC_VERSION), "nvml:nvmlInit()", *f.lib_refs]
    if f.nvml_version:
        refs.append("nvml:nvmlSystemGetDriverVersion()")
    if kernel is None:
        if not f.gpus:
            return not_applicable(check, AREA, title, "no NVIDIA driver and no NVIDIA GPU on this host", evidence=refs[:1])
        why = f"the kernel module's version is unknown ({PROC_VERSION} not readable)"
        return unknown(check, AREA, title, why, evidence=refs[:2])
    seen = [(lib.where, lib.version, lib.in_container) for lib in f.libraries]
    if f.nvml_version:
        seen.insert(0, ("user-space (NVML)", f.nvml_version, False))
    wrong = [(where, version, inside) for where, version, inside in seen if version != kernel]
    rm_mismatch = f.nvml_init_error == "LIB_RM_VERSION_MISMATCH"
    if not wrong and not rm_mismatch:
        if not seen:
            why = f"kernel module {kernel}; no user-space library version readable (NVML: {f.nvml_init_error or 'no answer'})"
            return unknown(check, AREA, title, why, evidence=refs)
        shown = "; ".join(f"{where} {version}" for where, version, _ in seen)
        return ok(
            check,
            AREA,
            title,
            f"kernel module {kernel}; {shown}",
            expected="user-space libraries of the kernel module's version",
            explanation="A container has its own copy of the user-space libraries (libcuda, libnvidia-ml): they must "
            "be re-installed in it whenever the host's driver changes. Containers without a visible server process "
            "are not checked here.",
            evidence=refs,
        )
    container_side = f.platform.in_container or (bool(wrong) and all(inside for _, _, inside in wrong))
    kind: FixKind = "restart" if container_side else "reboot"
    where: Where = "container" if container_side else "host"
    fix = Fix(
        kind=kind,
        where=where,
        summary=(
            f"Install the user-space driver libraries of version {kernel} in the container (the host's kernel module)"
            if container_side
            else "Reboot so the kernel module matches the installed user-space libraries (or reinstall the matching driver)"
        ),
        actions=(
            CommandAction(
                description=f"in the container: NVIDIA-Linux-x86_64-{kernel}.run --no-kernel-module (or the matching "
                "libnvidia-compute / nvidia-utils packages, or the NVIDIA container toolkit's mounts), then restart "
                "the server",
            )
            if container_side
            else CommandAction(
                description="the driver package was upgraded but the old module is still loaded: stop every GPU user "
                "and reload the modules, or reboot",
                argv=("systemctl", "reboot"),
            ),
        ),
        risk="medium",
        verify="nvidia-smi runs without 'Driver/library version mismatch'; NVML and /proc/driver/nvidia/version agree",
        revert="reinstall the previous driver version",
    )
    observed = f"kernel module {kernel}; " + "; ".join(f"{w} {v}" for w, v, _ in wrong)
    if rm_mismatch:
        observed += "; nvmlInit: LIB_RM_VERSION_MISMATCH"
    return problem(
        check,
        AREA,
        title,
        "high",
        observed,
        f"user-space libraries {kernel}, like the kernel module",
        "The loaded kernel module and the user-space driver libraries (libcuda, libnvidia-ml) differ: NVML and CUDA "
        "refuse to initialize ('Driver/library version mismatch', 'CUDA driver version is insufficient'), so the "
        "server cannot start on these GPUs. It follows a driver upgrade without a reboot, or a container whose "
        "libraries were installed for another host driver.",
        fix,
        subjects=tuple(w for w, _, _ in wrong) or tuple(g.label for g in f.gpus),
        evidence=refs,
    )


# -- driver.dkms ------------------------------------------------------------------------------


def _build_fix(f: InstallFacts, kernels: list[str], summary: str) -> Fix:
    actions = [
        CommandAction(
            description=f"install the kernel headers of {k} and build the NVIDIA module for it",
            argv=("dkms", "autoinstall", "-k", k),
        )
        for k in kernels
    ]
    actions.append(
        CommandAction(description="check the result", argv=("dkms", "status", "nvidia")),
    )
    return Fix(
        kind="runtime",
        where=_host_where(f.platform),
        summary=summary,
        actions=tuple(actions),
        risk="low",
        verify="dkms status nvidia lists 'installed' for "
        + ", ".join(kernels)
        + "; grep nvidia.ko /lib/modules/KERNEL/modules.dep",
        revert="dkms remove nvidia/VERSION -k KERNEL",
        persist="the built module stays installed; keep the headers package installed so DKMS rebuilds on kernel updates",
    )


def judge_dkms(f: InstallFacts) -> Finding:
    check, title = "driver.dkms", "NVIDIA module built for the running and newer kernels"
    if f.running is None:
        return unknown(check, AREA, title, "the running kernel is unknown (/proc/sys/kernel/osrelease unreadable)")
    running = next((k for k in f.kernels if k.kernel == f.running), None)
    refs = [dir_ref(MODULES_ROOT), *(file_ref(f"{MODULES_ROOT}/{k.kernel}/modules.dep") for k in f.kernels)]
    refs.append(file_ref(MODULES))
    loaded = None if f.modules is None else "nvidia" in f.modules
    if running is None or running.has_nvidia is None:
        error = running.error if running else "not listed"
        why = f"{MODULES_ROOT}/{f.running}/modules.dep: {error}"
        if f.platform.in_container:
            why += " (inside a container the kernel's module tree and its DKMS builds belong to the host: check there)"
        return unknown(check, AREA, title, why, evidence=refs[:2])
    if not f.gpus and not loaded and not running.has_nvidia:
        return not_applicable(check, AREA, title, "no NVIDIA GPU and no NVIDIA module on this host", evidence=refs)
    newer = [k for k in f.kernels if k.has_image and version_key(k.kernel) > version_key(f.running) and k.has_nvidia is False]
    dkms = f" (DKMS builds: nvidia {', '.join(f.dkms_versions)})" if f.dkms_versions else ""
    if running.has_nvidia and not newer:
        others = [k.kernel for k in f.kernels if k.kernel != f.running and k.has_nvidia]
        extra = f"; also built for {', '.join(others)}" if others else ""
        return ok(
            check,
            AREA,
            title,
            f"nvidia.ko in modules.dep of the running kernel {f.running}{extra}{dkms}",
            expected="the NVIDIA module built for the running kernel and every newer installed kernel",
            evidence=refs,
        )
    if not running.has_nvidia:
        severity: Severity = "low" if loaded else "high"
        observed = f"no nvidia.ko in {MODULES_ROOT}/{f.running}/modules.dep" + (
            " (the module is loaded: modules.dep is stale)" if loaded else "; the nvidia module is not loaded"
        )
        kernels = [f.running]
        explanation = "The running kernel has no NVIDIA module registered: " + (
            "the loaded one came from elsewhere (insmod, an unfinished install), and modprobe will not find it "
            "at the next boot. Run depmod -a after checking where it lives."
            if loaded
            else "the driver cannot load, every GPU is unusable for CUDA, and nvidia-smi fails with 'couldn't "
            "communicate with the NVIDIA driver'. This follows a kernel update whose DKMS build failed (missing "
            "headers, compiler mismatch) or a driver installed for another kernel."
        )
    else:
        severity = "medium"
        observed = "newer installed kernels without the NVIDIA module: " + ", ".join(k.kernel for k in newer)
        observed += f" (running {f.running} has it)"
        kernels = [k.kernel for k in newer]
        explanation = (
            "The bootloader normally starts the newest installed kernel: the next reboot (a power cut, an unattended "
            "upgrade) comes up without the NVIDIA module, and every GPU is gone until someone builds it. DKMS builds "
            "it at kernel installation only when the matching headers are installed and the build succeeds."
        )
    return problem(
        check,
        AREA,
        title,
        severity,
        observed + dkms,
        "the NVIDIA module built for the running kernel and every newer installed kernel",
        explanation,
        _build_fix(f, kernels, "Build the NVIDIA module for " + ", ".join(kernels)),
        subjects=tuple(kernels),
        evidence=refs,
    )


# -- driver.secure_boot -----------------------------------------------------------------------


def secure_boot_state(data: bytes | None) -> bool | None:
    """The SecureBoot EFI variable: 4 bytes of attributes, then 1 (on) or 0 (off)."""
    if data is None or len(data) < 5:
        return None
    return data[4] == 1


def judge_secure_boot(f: InstallFacts) -> Finding:
    check, title = "driver.secure_boot", "Secure Boot and the NVIDIA module's signature"
    refs = [file_ref(SECURE_BOOT), file_ref(MODULES), DMESG_REF]
    state = secure_boot_state(f.secure_boot)
    if state is None and f.secure_boot_error == "ENOENT" and not f.efi:
        sb_text = "legacy BIOS boot (no Secure Boot)"
        state = False
    elif state is None:
        sb_text = f"Secure Boot state unreadable ({f.secure_boot_error or 'short variable'})"
    else:
        sb_text = "Secure Boot on" if state else "Secure Boot off"
    if f.lockdown and "[none]" not in f.lockdown:
        sb_text += f", lockdown {f.lockdown}"
        refs.append(file_ref(LOCKDOWN))
    if f.modules is None:
        return unknown(check, AREA, title, f"{MODULES} not readable: {f.modules_error}", evidence=refs)
    log = f.dmesg.stdout if log_unavailable(f.dmesg) is None else ""
    rejected = [line.strip() for line in log.splitlines() if _REJECTED.search(line) and "nvidia" in line.lower()]
    rejected += [line.strip() for line in log.splitlines() if "Lockdown:" in line and "unsigned module" in line]
    missing = [m for m in ("nvidia", "nvidia_uvm") if m not in f.modules]
    if "nvidia" in f.modules and not (rejected and missing):
        signed = (
            " (so it is signed with a key the firmware trusts: rebuilt modules must be signed with the same MOK)" if state else ""
        )
        return ok(
            check,
            AREA,
            title,
            f"nvidia module loaded; {sb_text}{signed}",
            expected="the NVIDIA modules load",
            evidence=refs,
        )
    if not f.gpus and "nvidia" not in f.modules:
        return not_applicable(check, AREA, title, "no NVIDIA GPU on this host", evidence=refs)
    if not rejected and state is not True and not (f.lockdown and "[none]" not in f.lockdown):
        if state is False:
            return ok(
                check,
                AREA,
                title,
                f"nvidia module not loaded, but {sb_text}: not the cause (see driver.dkms)",
                expected="the NVIDIA modules load",
                evidence=refs,
            )
        return unknown(check, AREA, title, f"nvidia module not loaded; {sb_text}; no rejection in the kernel log", evidence=refs)
    observed = f"{', '.join(missing)} not loaded; {sb_text}"
    if rejected:
        observed += "; kernel log: " + rejected[-1][:200]
    fix = Fix(
        kind="reboot",
        where=_host_where(f.platform),
        summary="Sign the NVIDIA modules with a Machine Owner Key and enroll it (or turn Secure Boot off in the firmware)",
        actions=(
            CommandAction(
                description="enroll the DKMS signing key (Ubuntu/Debian: /var/lib/dkms/mok.pub; set a one-time password)",
                argv=("mokutil", "--import", "/var/lib/dkms/mok.pub"),
            ),
            CommandAction(description="rebuild and sign the module for the running kernel", argv=("dkms", "autoinstall")),
            CommandAction(description="reboot and confirm the key in MokManager at the console; or disable Secure Boot in setup"),
        ),
        risk="medium",
        verify="after the reboot: grep -w nvidia /proc/modules; mokutil --sb-state; nvidia-smi lists every GPU",
        revert="mokutil --delete /var/lib/dkms/mok.pub (or re-enable Secure Boot), then reboot",
        persist="the enrolled key persists in the firmware; DKMS signs future builds with it",
    )
    return problem(
        check,
        AREA,
        title,
        "high",
        observed,
        "the NVIDIA modules load",
        "With UEFI Secure Boot on, the kernel's lockdown refuses modules that are not signed by a trusted key: an "
        "NVIDIA module built by DKMS or the .run installer without signing never loads, so CUDA sees no GPU. The fix "
        "is to sign it with a Machine Owner Key enrolled in the firmware (needs a person at the console once), or to "
        "turn Secure Boot off where policy allows.",
        fix,
        subjects=tuple(g.label for g in f.gpus),
        evidence=refs,
    )
