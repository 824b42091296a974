"""driver.peermem, driver.nouveau, driver.uvm: the kernel modules around the NVIDIA driver."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.cdi import regenerate_spec_fix
from rigaudit.agents.facts.gpu_models import NO_GPUDIRECT_RDMA, unified_memory
from rigaudit.agents.facts.kernel_log import DMESG_REF
from rigaudit.agents.facts.nvidia_driver import MODULES
from rigaudit.agents.facts.nvlink_management import management_text
from rigaudit.agents.facts.rdma import describe_nics
from rigaudit.agents.facts.unit_reasons import Cause, module_cause
from rigaudit.agents.investigators.driver import premises
from rigaudit.agents.investigators.driver.facts import (
    INFINIBAND,
    DriverFacts,
    fix_where,
    kernel_log,
    module_loaded,
    modules_unknown,
    passed_through,
)
from rigaudit.agents.investigators.driver.internode import Internode
from rigaudit.agents.persist import module_persist
from rigaudit.tools.hosts.probe import dir_ref, file_ref
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix, ModuleLoadAction, Severity

OWNERS = {"signature": "driver.secure_boot", "probe_not_called": "driver.version / driver.nouveau"}
"""The check that reports a reason nvidia.ko gave, when it is not driver.version."""


def owner_of(cause: Cause) -> str:
    return OWNERS.get(cause.key, "driver.version") if cause.known else "driver.version, driver.dkms"


def cause_fix(facts: DriverFacts, cause: Cause, module: str, verify: str) -> Fix:
    """The fix for a module that did not load for the reason ``cause`` (the kernel log's): that reason's remedy, never
    a plain modprobe, which fails the same way."""
    return Fix(
        kind=cause.kind or "runtime",
        where=fix_where(facts.platform),
        summary=f"{cause.fix[0].upper()}{cause.fix[1:]} ({module} did not load: {cause.cause})",
        actions=(CommandAction(description=cause.fix), CommandAction(description=f"then: modprobe {module}")),
        risk="medium" if cause.kind in ("reboot", "restart") else "low",
        verify=verify,
        revert="undo the change named above",
        persist=module_persist(module, facts.platform.image),
    )


PEERMEM_CHECK = Check(
    "driver.peermem",
    "nvidia_peermem (GPUDirect RDMA)",
    reads="`/proc/modules` (nvidia_peermem, mlx_compat of MLNX_OFED), `modules.dep`, `/sys/class/infiniband/*/ports/1/"
    "{link_layer,state}`, the NVIDIA module's flavor, the kernel version",
    problem="an active RDMA NIC and no GPUDirect RDMA path (nvidia_peermem not loaded and no DMA-BUF: open kernel "
    "module on Linux 5.12+): medium where servers talk to other nodes, low where none does; without an RDMA NIC: not "
    "applicable",
    fix="`modprobe nvidia_peermem` + `/etc/modules-load.d`; where the kernel log says ib_core has no peer-memory API, "
    "MLNX_OFED or DMA-BUF (open modules)",
    kinds=("runtime", "reboot"),
    premises=(premises.PLATFORM, premises.RDMA, premises.FLAVOR_DMABUF, premises.KERNEL, premises.MODULES),
)


PEERMEM_PURPOSE = (
    "nvidia_peermem lets an RDMA NIC (InfiniBand/RoCE) read and write GPU memory directly (GPUDirect RDMA, "
    "multi-node NCCL); it does nothing for GPU-to-GPU P2P inside one host."
)


def _peermem_not_needed(facts: DriverFacts, nics: str, refs: tuple[str, ...]) -> Finding | None:
    """nvidia_peermem is not loaded and need not be: another GPUDirect path (DMA-BUF, EFA), or no port active."""
    rdma = facts.rdma
    if rdma.path in ("dmabuf", "efa"):
        return PEERMEM_CHECK.ok(
            f"{nics}; GPUDirect RDMA over {rdma.path_text()}; nvidia_peermem not loaded",
            expected="a GPUDirect RDMA path: nvidia_peermem or DMA-BUF",
            explanation=PEERMEM_PURPOSE
            + (
                " AWS's EFA driver registers GPU memory with the NIC itself (libfabric's EFA provider uses it for NCCL), "
                "so nvidia_peermem has no role here."
                if rdma.path == "efa"
                else " With the open kernel module on Linux 5.12+, NCCL 2.19+ registers GPU memory with the NIC through "
                "DMA-BUF, so nvidia_peermem is not needed (it needs MLNX_OFED's ib_core besides)."
            ),
            evidence=refs,
        )
    if rdma.nics and all(n.state is not None and not n.active for n in rdma.nics):
        return PEERMEM_CHECK.ok(
            f"{nics}; nvidia_peermem not loaded, but no RDMA port is active",
            expected="a GPUDirect RDMA path on hosts whose RDMA ports carry traffic",
            explanation=PEERMEM_PURPOSE + " With every port down, nothing crosses the NICs now.",
            evidence=refs,
        )
    return None


def _no_gpudirect(facts: DriverFacts, nics: str, refs: tuple[str, ...]) -> Finding | None:
    """A GPU that shares the system's memory (GB10) has no GPUDirect RDMA at all: nothing to load or to fix."""
    if not facts.gpus or not all(unified_memory(g.name) for g in facts.gpus):
        return None
    quiet = PEERMEM_CHECK.not_applicable(
        f"{nics}; {facts.gpus[0].name} shares the system's memory: GPUDirect RDMA is not supported on it "
        "(nvidia-peermem, DMA-BUF and GDRCopy do not work)",
        evidence=refs,
    )
    why = (
        " NCCL stages inter-node traffic through host buffers it registers with the NIC (NCCL_DEBUG=INFO: 'GPU Direct "
        "RDMA Disabled for HCA'), which is this platform's design, not a fault; `modprobe nvidia-peermem` fails on it "
        "(Invalid argument). Those registrations are locked memory: the server's RLIMIT_MEMLOCK must allow them "
        f"(container.memlock) ({NO_GPUDIRECT_RDMA})."
    )
    return quiet.model_copy(update={"explanation": PEERMEM_PURPOSE + why})


def _gpudirect_fix(facts: DriverFacts) -> Fix:
    """The GPUDirect path this host can get: DMA-BUF on an inbox RDMA stack, the kernel log's remedy, or a modprobe."""
    if facts.rdma.ofed is False:
        return Fix(
            kind="reboot",
            where=fix_where(facts.platform),
            summary="Give the NICs a GPUDirect path: the open NVIDIA kernel module (DMA-BUF) on this inbox RDMA stack",
            actions=(
                CommandAction(
                    description="install the open kernel module flavor of the same driver (e.g. nvidia-driver-XXX-open, "
                    "or the .run with --kernel-module-type=open), rebuild the initramfs and reboot; NCCL 2.19+ then "
                    "uses DMA-BUF. nvidia_peermem would need MLNX_OFED / DOCA-OFED's ib_core instead of the inbox one"
                ),
            ),
            risk="medium",
            verify="cat /proc/driver/nvidia/version shows 'Open Kernel Module'; NCCL_DEBUG=INFO shows 'DMABUF' or "
            "'GPU Direct RDMA Enabled'",
            revert="reinstall the proprietary module flavor",
            persist="the installed driver flavor persists",
        )
    if (cause := module_cause("nvidia_peermem", kernel_log(facts))).known:
        return cause_fix(facts, cause, "nvidia_peermem", "grep nvidia_peermem /proc/modules, or NCCL_DEBUG=INFO shows 'DMABUF'")
    built = {True: "", False: " (nvidia-peermem.ko is not in modules.dep: install/rebuild it first)", None: ""}
    return Fix(
        kind="runtime",
        where=fix_where(facts.platform),
        summary="Load nvidia_peermem and load it at boot" + built[facts.peermem_built],
        actions=(ModuleLoadAction(module="nvidia_peermem"),),
        risk="low",
        verify="grep nvidia_peermem /proc/modules; NCCL_DEBUG=INFO shows 'GPU Direct RDMA Enabled'",
        revert="modprobe -r nvidia_peermem",
        persist=module_persist("nvidia_peermem", facts.platform.image),
    )


def _internode_use(cross: Internode | None) -> tuple[Severity, str]:
    """(severity, why) of a missing GPUDirect path: low where no server talks to another node."""
    if cross is not None and cross.used:
        return "medium", f" The servers here talk to other nodes ({'; '.join(cross.signals[:3])}): medium."
    if cross is not None and cross.used is False:
        return "low", (
            f" None of the {cross.servers} server(s) here talks to another node (no multi-node flags, no NCCL_IB_*/"
            "NCCL_NET/FI_PROVIDER in their environment): nothing crosses the NICs today, so low; medium once the host "
            "joins multi-node or disaggregated serving."
        )
    return "medium", " No inference server found to tell whether traffic leaves the node: medium."


def judge_peermem(facts: DriverFacts) -> Finding:
    refs: tuple[str, ...] = (dir_ref(INFINIBAND), file_ref(MODULES))
    if facts.infiniband is None and facts.infiniband_error not in (None, "ENOENT"):
        return PEERMEM_CHECK.unknown(f"{INFINIBAND} not readable: {facts.infiniband_error}", evidence=refs[:1])
    rdma = facts.rdma
    left_out = management_text(rdma.management)
    if not facts.infiniband:
        quiet = PEERMEM_CHECK.not_applicable(f"no RDMA NIC ({INFINIBAND} has no entries{left_out})", evidence=refs)
        return quiet.model_copy(update={"explanation": PEERMEM_PURPOSE})
    nics = (describe_nics(rdma.nics) if rdma.nics else ", ".join(facts.infiniband)) + left_out
    refs = (*refs, *rdma.refs)
    if (none := _no_gpudirect(facts, nics, refs)) is not None:
        return none
    loaded = module_loaded(facts, "nvidia_peermem")
    if loaded is None:
        return modules_unknown(PEERMEM_CHECK, facts)
    if loaded:
        return PEERMEM_CHECK.ok(f"nvidia_peermem loaded; RDMA devices: {nics}", evidence=refs)
    if (fine := _peermem_not_needed(facts, nics, refs)) is not None:
        return fine
    if rdma.path == "unknown":
        why = f"{nics}; nvidia_peermem not loaded and whether DMA-BUF can serve is unknown ({rdma.path_text()})"
        return PEERMEM_CHECK.unknown(why, evidence=refs)
    cross = facts.internode
    severity, use = _internode_use(cross)
    return PEERMEM_CHECK.problem_at(
        severity,
        f"RDMA devices {nics} present; no GPUDirect RDMA path: {rdma.path_text()}",
        "nvidia_peermem loaded, or DMA-BUF (open kernel module, Linux 5.12+)",
        PEERMEM_PURPOSE + " Without either path inter-node traffic (multi-node tensor or pipeline parallelism, "
        "disaggregated prefill/decode KV transfers) is staged through host memory, cutting its bandwidth and adding "
        "latency. Single-node tensor parallelism is not affected." + use,
        _gpudirect_fix(facts),
        subjects=tuple(facts.infiniband),
        evidence=(*refs, *(cross.refs if cross else ())),
    )


NOUVEAU_CHECK = Check(
    "driver.nouveau",
    "nouveau driver",
    reads="`/proc/modules`",
    problem="nouveau loaded",
    fix="blacklist nouveau, rebuild the initramfs",
    kinds=("reboot",),
    premises=(premises.PLATFORM_FIX, premises.MODULES),
)


def judge_nouveau(facts: DriverFacts) -> Finding:
    loaded = module_loaded(facts, "nouveau")
    if loaded is None:
        return modules_unknown(NOUVEAU_CHECK, facts)
    if not loaded:
        return NOUVEAU_CHECK.ok("nouveau not loaded", evidence=(file_ref(MODULES),))
    conf = "/etc/modprobe.d/blacklist-nouveau.conf"
    fix = Fix(
        kind="reboot",
        where=fix_where(facts.platform),
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
    return NOUVEAU_CHECK.problem_at(
        "high",
        "nouveau loaded",
        "nouveau not loaded",
        "The open-source nouveau driver has claimed (or may claim) NVIDIA GPUs; the NVIDIA driver cannot bind a GPU "
        "nouveau holds, so those GPUs are missing for CUDA.",
        fix,
        evidence=(file_ref(MODULES),),
    )


UVM_CHECK = Check(
    "driver.uvm",
    "nvidia_uvm module and /dev/nvidia-uvm",
    reads="`/proc/modules`, `/dev`, `/proc/devices`",
    problem="nvidia_uvm not loaded or `/dev/nvidia-uvm` missing (CUDA init fails; containers bind-mount it at start)",
    fix="what the kernel log says refused it (rebuild the modules on a symbol mismatch); else `modprobe nvidia_uvm`; "
    "`nvidia-modprobe -c0 -u`",
    kinds=("runtime",),
    premises=(premises.PLATFORM_FIX, premises.MODULES),
)


UVM_NODES = CommandAction(
    description="Create the device nodes (/dev/nvidia-uvm, /dev/nvidia-uvm-tools)", argv=("nvidia-modprobe", "-c0", "-u")
)


def _uvm_gap(facts: DriverFacts, loaded: bool, cause: Cause | None, feeds_containers: bool) -> tuple[Fix, str, Severity]:
    """(fix, observed, severity) of what is missing: the module, refused for the kernel log's reason or never loaded,
    or only its device node."""
    where = fix_where(facts.platform)
    if cause is not None and cause.known:
        fix = cause_fix(facts, cause, "nvidia_uvm", "grep -w nvidia_uvm /proc/modules; ls -l /dev/nvidia-uvm")
        return fix, f"nvidia_uvm not loaded; kernel log: {cause.line}", "high"
    if not loaded:
        fix = Fix(
            kind="runtime",
            where=where,
            summary="Load nvidia_uvm (and create its device node); load it at boot",
            actions=(ModuleLoadAction(module="nvidia_uvm"), UVM_NODES),
            risk="low",
            verify="grep -w nvidia_uvm /proc/modules; ls -l /dev/nvidia-uvm",
            revert="modprobe -r nvidia_uvm",
            persist=module_persist("nvidia_uvm", facts.platform.image),
        )
        return fix, "nvidia_uvm not loaded (the kernel log names no reason: nothing loaded it)", "high"
    if facts.cdi.given:
        fix = regenerate_spec_fix(facts.cdi, "/dev/nvidia-uvm")
        return fix, "nvidia_uvm loaded (the host's kernel), /dev/nvidia-uvm absent in this CDI container", "high"
    fix = Fix(
        kind="runtime",
        where=where,
        summary="Create /dev/nvidia-uvm" + (" before the containers start" if feeds_containers else ""),
        actions=(UVM_NODES,),
        risk="low",
        verify="ls -l /dev/nvidia-uvm",
        revert="none needed (device nodes are recreated at boot)",
        persist="run nvidia-modprobe -c0 -u from a oneshot systemd unit before the containers start"
        if feeds_containers
        else "CUDA creates it on first use through nvidia-modprobe",
    )
    return fix, "nvidia_uvm loaded but /dev/nvidia-uvm absent", "high" if feeds_containers else "low"


def _uvm_why(cause: Cause | None, feeds_containers: bool) -> str:
    return (
        f"nvidia_uvm did not load for the reason the kernel log gives: {cause.cause}; modprobe fails the same way until "
        f"that is dealt with ({cause.source}). "
        if cause is not None and cause.known
        else ""
    ) + (
        "CUDA needs the nvidia_uvm module and its /dev/nvidia-uvm node (unified memory, and the CUDA runtime's own "
        "initialization): without them cudaInit fails with 'no CUDA-capable device' or error 999."
        + (
            " Containers bind-mount /dev/nvidia-uvm at start: if it is missing then, CUDA fails inside them until "
            "they are restarted."
            if feeds_containers
            else ""
        )
    )


def _uvm_without_nvidia(facts: DriverFacts, refs: list[str]) -> Finding:
    """nvidia_uvm cannot load before nvidia.ko: why nvidia.ko did not is another check's."""
    base = module_cause("nvidia", kernel_log(facts))
    said = f"the kernel log's reason: {base.line} ({base.cause})" if base.known else f"cause {base.cause}"
    return UVM_CHECK.unknown(
        f"nvidia_uvm not loaded, and neither is nvidia.ko it depends on: loading nvidia_uvm cannot work until "
        f"nvidia.ko loads; {said} (see {owner_of(base)}; what tells: {base.tell})",
        evidence=[*refs, DMESG_REF],
    )


def judge_uvm(facts: DriverFacts) -> Finding:
    refs = [file_ref(MODULES), dir_ref("/dev"), file_ref("/proc/devices")]
    loaded = module_loaded(facts, "nvidia_uvm")
    if loaded is None:
        return modules_unknown(UVM_CHECK, facts)
    if not facts.gpus and not loaded:
        return UVM_CHECK.not_applicable("no NVIDIA GPU on this host", evidence=refs)
    if facts.install.origin.origin == "vfio" and not loaded:
        return passed_through(UVM_CHECK, facts)
    if not loaded and module_loaded(facts, "nvidia") is False:
        return _uvm_without_nvidia(facts, refs)
    node = None if facts.dev is None else "nvidia-uvm" in facts.dev
    if loaded and node is not False:
        major = facts.proc_devices is not None and "nvidia-uvm" in facts.proc_devices
        node_seen = "/dev/nvidia-uvm present" if node else "/dev not listable, node not checked"
        observed = "nvidia_uvm loaded" + (" (nvidia-uvm major registered)" if major else "") + f"; {node_seen}"
        return UVM_CHECK.ok(observed, evidence=refs)
    feeds_containers = bool(facts.platform.lxc_configs) or facts.platform.in_container
    cause = module_cause("nvidia_uvm", kernel_log(facts)) if not loaded else None
    fix, observed, severity = _uvm_gap(facts, loaded, cause, feeds_containers)
    if cause is not None and cause.known:
        refs.append(DMESG_REF)
    return UVM_CHECK.problem_at(
        severity,
        observed,
        "nvidia_uvm loaded and /dev/nvidia-uvm present",
        _uvm_why(cause, feeds_containers),
        fix,
        subjects=tuple(g.label for g in facts.gpus),
        evidence=refs,
    )
