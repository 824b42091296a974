"""driver.library_mismatch: user-space driver libraries (NVML, host and server containers) vs the loaded kernel module."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.nvidia_driver import PROC_VERSION
from rigaudit.agents.findings import not_applicable, ok, problem, unknown
from rigaudit.agents.investigators.driver.install_facts import AREA, InstallFacts
from rigaudit.tools.hosts.probe import file_ref
from rigaudit.tools.model.finding import CommandAction, Finding, Fix, FixKind, Where

LIBRARY_MISMATCH_CHECK = Check(
    "driver.library_mismatch",
    "Driver user-space libraries vs the loaded kernel module",
    reads=(
        "`/proc/driver/nvidia/version`, NVML init error and driver version, `libnvidia-ml.so.1`/`libcuda.so.1` links on "
        "the host and in server containers (`/proc/PID/root`), libcuda mapped by the server (`/proc/PID/maps`)"
    ),
    problem="any user-space library version differs from the kernel module's, or NVML reports LIB_RM_VERSION_MISMATCH",
    fix="reboot after a driver upgrade (host), or install the matching libraries in the container",
    kinds=("reboot", "restart"),
)


def judge_library_mismatch(f: InstallFacts) -> Finding:
    check, title = LIBRARY_MISMATCH_CHECK.id, LIBRARY_MISMATCH_CHECK.title
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
    pending = f.pending
    upgrade = not container_side and (pending.driver_upgraded or bool(pending.nvidia_packages))
    fix = Fix(
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
    observed = f"kernel module {kernel}; " + "; ".join(f"{w} {v}" for w, v, _ in wrong)
    if rm_mismatch:
        observed += "; nvmlInit: LIB_RM_VERSION_MISMATCH"
    if not container_side and pending.api_mismatch:
        observed += f"; kernel log: NVRM API mismatch (client {pending.api_mismatch[0]}, module {pending.api_mismatch[1]})"
    if not container_side and pending.nvidia_packages:
        observed += f"; /var/run/reboot-required.pkgs lists {', '.join(pending.nvidia_packages)}"
    refs = [*refs, *pending.refs]
    return problem(
        check,
        AREA,
        title,
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
        fix,
        subjects=tuple(w for w, _, _ in wrong) or tuple(g.label for g in f.gpus),
        evidence=refs,
    )
