"""driver.version: is the driver's branch and kernel module flavor right for the GPUs?"""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.driver_support import ARCH_NAMES, BLACKWELL, MIN_BRANCH, OPEN_MIN_ARCH, OPEN_REQUIRED
from rigaudit.agents.facts.nvidia_driver import PROC_VERSION, kernel_version
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.facts.unit_reasons import Cause, module_cause
from rigaudit.agents.investigators.driver import premises
from rigaudit.agents.investigators.driver.facts import (
    MODULE_VERSION,
    DriverFacts,
    fix_where,
    gpu_labels,
    kernel_log,
    module_loaded,
    passed_through,
)
from rigaudit.tools.hosts.probe import command_ref, file_ref, nvml_ref
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix


def _branch(version: str) -> int | None:
    try:
        return int(version.split(".", maxsplit=1)[0])
    except ValueError:
        return None


def _install_fix(facts: DriverFacts, summary: str) -> Fix:
    return Fix(
        kind="reboot",
        where=fix_where(facts.platform),
        summary=summary,
        actions=(
            CommandAction(
                description="Install a driver of a supported branch in its open kernel module flavor (NVIDIA .run installer "
                "with -m=kernel-open, or the distribution's nvidia-open / nvidia-kernel-open-dkms packages), then reboot",
            ),
            CommandAction(description="After the reboot, check the loaded module", argv=("cat", PROC_VERSION)),
        ),
        risk="medium",
        verify=f"cat {PROC_VERSION}  -> 'Open Kernel Module' and the new version; nvidia-smi lists every GPU",
        revert="reinstall the previous driver package and reboot",
        persist="the installed driver persists by itself",
    )


DRIVER_VERSION_CHECK = Check(
    "driver.version",
    "NVIDIA driver version and flavor",
    reads="`/proc/driver/nvidia/version`, `/sys/module/nvidia/version`, NVML driver version and GPU architecture",
    problem=(
        "branch too old for the GPU; proprietary flavor on Blackwell (needs the open kernel module); open flavor on pre-Turing"
    ),
    fix="install a supported driver",
    kinds=("reboot",),
    premises=(premises.GPUS, premises.DRIVER, premises.FLAVOR),
)


def _not_loading(facts: DriverFacts, refs: list[str]) -> Finding | None:
    """No GPU is usable and the kernel log says why nvidia.ko did not load (a refusal of the flavor, another cause)."""
    evidence = [*refs, command_ref(facts.install.dmesg.argv)]
    refused = [line for line in facts.install.dmesg.stdout.splitlines() if OPEN_REQUIRED in line]
    if refused and not facts.nvml_ok:
        return DRIVER_VERSION_CHECK.problem_at(
            "critical",
            f"kernel log: {len(refused)} GPU(s) refused: {refused[0].split('NVRM: ', 1)[-1]}",
            "the open kernel module (NVIDIA UNIX Open Kernel Module) on GPUs that need it",
            "The kernel log says why no GPU is usable: the proprietary kernel module refused these GPUs (Blackwell and "
            "newer are driven only by the open GPU kernel modules), so nvidia.ko did not stay loaded and NVML finds no "
            "driver. Loading modules again cannot help; the fix is the open flavor of the same driver.",
            _install_fix(facts, "Install the open kernel module flavor of the driver (the GPUs require it)"),
            subjects=tuple(g.label for g in facts.gpus),
            evidence=evidence,
        )
    cause = module_cause("nvidia", kernel_log(facts)) if not facts.nvml_ok and module_loaded(facts, "nvidia") is False else None
    if cause is None or not cause.known or cause.key in ("open_required", "signature"):
        return None
    return DRIVER_VERSION_CHECK.problem_at(
        "high" if cause.kind == "hardware" else "critical",
        f"nvidia.ko not loaded; kernel log: {cause.line}",
        "the NVIDIA kernel module loaded and driving every GPU",
        f"The kernel log says why no GPU is usable: {cause.cause}. Loading the module again fails the same way "
        f"until that is dealt with ({cause.source}).",
        _cause_fix(facts, cause),
        subjects=tuple(g.label for g in facts.gpus),
        evidence=evidence,
    )


def _cause_fix(facts: DriverFacts, cause: Cause) -> Fix:
    """What removes the reason the kernel log gives for nvidia.ko not loading."""
    return Fix(
        kind=cause.kind or "reboot",
        where=layer_where(facts.platform, "hardware" if cause.kind == "hardware" else "gpu_driver"),
        summary=f"{cause.fix[0].upper()}{cause.fix[1:]}",
        actions=(
            CommandAction(description=cause.fix),
            CommandAction(description="After it, check the loaded module", argv=("cat", PROC_VERSION)),
        ),
        risk="medium",
        verify=f"cat {PROC_VERSION} shows the driver; nvidia-smi lists every GPU",
        revert="undo the change named above",
        persist="the change persists",
    )


