"""Driver: the NVIDIA kernel driver, its modules and its services."""

from __future__ import annotations

import re
from dataclasses import dataclass

from agents.facts.gpus import NVIDIA_VENDOR, PCI_DEVICES, Gpu, GpuInventory, collect_gpus
from agents.facts.nvidia_driver import MODULES, PROC_VERSION, kernel_version
from agents.facts.platform import Platform, detect_platform
from agents.findings import not_applicable, ok, problem, unknown
from agents.investigator import CheckDoc, Investigator
from agents.investigators._driver_fabric import FabricVersion, collect_fabric_version, judge_fabricmanager_version
from agents.investigators._driver_install import (
    InstallFacts,
    collect_install,
    judge_dkms,
    judge_library_mismatch,
    judge_secure_boot,
)
from tools.model.finding import (
    Area,
    CommandAction,
    Finding,
    Fix,
    ModuleLoadAction,
    ServiceStartAction,
    Severity,
    Where,
)
from tools.probe import Probe, command_ref, dir_ref, file_ref, nvml_ref

AREA: Area = "driver"
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
MODULE_VERSION = "/sys/module/nvidia/version"
INFINIBAND = "/sys/class/infiniband"
ARCH_NAMES = {
    2: "Kepler",
    3: "Maxwell",
    4: "Pascal",
    5: "Volta",
    6: "Turing",
    7: "Ampere",
    8: "Ada",
    9: "Hopper",
    10: "Blackwell",
}
MIN_BRANCH = {7: 450, 8: 525, 9: 525, 10: 570}
"""The first driver branch that supports each NVML architecture (nvmlDeviceGetArchitecture)."""
OPEN_MIN_ARCH = 6
"""The open kernel module drives Turing and newer only."""
BLACKWELL = 10
PERSISTENCED = ("systemctl", "is-active", "nvidia-persistenced")
FABRICMANAGER = ("systemctl", "is-active", "nvidia-fabricmanager")
FABRIC_STATES = {0: "not supported", 1: "not started", 2: "in progress", 3: "completed"}


@dataclass(frozen=True)
class Service:
    state: str | None
    """``active``, ``inactive``, ``failed``... or ``None`` when the command gave no answer."""
    error: str | None
    ref: str


@dataclass(frozen=True)
class DriverFacts:
    platform: Platform
    gpus: tuple[Gpu, ...]
    nvml_init: bool
    nvml_ok: bool
    nvml_error: str | None
    nvml_version: str | None
    proc_version: str | None
    module_version: str | None
    archs: dict[int, int | None]
    persistence: dict[int, int | None]
    persistenced: Service
    modules: frozenset[str] | None
    modules_error: str | None
    proc_devices: str | None
    dev: tuple[str, ...] | None
    infiniband: tuple[str, ...] | None
    infiniband_error: str | None
    peermem_built: bool | None
    nvswitch_pci: tuple[str, ...]
    fabric_state: int | None
    fabric_ref: str | None
    fabricmanager: Service | None
    install: InstallFacts
    fabric_version: FabricVersion | None


# -- collect ---------------------------------------------------------------------------------


async def _nvswitch_pci(probe: Probe) -> tuple[str, ...]:
    """NVIDIA bridge devices (class 0x0680): NVSwitches. Re-uses the reads collect_gpus made."""
    listing = await probe.list_dir(PCI_DEVICES)
    bdfs = list(listing.entries or ())
    vendors = await probe.gather(*[lambda b=b: probe.text(f"{PCI_DEVICES}/{b}/vendor") for b in bdfs])
    nvidia = [b for b, v in zip(bdfs, vendors, strict=True) if v is not None and v.strip().lower() == NVIDIA_VENDOR]
    classes = await probe.gather(*[lambda b=b: probe.text(f"{PCI_DEVICES}/{b}/class") for b in nvidia])
    return tuple(b for b, c in zip(nvidia, classes, strict=True) if c is not None and c.strip().lower().startswith("0x0680"))


async def _service(probe: Probe, argv: tuple[str, ...]) -> Service:
    result = await probe.run(argv)
    answer = result.stdout.strip().splitlines()[0] if result.error is None and result.stdout.strip() else None
    return Service(answer, result.error, command_ref(argv))


