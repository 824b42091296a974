"""driver.dkms: the NVIDIA module built for the running kernel and every newer installed kernel."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.driver_origin import (
    PASSTHROUGH_SOURCE,
    precompiled_meta,
    precompiled_package,
    versions_said,
)
from rigaudit.agents.facts.nvidia_driver import MODULES, version_key
from rigaudit.agents.investigators.driver import premises
from rigaudit.agents.investigators.driver.install_facts import (
    MODULES_ROOT,
    BuildLog,
    InstallFacts,
    KernelModules,
    host_where,
)
from rigaudit.tools.hosts.nvml_local import OPERATOR_ROOT
from rigaudit.tools.hosts.probe import dir_ref, file_ref
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix, Severity


def _package_fix(f: InstallFacts, kernels: list[str]) -> Fix:
    """Ubuntu's precompiled modules: each kernel's linux-modules-nvidia package (no DKMS build here)."""
    packages = [precompiled_package(f.origin, k) for k in kernels]
    meta = precompiled_meta(f.origin, kernels[0])
    return Fix(
        kind="runtime",
        where=host_where(f.platform),
        summary=f"Install Ubuntu's precompiled NVIDIA modules for {', '.join(kernels)} ({', '.join(packages)}); this host "
        "has no DKMS build, and its modules are Canonical-signed ones Secure Boot accepts",
        actions=(
            CommandAction(description="install the kernels' module packages", argv=("apt-get", "install", "-y", *packages)),
            CommandAction(description=f"so later kernels bring theirs: apt-get install {meta}"),
        ),
        risk="low",
        verify="grep nvidia.ko /lib/modules/KERNEL/modules.dep for " + ", ".join(kernels),
        revert="apt-get remove " + " ".join(packages),
        persist=f"the packages stay installed; {meta} keeps later kernels' modules coming",
    )


def _broken_build_fix(f: InstallFacts, log: BuildLog, kernels: list[str]) -> Fix:
    """DKMS's build fails to compile for the kernel: a rebuild fails again; a driver that supports it, or stay."""
    version = f.dkms_versions[-1] if f.dkms_versions else "this"
    return Fix(
        kind="runtime",
        where=host_where(f.platform),
        summary=f"The {version} driver does not compile for {log.kernel} (DKMS make.log: {log.error}): install a driver "
        f"release that supports {log.kernel}, or keep booting {f.running} until one does; rebuilding fails the same way",
        actions=(
            CommandAction(
                description=f"keep the next boot on {f.running}: set GRUB_DEFAULT to its menu entry and run update-grub "
                f"(or apt-mark hold the kernel meta package that brought {log.kernel})"
            ),
            CommandAction(
                description=f"install a driver release whose notes list kernel {log.kernel}, "
                f"then dkms autoinstall -k {log.kernel}"
            ),
        ),
        risk="low",
        verify=f"dkms status nvidia lists 'installed' for {log.kernel}; or grub-editenv list shows {f.running} as the default",
        revert="restore GRUB_DEFAULT (update-grub); reinstall the previous driver release",
        persist="the GRUB default and the held package persist until changed",
    )


def _build_fix(f: InstallFacts, kernels: list[str], summary: str) -> Fix:
    if f.origin.origin == "precompiled" and not f.dkms_versions:
        return _package_fix(f, kernels)
    log = f.build_log
    if log is not None and log.error is not None and log.kernel in kernels:
        return _broken_build_fix(f, log, kernels)
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
        where=host_where(f.platform),
        summary=summary,
        actions=tuple(actions),
        risk="low",
        verify="dkms status nvidia lists 'installed' for "
        + ", ".join(kernels)
        + "; grep nvidia.ko /lib/modules/KERNEL/modules.dep",
        revert="dkms remove nvidia/VERSION -k KERNEL",
        persist="the built module stays installed; keep the headers package installed so DKMS rebuilds on kernel updates",
    )


DKMS_CHECK = Check(
    "driver.dkms",
    "NVIDIA module built for the running and newer kernels",
    reads=(
        "`/proc/sys/kernel/osrelease`, `/lib/modules/*/modules.dep`, `/boot/vmlinuz-*`, `/var/lib/dkms/nvidia` (and its "
        "newest build's make.log), `/proc/modules`, the GPUs' bound driver, `/run/nvidia/driver`"
    ),
    problem=(
        "no nvidia.ko for the running kernel (high when not loaded), or a newer installed kernel (the next boot) without it"
    ),
    fix="`dkms autoinstall -k KERNEL` with its headers installed; Ubuntu's precompiled modules: the kernel's "
    "linux-modules-nvidia package; a build whose make.log shows a compile error: a driver that supports the kernel, "
    "or keep booting the running one; not applicable where the GPU Operator's container or a guest runs the driver",
    kinds=("runtime",),
    premises=(premises.KERNEL,),
)


