"""driver.library_mismatch: user-space driver libraries (NVML, host and server containers) vs the loaded kernel module."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.deliberate import (
    BRANCH_CUDA,
    FORWARD_COMPAT,
    CompatLibrary,
    branch,
    compat_library,
    forward_compat_support,
)
from rigaudit.agents.facts.nvidia_driver import PROC_VERSION
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.investigators.driver import premises
from rigaudit.agents.investigators.driver.install_facts import InstallFacts, UserLibrary
from rigaudit.agents.investigators.forward_compat import after_drop, drop_compat_fix
from rigaudit.tools.hosts.probe import file_ref
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix, FixKind, Where

LIBRARY_MISMATCH_CHECK = Check(
    "driver.library_mismatch",
    "Driver user-space libraries vs the loaded kernel module",
    reads=(
        "`/proc/driver/nvidia/version`, NVML init error and driver version, `libnvidia-ml.so.1`/`libcuda.so.1` links on "
        "the host and in server containers (`/proc/PID/root`), libcuda mapped by the server (`/proc/PID/maps`)"
    ),
    problem="any user-space library version differs from the kernel module's, or NVML reports LIB_RM_VERSION_MISMATCH; "
    "a newer cuda-compat libcuda is CUDA forward compatibility: ok on data-center GPUs, high on GeForce",
    fix="reboot after a driver upgrade (host), or install the matching libraries in the container; on GeForce, drop "
    "the forward-compatibility path (LD_LIBRARY_PATH / ld.so.conf.d)",
    kinds=("reboot", "restart"),
    premises=(premises.PLATFORM_FIX, premises.GPUS, premises.DRIVER),
)


def judge_library_mismatch(f: InstallFacts) -> Finding:
    kernel = f.kernel_module
    refs = [file_ref(PROC_VERSION), "nvml:nvmlInit()", *f.lib_refs]
    if f.nvml_version:
        refs.append("nvml:nvmlSystemGetDriverVersion()")
    if kernel is None:
        if not f.gpus:
            return LIBRARY_MISMATCH_CHECK.not_applicable("no NVIDIA driver and no NVIDIA GPU on this host", evidence=refs[:1])
        why = f"the kernel module's version is unknown ({PROC_VERSION} not readable)"
        return LIBRARY_MISMATCH_CHECK.unknown(why, evidence=refs[:2])
    seen = [(lib.where, lib.version, lib.in_container) for lib in f.libraries]
    if f.nvml_version:
        seen.insert(0, ("user-space (NVML)", f.nvml_version, False))
    compat = [
        (lib, found)
        for lib in f.libraries
        if lib.version != kernel and (found := compat_library(lib.path)) is not None and (branch(kernel) or 0) < found.branch
    ]
    compat_where = {lib.where for lib, _ in compat}
    wrong = [(where, version, inside) for where, version, inside in seen if version != kernel and where not in compat_where]
    rm_mismatch = f.nvml_init_error == "LIB_RM_VERSION_MISMATCH"
    if compat and not wrong and not rm_mismatch:
        return _forward_compat(f, kernel, compat, refs)
    if not wrong and not rm_mismatch:
        return _matching(f, kernel, seen, refs)
    return _mismatch(f, kernel, wrong, rm_mismatch, refs)


Seen = list[tuple[str, str, bool]]
"""(where, version, in a container) of each user-space library read."""


def _matching(f: InstallFacts, kernel: str, seen: Seen, refs: list[str]) -> Finding:
    """Every library read is the kernel module's version (or none was read)."""
    if not seen:
        why = f"kernel module {kernel}; no user-space library version readable (NVML: {f.nvml_init_error or 'no answer'})"
        return LIBRARY_MISMATCH_CHECK.unknown(why, evidence=refs)
    shown = "; ".join(f"{where} {version}" for where, version, _ in seen)
    return LIBRARY_MISMATCH_CHECK.ok(
        f"kernel module {kernel}; {shown}",
        expected="user-space libraries of the kernel module's version",
        explanation=(
            "This container's driver libraries are the host's, mounted in one by one at its start (the NVIDIA container "
            "toolkit or a CDI spec): they follow the host's driver and change with it at the container's next start. "
            if f.platform.in_container and f.platform.lib_mounts
            else "A container with its own copy of the user-space libraries (libcuda, libnvidia-ml) needs them "
            "re-installed whenever the host's driver changes. "
        )
        + "Containers without a visible server process are not checked here.",
        evidence=refs,
    )