def _wrong_for_archs(
    facts: DriverFacts, observed: str, version: str, is_open: bool | None, archs: dict[int, int], refs: list[str]
) -> Finding | None:
    """The driver's branch or flavor does not drive these GPUs: too old a branch, proprietary on Blackwell, open on
    pre-Turing."""
    branch = _branch(version)
    too_old = [i for i, a in archs.items() if branch is not None and branch < MIN_BRANCH.get(a, 0)]
    if too_old:
        arch = max(archs[i] for i in too_old)
        need = MIN_BRANCH[arch]
        return DRIVER_VERSION_CHECK.problem_at(
            "high",
            f"driver {observed} on {ARCH_NAMES.get(arch, arch)} GPUs",
            f"branch >= {need}" + (" with the open kernel module" if arch >= BLACKWELL else ""),
            f"{ARCH_NAMES.get(arch, arch)} GPUs are supported from the R{need} driver branch on; older branches lack the "
            "GPU's firmware and features (and newer CUDA toolkits refuse them).",
            _install_fix(facts, f"Install an R{need}+ driver"),
            subjects=gpu_labels(facts, too_old),
            evidence=refs,
        )
    blackwell = [i for i, a in archs.items() if a >= BLACKWELL]
    if blackwell and is_open is False:
        return DRIVER_VERSION_CHECK.problem_at(
            "high",
            f"driver {observed} on Blackwell GPUs",
            "the open kernel module (NVIDIA UNIX Open Kernel Module)",
            "Blackwell GPUs are supported only by the open GPU kernel modules; the proprietary flavor does not drive "
            "them (GPUs missing or failing to initialize).",
            _install_fix(facts, "Install the open kernel module flavor of the driver"),
            subjects=gpu_labels(facts, blackwell),
            evidence=refs,
        )
    legacy = [i for i, a in archs.items() if a < OPEN_MIN_ARCH]
    if legacy and is_open:
        return DRIVER_VERSION_CHECK.problem_at(
            "high",
            f"open kernel module on pre-Turing GPUs ({', '.join(sorted({ARCH_NAMES.get(archs[i], '?') for i in legacy}))})",
            "the proprietary kernel module",
            "The open GPU kernel modules drive Turing and newer only; older GPUs need the proprietary flavor.",
            _install_fix(facts, "Install the proprietary kernel module flavor"),
            subjects=gpu_labels(facts, legacy),
            evidence=refs,
        )
    return None


def judge_driver_version(facts: DriverFacts) -> Finding:
    kernel, is_open = kernel_version(facts.proc_version)
    kernel = kernel or facts.module_version
    refs = [file_ref(PROC_VERSION), file_ref(MODULE_VERSION), "nvml:nvmlInit()"]
    refs += ["nvml:nvmlSystemGetDriverVersion()"] if facts.nvml_init else []
    if facts.install.origin.origin == "vfio":
        return passed_through(DRIVER_VERSION_CHECK, facts)
    if (refused := _not_loading(facts, refs)) is not None:
        return refused
    if kernel is None and facts.nvml_version is None:
        if facts.gpus:
            why = f"no NVIDIA kernel module version ({PROC_VERSION} absent) and NVML unavailable ({facts.nvml_error})"
            return DRIVER_VERSION_CHECK.unknown(why, subjects=(g.label for g in facts.gpus), evidence=refs)
        return DRIVER_VERSION_CHECK.not_applicable("no NVIDIA driver and no NVIDIA GPU on this host", evidence=refs)
    version = kernel or facts.nvml_version or "?"
    flavor = "" if is_open is None else (" (open kernel module)" if is_open else " (proprietary kernel module)")
    observed = f"{version}{flavor}"
    archs = {i: a for i, a in facts.archs.items() if a is not None}
    refs += [nvml_ref("nvmlDeviceGetArchitecture", (i,)) for i in sorted(archs)][:4]
    if not archs:
        why = f"driver {observed}; GPU architecture unknown (NVML: {facts.nvml_error or 'no architecture recorded'})"
        return DRIVER_VERSION_CHECK.unknown(why, evidence=refs)
    if (wrong := _wrong_for_archs(facts, observed, version, is_open, archs, refs)) is not None:
        return wrong
    arch_names = ", ".join(sorted({ARCH_NAMES.get(a, f"arch {a}") for a in archs.values()}))
    nvml = f"; NVML {facts.nvml_version}" if facts.nvml_version else ""
    return DRIVER_VERSION_CHECK.ok(f"{observed}{nvml} on {arch_names} GPUs", evidence=refs)