def _tree_unread(f: InstallFacts, running: KernelModules | None, loaded: bool | None, refs: list[str]) -> Finding:
    """The running kernel's modules.dep is not readable: why that may be normal (a container, a direct kernel boot)."""
    error = running.error if running else "not listed"
    why = f"{MODULES_ROOT}/{f.running}/modules.dep: {error}"
    if f.platform.in_container:
        why += " (inside a container the kernel's module tree and its DKMS builds belong to the host: check there)"
    elif loaded and all(k.has_nvidia is None for k in f.kernels):
        why += (
            " (no kernel module tree in this image while the nvidia module is loaded: the kernel and its modules "
            "come from outside the image, as with a VM's direct kernel boot; they are built where that kernel is)"
        )
    return DKMS_CHECK.unknown(why, evidence=refs[:2])


Unbuilt = tuple[Severity, str, list[str], str]
"""(severity, observed, the kernels to build for, why) of a missing NVIDIA module build."""


def _running_unbuilt(running: str, loaded: bool | None) -> Unbuilt:
    """No nvidia.ko in the running kernel's modules.dep: the driver cannot load (or the loaded one came from elsewhere)."""
    observed = f"no nvidia.ko in {MODULES_ROOT}/{running}/modules.dep" + (
        " (the module is loaded: modules.dep is stale)" if loaded else "; the nvidia module is not loaded"
    )
    explanation = "The running kernel has no NVIDIA module registered: " + (
        "the loaded one came from elsewhere (insmod, an unfinished install), and modprobe will not find it "
        "at the next boot. Run depmod -a after checking where it lives."
        if loaded
        else "the driver cannot load, every GPU is unusable for CUDA, and nvidia-smi fails with 'couldn't "
        "communicate with the NVIDIA driver'. This follows a kernel update whose DKMS build failed (missing "
        "headers, compiler mismatch) or a driver installed for another kernel."
    )
    return ("low" if loaded else "high"), observed, [running], explanation


def _newer_unbuilt(running: str, newer: list[KernelModules]) -> Unbuilt:
    """Newer installed kernels without the module: the next boot comes up without the driver."""
    observed = "newer installed kernels without the NVIDIA module: " + ", ".join(k.kernel for k in newer)
    observed += f" (running {running} has it)"
    explanation = (
        "The bootloader normally starts the newest installed kernel: the next reboot (a power cut, an unattended "
        "upgrade) comes up without the NVIDIA module, and every GPU is gone until someone builds it. DKMS builds "
        "it at kernel installation only when the matching headers are installed and the build succeeds."
    )
    return "medium", observed, [k.kernel for k in newer], explanation


def _not_here(f: InstallFacts, refs: list[str]) -> Finding | None:
    """The modules are not this host's to build: the GPU Operator's container builds them, or a guest runs them."""
    if f.origin.origin == "operator":
        why = f"the NVIDIA modules come from {f.origin.said}, which builds them for the running kernel; a host build "
        why += f"or driver package would put a second driver under it (the Operator's driver root: {OPERATOR_ROOT})"
        return DKMS_CHECK.not_applicable(why, evidence=(*f.origin.evidence, *refs[:1]))
    if f.origin.origin == "vfio":
        why = f"{f.origin.said}: no NVIDIA module is needed on this host; the guest runs the driver ({PASSTHROUGH_SOURCE})"
        return DKMS_CHECK.not_applicable(why, evidence=f.origin.evidence)
    return None


def judge_dkms(f: InstallFacts) -> Finding:
    if f.running is None:
        return DKMS_CHECK.unknown("the running kernel is unknown (/proc/sys/kernel/osrelease unreadable)")
    running = next((k for k in f.kernels if k.kernel == f.running), None)
    refs = [dir_ref(MODULES_ROOT), *(file_ref(f"{MODULES_ROOT}/{k.kernel}/modules.dep") for k in f.kernels)]
    refs.append(file_ref(MODULES))
    loaded = None if f.modules is None else "nvidia" in f.modules
    if (elsewhere := _not_here(f, refs)) is not None:
        return elsewhere
    if running is None or running.has_nvidia is None:
        return _tree_unread(f, running, loaded, refs)
    if not f.gpus and not loaded and not running.has_nvidia:
        return DKMS_CHECK.not_applicable("no NVIDIA GPU and no NVIDIA module on this host", evidence=refs)
    newer = [k for k in f.kernels if k.has_image and version_key(k.kernel) > version_key(f.running) and k.has_nvidia is False]
    dkms = f" (DKMS builds: nvidia {versions_said(f.dkms_versions)})" if f.dkms_versions else ""
    if running.has_nvidia and not newer:
        others = [k.kernel for k in f.kernels if k.kernel != f.running and k.has_nvidia]
        extra = f"; also built for {', '.join(others)}" if others else ""
        return DKMS_CHECK.ok(
            f"nvidia.ko in modules.dep of the running kernel {f.running}{extra}{dkms}",
            expected="the NVIDIA module built for the running kernel and every newer installed kernel",
            evidence=refs,
        )
    severity, observed, kernels, explanation = (
        _newer_unbuilt(f.running, newer) if running.has_nvidia else _running_unbuilt(f.running, loaded)
    )
    return DKMS_CHECK.problem_at(
        severity,
        observed + dkms,
        "the NVIDIA module built for the running kernel and every newer installed kernel",
        explanation,
        _build_fix(f, kernels, "Build the NVIDIA module for " + ", ".join(kernels)),
        subjects=tuple(kernels),
        evidence=[*refs, *([file_ref(f.build_log.path)] if f.build_log and f.build_log.error else [])],
    )