async def _per_gpu(probe: Probe, fn: str, indices: list[int]) -> dict[int, int | None]:
    results = await probe.gather(*[lambda i=i: probe.nvml(fn, i) for i in indices])
    return {i: r.value if r.ok and isinstance(r.value, int) else None for i, r in zip(indices, results, strict=True)}


async def collect(probe: Probe) -> DriverFacts:
    names = (PROC_VERSION, MODULE_VERSION, MODULES, "/proc/devices", "/proc/sys/kernel/osrelease")
    files = await probe.gather(*[lambda p=p: probe.read(p) for p in names])
    proc_version, module_version, modules, devices, osrelease = (f.text() for f in files)
    ib, dev = await probe.gather(lambda: probe.list_dir(INFINIBAND), lambda: probe.list_dir("/dev"))
    peermem_built = None
    if osrelease is not None:
        dep = await probe.text(f"/lib/modules/{osrelease.strip()}/modules.dep")
        peermem_built = None if dep is None else "nvidia-peermem.ko" in dep or "nvidia_peermem.ko" in dep
    inventory: GpuInventory = await collect_gpus(probe)
    nvswitch_pci = await _nvswitch_pci(probe)
    indices = inventory.nvml_indices
    archs = await _per_gpu(probe, "nvmlDeviceGetArchitecture", indices)
    persistence = await _per_gpu(probe, "nvmlDeviceGetPersistenceMode", indices)
    fabric_state = fabric_ref = None
    if indices:
        fabric_ref = nvml_ref("nvmlDeviceGetGpuFabricInfo", (indices[0],))
        fabric = await probe.nvml("nvmlDeviceGetGpuFabricInfo", indices[0])
        if fabric.ok and isinstance(fabric.value, dict) and isinstance(fabric.value.get("state"), int):
            fabric_state = fabric.value["state"]
    platform = await detect_platform(probe)
    persistenced = await _service(probe, PERSISTENCED)
    nvswitch = bool(nvswitch_pci) or any(re.fullmatch(r"nvidia-nvswitch\d+", e) for e in dev.entries or ())
    nvswitch = nvswitch or fabric_state in (1, 2, 3)
    fabricmanager = await _service(probe, FABRICMANAGER) if nvswitch else None
    module_names = None if modules is None else frozenset(line.split()[0] for line in modules.splitlines() if line.strip())
    install = await collect_install(probe)
    fabric_version = await collect_fabric_version(probe) if nvswitch else None
    return DriverFacts(
        platform=platform,
        gpus=inventory.gpus,
        nvml_init=(await probe.nvml("nvmlInit")).ok,
        nvml_ok=inventory.nvml_ok,
        nvml_error=inventory.nvml_error,
        nvml_version=inventory.driver_version,
        proc_version=proc_version,
        module_version=module_version.strip() if module_version else None,
        archs=archs,
        persistence=persistence,
        persistenced=persistenced,
        modules=module_names,
        modules_error=files[2].error,
        proc_devices=devices,
        dev=dev.entries,
        infiniband=ib.entries,
        infiniband_error=ib.error,
        peermem_built=peermem_built,
        nvswitch_pci=nvswitch_pci,
        fabric_state=fabric_state,
        fabric_ref=fabric_ref,
        fabricmanager=fabricmanager,
        install=install,
        fabric_version=fabric_version,
    )


# -- helpers ---------------------------------------------------------------------------------


def _where(platform: Platform) -> Where:
    """Modules and driver services live with the host kernel: the hypervisor when we run in a container."""
    return "hypervisor" if platform.in_container else "host"


def _branch(version: str) -> int | None:
    try:
        return int(version.split(".", maxsplit=1)[0])
    except ValueError:
        return None


def _labels(facts: DriverFacts, indices: list[int]) -> tuple[str, ...]:
    return tuple(g.label for g in facts.gpus if g.index in indices)


def _loaded(facts: DriverFacts, name: str) -> bool | None:
    return None if facts.modules is None else name in facts.modules


def _modules_unknown(check: str, title: str, facts: DriverFacts) -> Finding:
    return unknown(check, AREA, title, f"{MODULES} not readable: {facts.modules_error}", evidence=(file_ref(MODULES),))