def _mismatch_fix(f: InstallFacts, kernel: str, container_side: bool, upgrade: bool) -> Fix:
    """The container's libraries installed for the host's module, or the host rebooted into its installed driver."""
    kind: FixKind = "restart" if container_side else "reboot"
    where: Where = "container" if container_side else layer_where(f.platform, "gpu_driver")
    pending = f.pending
    return Fix(
        kind=kind,
        where=where,
        summary=(
            f"Install the user-space driver libraries of version {kernel} in the container (the host's kernel module)"
            if container_side
            else (
                f"A driver upgrade to {pending.new_version or 'a new version'} waits for a reboot: reboot (or reload the "
                "modules with every GPU user stopped)"
                if upgrade
                else "Reboot so the kernel module matches the installed user-space libraries (or reinstall the matching driver)"
            )
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
        provides=() if container_side else ("driver.reloaded",),
    )


def _mismatch(f: InstallFacts, kernel: str, wrong: Seen, rm_mismatch: bool, refs: list[str]) -> Finding:
    """Libraries of another version than the kernel module's, or NVML's LIB_RM_VERSION_MISMATCH."""
    mounted = {lib.where for lib in f.libraries if not lib.in_container and lib.path in f.platform.lib_mounts}
    host_libraries = bool(mounted) and all(where in mounted or where == "user-space (NVML)" for where, _, _ in wrong)
    """The audit runs in a container whose libraries the container toolkit binds from the host: the host's driver
    packages are out of step with its module, and the fix is the host's."""
    container_side = not host_libraries and (f.platform.in_container or (bool(wrong) and all(inside for _, _, inside in wrong)))
    pending = f.pending
    upgrade = not container_side and (pending.driver_upgraded or bool(pending.nvidia_packages))
    observed = f"kernel module {kernel}; " + "; ".join(f"{w} {v}" for w, v, _ in wrong)
    if rm_mismatch:
        observed += "; nvmlInit: LIB_RM_VERSION_MISMATCH"
    if host_libraries:
        observed += "; the container's libraries are the host's, bound in by the NVIDIA container toolkit (/proc/mounts)"
    if not container_side and pending.api_mismatch:
        observed += f"; kernel log: NVRM API mismatch (client {pending.api_mismatch[0]}, module {pending.api_mismatch[1]})"
    if not container_side and pending.nvidia_packages:
        observed += f"; /var/run/reboot-required.pkgs lists {', '.join(pending.nvidia_packages)}"
    return LIBRARY_MISMATCH_CHECK.problem_at(
        "high",
        observed,
        f"user-space libraries {kernel}, like the kernel module",
        "The loaded kernel module and the user-space driver libraries (libcuda, libnvidia-ml) differ: NVML and CUDA "
        "refuse to initialize ('Driver/library version mismatch', 'CUDA driver version is insufficient'), so the "
        "server cannot start on these GPUs. "
        + (
            "Here it is a driver upgrade that has not been booted into: the packages are installed and built, nothing "
            "is broken; the new module loads at the next reboot. Every GPU fact NVML would give is unknown until then."
            if upgrade
            else "It follows a driver upgrade without a reboot, or a container whose libraries were installed for "
            "another host driver."
        ),
        _mismatch_fix(f, kernel, container_side, upgrade),
        subjects=tuple(w for w, _, _ in wrong) or tuple(g.label for g in f.gpus),
        evidence=[*refs, *pending.refs],
    )


def _forward_compat(f: InstallFacts, kernel: str, compat: list[tuple[UserLibrary, CompatLibrary]], refs: list[str]) -> Finding:
    """A server runs on the cuda-compat libcuda of a newer branch: deliberate where NVIDIA supports it."""
    names = tuple(dict.fromkeys(g.name for g in f.gpus if g.name))
    support = forward_compat_support(names)
    lib, found = compat[0]
    cuda = f"CUDA {found.cuda[0]}.{found.cuda[1]}" if found.cuda else f"the {found.branch} branch's CUDA"
    observed = (
        f"kernel module {kernel}; {lib.where} maps {lib.path} (CUDA forward compatibility: {cuda} on the {branch(kernel)} "
        f"driver); GPUs: {', '.join(names) or 'none named'}"
    )
    conditions = " ".join(f"({k + 1}) {c};" for k, c in enumerate(FORWARD_COMPAT.conditions))
    if support == "yes":
        return LIBRARY_MISMATCH_CHECK.ok(
            observed,
            expected="user-space libraries of the kernel module's version, or forward compatibility where supported",
            explanation=f"Deliberate: {FORWARD_COMPAT.what}. NVIDIA supports it on these data-center GPUs "
            f"({FORWARD_COMPAT.source}): {conditions} the server's own CUDA initialization tells whether the branch is "
            "one the package supports. The host's libraries stay the kernel module's; nothing is to be installed.",
            evidence=refs,
        )
    if support == "unknown":
        return LIBRARY_MISMATCH_CHECK.unknown(
            observed + ": forward compatibility is supported on workstation RTX boards only for select NGC Server Ready "
            "SKUs, which the GPU's name does not tell; the server's CUDA init (error 804 or not) would",
            evidence=refs,
        )
    where: Where = "container" if lib.in_container or f.platform.in_container else "host"
    fix = drop_compat_fix(lib.path, kernel, where, found.cuda, BRANCH_CUDA.get(branch(kernel) or 0))
    return LIBRARY_MISMATCH_CHECK.problem_at(
        "high",
        observed,
        f"the host driver's libcuda {kernel} (forward compatibility is not supported on GeForce)",
        f"The server loads the CUDA forward-compatibility libcuda ({found.branch} branch) over the {branch(kernel)} kernel "
        "module, on GeForce GPUs. NVIDIA supports forward compatibility only on data-center GPUs (and select NGC "
        f"Server Ready RTX SKUs, Jetson): here CUDA initialization fails with CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE "
        f"(804) ({FORWARD_COMPAT.source}). The fix is to stop using the compat libraries, not to install others. "
        + after_drop(found.cuda, BRANCH_CUDA.get(branch(kernel) or 0), kernel),
        fix,
        subjects=(lib.where,),
        evidence=refs,
    )