# -- judges ----------------------------------------------------------------------------------


def _install_fix(facts: DriverFacts, summary: str) -> Fix:
    return Fix(
        kind="reboot",
        where=_where(facts.platform),
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


def judge_version(facts: DriverFacts) -> Finding:
    check, title = "driver.version", "NVIDIA driver version and flavor"
    kernel, is_open = kernel_version(facts.proc_version)
    kernel = kernel or facts.module_version
    refs = [file_ref(PROC_VERSION), file_ref(MODULE_VERSION), "nvml:nvmlInit()"]
    refs += ["nvml:nvmlSystemGetDriverVersion()"] if facts.nvml_init else []
    if kernel is None and facts.nvml_version is None:
        if facts.gpus:
            why = f"no NVIDIA kernel module version ({PROC_VERSION} absent) and NVML unavailable ({facts.nvml_error})"
            return unknown(check, AREA, title, why, subjects=(g.label for g in facts.gpus), evidence=refs)
        return not_applicable(check, AREA, title, "no NVIDIA driver and no NVIDIA GPU on this host", evidence=refs)
    version = kernel or facts.nvml_version or "?"
    flavor = "" if is_open is None else (" (open kernel module)" if is_open else " (proprietary kernel module)")
    observed = f"{version}{flavor}"
    archs = {i: a for i, a in facts.archs.items() if a is not None}
    refs += [nvml_ref("nvmlDeviceGetArchitecture", (i,)) for i in sorted(archs)][:4]
    if not archs:
        why = f"driver {observed}; GPU architecture unknown (NVML: {facts.nvml_error or 'no architecture recorded'})"
        return unknown(check, AREA, title, why, evidence=refs)
    branch = _branch(version)
    too_old = [i for i, a in archs.items() if branch is not None and branch < MIN_BRANCH.get(a, 0)]
    if too_old:
        arch = max(archs[i] for i in too_old)
        need = MIN_BRANCH[arch]
        return problem(
            check,
            AREA,
            title,
            "high",
            f"driver {observed} on {ARCH_NAMES.get(arch, arch)} GPUs",
            f"branch >= {need}" + (" with the open kernel module" if arch >= BLACKWELL else ""),
            f"{ARCH_NAMES.get(arch, arch)} GPUs are supported from the R{need} driver branch on; older branches lack the "
            "GPU's firmware and features (and newer CUDA toolkits refuse them).",
            _install_fix(facts, f"Install an R{need}+ driver"),
            subjects=_labels(facts, too_old),
            evidence=refs,
        )
    blackwell = [i for i, a in archs.items() if a >= BLACKWELL]
    if blackwell and is_open is False:
        return problem(
            check,
            AREA,
            title,
            "high",
            f"driver {observed} on Blackwell GPUs",
            "the open kernel module (NVIDIA UNIX Open Kernel Module)",
            "Blackwell GPUs are supported only by the open GPU kernel modules; the proprietary flavor does not drive "
            "them (GPUs missing or failing to initialize).",
            _install_fix(facts, "Install the open kernel module flavor of the driver"),
            subjects=_labels(facts, blackwell),
            evidence=refs,
        )
    legacy = [i for i, a in archs.items() if a < OPEN_MIN_ARCH]
    if legacy and is_open:
        return problem(
            check,
            AREA,
            title,
            "high",
            f"open kernel module on pre-Turing GPUs ({', '.join(sorted({ARCH_NAMES.get(archs[i], '?') for i in legacy}))})",
            "the proprietary kernel module",
            "The open GPU kernel modules drive Turing and newer only; older GPUs need the proprietary flavor.",
            _install_fix(facts, "Install the proprietary kernel module flavor"),
            subjects=_labels(facts, legacy),
            evidence=refs,
        )
    arch_names = ", ".join(sorted({ARCH_NAMES.get(a, f"arch {a}") for a in archs.values()}))
    nvml = f"; NVML {facts.nvml_version}" if facts.nvml_version else ""
    return ok(check, AREA, title, f"{observed}{nvml} on {arch_names} GPUs", evidence=refs)


def judge_persistence(facts: DriverFacts) -> Finding:
    check, title = "driver.persistence", "GPU persistence mode"
    daemon = facts.persistenced
    refs = [*[nvml_ref("nvmlDeviceGetPersistenceMode", (i,)) for i in sorted(facts.persistence)][:8], daemon.ref]
    if not facts.nvml_ok:
        return unknown(check, AREA, title, f"NVML unavailable: {facts.nvml_error}", evidence=("nvml:nvmlInit()", daemon.ref))
    known = {i: v for i, v in facts.persistence.items() if v is not None}
    if not known:
        return unknown(check, AREA, title, "nvmlDeviceGetPersistenceMode gave no answer", evidence=refs)
    off = sorted(i for i, v in known.items() if v == 0)
    service = daemon.state or f"unknown ({daemon.error or 'no answer'})"
    if not off:
        observed = f"enabled on {len(known)}/{len(facts.persistence)} GPUs; nvidia-persistenced {service}"
        return ok(check, AREA, title, observed, expected="enabled on every GPU", evidence=refs)
    severity: Severity = "low" if daemon.state == "active" else "medium"
    fix = Fix(
        kind="runtime",
        where=_where(facts.platform),
        summary="Start nvidia-persistenced (and enable it at boot) so the driver keeps the GPUs initialized",
        actions=(ServiceStartAction(unit="nvidia-persistenced"),),
        risk="low",
        verify="systemctl is-active nvidia-persistenced  -> active; nvidia-smi -q | grep 'Persistence Mode'  -> Enabled",
        revert="systemctl stop nvidia-persistenced",
        persist="systemctl enable nvidia-persistenced",
    )
    explanation = (
        "Without persistence the driver tears a GPU's state down when its last client exits and rebuilds it on the "
        "next open: every CUDA start (server restart, health check, nvidia-smi) pays seconds of initialization, and "
        "settings such as application clocks and power limits can be lost in between. nvidia-persistenced is the "
        "supported way to keep GPUs initialized (the legacy nvidia-smi -pm switch is deprecated)."
        + (
            " The daemon is active yet these GPUs report persistence off: check its options (--no-persistence-mode)."
            if daemon.state == "active"
            else ""
        )
    )
    return problem(
        check,
        AREA,
        title,
        severity,
        f"persistence off on {len(off)}/{len(known)} GPUs; nvidia-persistenced {service}",
        "persistence enabled on every GPU; nvidia-persistenced active",
        explanation,
        fix,
        subjects=_labels(facts, off),
        evidence=refs,
    )


def judge_peermem(facts: DriverFacts) -> Finding:
    check, title = "driver.peermem", "nvidia_peermem (GPUDirect RDMA)"
    refs = (dir_ref(INFINIBAND), file_ref(MODULES))
    purpose = (
        "nvidia_peermem lets an RDMA NIC (InfiniBand/RoCE) read and write GPU memory directly (GPUDirect RDMA, "
        "multi-node NCCL); it does nothing for GPU-to-GPU P2P inside one host."
    )
    if facts.infiniband is None and facts.infiniband_error not in (None, "ENOENT"):
        return unknown(check, AREA, title, f"{INFINIBAND} not readable: {facts.infiniband_error}", evidence=refs[:1])
    if not facts.infiniband:
        quiet = not_applicable(check, AREA, title, f"no RDMA NIC ({INFINIBAND} has no entries)", evidence=refs)
        return quiet.model_copy(update={"explanation": purpose})
    nics = ", ".join(facts.infiniband)
    loaded = _loaded(facts, "nvidia_peermem")
    if loaded is None:
        return _modules_unknown(check, title, facts)
    if loaded:
        return ok(check, AREA, title, f"nvidia_peermem loaded; RDMA devices: {nics}", evidence=refs)
    built = {True: "", False: " (nvidia-peermem.ko is not in modules.dep: install/rebuild it first)", None: ""}
    fix = Fix(
        kind="runtime",
        where=_where(facts.platform),
        summary="Load nvidia_peermem and load it at boot" + built[facts.peermem_built],
        actions=(ModuleLoadAction(module="nvidia_peermem"),),
        risk="low",
        verify="grep nvidia_peermem /proc/modules; NCCL_DEBUG=INFO shows 'GPU Direct RDMA Enabled'",
        revert="modprobe -r nvidia_peermem",
        persist="echo nvidia_peermem > /etc/modules-load.d/nvidia-peermem.conf",
    )
    return problem(
        check,
        AREA,
        title,
        "medium",
        f"RDMA devices {nics} present; nvidia_peermem not loaded",
        "nvidia_peermem loaded",
        purpose + " Without it (and without DMA-BUF support: open kernel module, kernel >= 5.12, recent NCCL) "
        "inter-node traffic is staged through host memory, cutting multi-node bandwidth and adding latency. "
        "Single-node tensor parallelism is not affected.",
        fix,
        subjects=tuple(facts.infiniband),
        evidence=refs,
    )


def judge_nouveau(facts: DriverFacts) -> Finding:
    check, title = "driver.nouveau", "nouveau driver"
    loaded = _loaded(facts, "nouveau")
    if loaded is None:
        return _modules_unknown(check, title, facts)
    if not loaded:
        return ok(check, AREA, title, "nouveau not loaded", evidence=(file_ref(MODULES),))
    conf = "/etc/modprobe.d/blacklist-nouveau.conf"
    fix = Fix(
        kind="reboot",
        where=_where(facts.platform),
        summary="Blacklist nouveau, rebuild the initramfs, reboot",
        actions=(
            CommandAction(
                description=f"Write {conf}",
                argv=("sh", "-c", f"printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' > {conf}"),
            ),
            CommandAction(description="Rebuild every initramfs", argv=("update-initramfs", "-u", "-k", "all")),
            CommandAction(description="Reboot", argv=("systemctl", "reboot")),
        ),
        risk="low",
        verify="after the reboot: grep -w nouveau /proc/modules  -> nothing; nvidia-smi lists every GPU",
        revert=f"rm {conf}; update-initramfs -u -k all; reboot",
        persist="the blacklist persists by itself",
    )
    return problem(
        check,
        AREA,
        title,
        "high",
        "nouveau loaded",
        "nouveau not loaded",
        "The open-source nouveau driver has claimed (or may claim) NVIDIA GPUs; the NVIDIA driver cannot bind a GPU "
        "nouveau holds, so those GPUs are missing for CUDA.",
        fix,
        evidence=(file_ref(MODULES),),
    )


def judge_uvm(facts: DriverFacts) -> Finding:
    check, title = "driver.uvm", "nvidia_uvm module and /dev/nvidia-uvm"
    refs = [file_ref(MODULES), dir_ref("/dev"), file_ref("/proc/devices")]
    loaded = _loaded(facts, "nvidia_uvm")
    if loaded is None:
        return _modules_unknown(check, title, facts)
    if not facts.gpus and not loaded:
        return not_applicable(check, AREA, title, "no NVIDIA GPU on this host", evidence=refs)
    node = None if facts.dev is None else "nvidia-uvm" in facts.dev
    feeds_containers = bool(facts.platform.lxc_configs) or facts.platform.in_container
    where = _where(facts.platform)
    create = CommandAction(
        description="Create the device nodes (/dev/nvidia-uvm, /dev/nvidia-uvm-tools)", argv=("nvidia-modprobe", "-c0", "-u")
    )
    if loaded and node is not False:
        major = facts.proc_devices is not None and "nvidia-uvm" in facts.proc_devices
        node_seen = "/dev/nvidia-uvm present" if node else "/dev not listable, node not checked"
        observed = "nvidia_uvm loaded" + (" (nvidia-uvm major registered)" if major else "") + f"; {node_seen}"
        return ok(check, AREA, title, observed, evidence=refs)
    if not loaded:
        fix = Fix(
            kind="runtime",
            where=where,
            summary="Load nvidia_uvm (and create its device node); load it at boot",
            actions=(ModuleLoadAction(module="nvidia_uvm"), create),
            risk="low",
            verify="grep -w nvidia_uvm /proc/modules; ls -l /dev/nvidia-uvm",
            revert="modprobe -r nvidia_uvm",
            persist="echo nvidia_uvm > /etc/modules-load.d/nvidia-uvm.conf",
        )
        observed = "nvidia_uvm not loaded"
        severity: Severity = "high"
    else:
        fix = Fix(
            kind="runtime",
            where=where,
            summary="Create /dev/nvidia-uvm" + (" before the containers start" if feeds_containers else ""),
            actions=(create,),
            risk="low",
            verify="ls -l /dev/nvidia-uvm",
            revert="none needed (device nodes are recreated at boot)",
            persist="run nvidia-modprobe -c0 -u from a oneshot systemd unit before the containers start"
            if feeds_containers
            else "CUDA creates it on first use through nvidia-modprobe",
        )
        observed = "nvidia_uvm loaded but /dev/nvidia-uvm absent"
        severity = "high" if feeds_containers else "low"
    explanation = (
        "CUDA needs the nvidia_uvm module and its /dev/nvidia-uvm node (unified memory, and the CUDA runtime's own "
        "initialization): without them cudaInit fails with 'no CUDA-capable device' or error 999."
        + (
            " Containers bind-mount /dev/nvidia-uvm at start: if it is missing then, CUDA fails inside them until "
            "they are restarted."
            if feeds_containers
            else ""
        )
    )
    return problem(
        check,
        AREA,
        title,
        severity,
        observed,
        "nvidia_uvm loaded and /dev/nvidia-uvm present",
        explanation,
        fix,
        subjects=tuple(g.label for g in facts.gpus),
        evidence=refs,
    )


def judge_fabricmanager(facts: DriverFacts) -> Finding:
    check, title = "driver.fabricmanager", "NVIDIA Fabric Manager (NVSwitch)"
    switches_dev = [e for e in facts.dev or () if re.fullmatch(r"nvidia-nvswitch\d+", e)]
    refs = [dir_ref(PCI_DEVICES), dir_ref("/dev")] + ([facts.fabric_ref] if facts.fabric_ref else [])
    fabric = FABRIC_STATES.get(facts.fabric_state) if facts.fabric_state is not None else None
    if facts.fabricmanager is None:
        why = "no NVSwitch (no NVIDIA PCI bridge of class 0x0680"
        why += ", no /dev/nvidia-nvswitch*" if facts.dev is not None else ""
        why += f", NVML fabric state: {fabric})" if fabric else ")"
        return not_applicable(check, AREA, title, why + ": PCIe-only or NVLink-bridge GPUs need no fabric manager", evidence=refs)
    switches = list(facts.nvswitch_pci) or switches_dev
    seen = f"{len(switches)} NVSwitches" if switches else "an NVSwitch fabric (NVML)"
    service = facts.fabricmanager
    refs.append(service.ref)
    if service.state == "active":
        state = f"; GPU fabric state: {fabric}" if fabric else ""
        return ok(check, AREA, title, f"{seen}; nvidia-fabricmanager active{state}", evidence=refs)
    if service.state is None:
        why = f"{seen}, but the state of nvidia-fabricmanager is unknown (systemctl: {service.error or 'no answer'})"
        return unknown(check, AREA, title, why, evidence=refs)
    fix = Fix(
        kind="runtime",
        where=_where(facts.platform),
        summary="Start nvidia-fabricmanager (its version must equal the driver's) and enable it at boot",
        actions=(ServiceStartAction(unit="nvidia-fabricmanager"),),
        risk="low",
        verify="systemctl is-active nvidia-fabricmanager  -> active; nvidia-smi -q | grep -A2 Fabric  -> State: Completed",
        revert="systemctl stop nvidia-fabricmanager",
        persist="systemctl enable nvidia-fabricmanager",
    )
    return problem(
        check,
        AREA,
        title,
        "critical",
        f"{seen}; nvidia-fabricmanager {service.state}",
        "nvidia-fabricmanager active",
        "On NVSwitch systems the fabric manager programs the switches; without it the GPUs' NVLink fabric is not set "
        "up, CUDA initialization fails or hangs on these GPUs, and NCCL cannot use NVLink. If it fails to start, "
        "check that its package version equals the driver version exactly.",
        fix,
        subjects=tuple(switches) or tuple(g.label for g in facts.gpus),
        evidence=refs,
    )


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
