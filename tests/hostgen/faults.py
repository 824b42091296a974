"""Fault injection: each helper returns a changed COPY of a host description (specs are frozen).

``write(faults.fabricmanager_down(ARCHETYPES["hgx-h100-jammy"]), dir)`` is the HGX host with its fabric manager
failed. Helpers change the facts a real fault changes together (a driver upgraded without a reboot changes the
user-space libraries, NVML, nvidia-smi, the kernel log and the fabric manager at once), never one file alone.
"""

from __future__ import annotations

import posixpath
from dataclasses import replace
from typing import TYPE_CHECKING

from tests.hostgen import imex
from tests.hostgen.catalog import GPUS
from tests.hostgen.procs import Proc, write_proc
from tests.hostgen.rdma import NVLSM, NVLSM_LOG, nvlsm_log
from tests.hostgen.spec import Fault, HostSpec, MigInstance, ProcessSpec
from tests.hostgen.units import unit_failed

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.hostgen.build import Built


def _named(spec: HostSpec, suffix: str, summary: str) -> HostSpec:
    return replace(spec, name=f"{spec.name}+{suffix}", summary=f"{spec.summary}; FAULT: {summary}")


def fabricmanager_down(spec: HostSpec) -> HostSpec:
    """nvidia-fabricmanager failed: the NVSwitch fabric is not programmed (NVML fabric state not started)."""
    return _named(
        replace(spec, driver=replace(spec.driver, fabricmanager="failed")), "fabricmanager-down", "nvidia-fabricmanager failed"
    )


def driver_upgraded_without_reboot(spec: HostSpec, new: str = "550.144.03") -> HostSpec:
    """Packages upgraded to ``new`` while the old kernel module stays loaded: NVML fails with a version mismatch,
    the fabric manager (upgraded with the driver) refuses to start, DKMS and modinfo show the new version."""
    driver = replace(
        spec.driver, userspace=new, fabricmanager_version=new, fabricmanager="failed" if spec.driver.fabricmanager else None
    )
    return _named(replace(spec, driver=driver), "upgraded-no-reboot", f"driver packages upgraded to {new} without a reboot")


def p2p_driver(spec: HostSpec, status: str = "OK") -> HostSpec:
    """Every GPU pair reports ``status`` (NVML name): ``OK`` on GeForce cards is a driver built with P2P (the
    tinygrad / aikitoria open-gpu-kernel-modules P2P patch that 4090 and 5090 rigs run)."""
    return _named(replace(spec, gpus=replace(spec.gpus, p2p=status)), f"p2p-{status.lower()}", f"NVML P2P status {status}")


def peermem_unloaded(spec: HostSpec) -> HostSpec:
    return _named(replace(spec, driver=replace(spec.driver, peermem=False)), "no-peermem", "nvidia_peermem not loaded")


def governor(spec: HostSpec, name: str = "powersave", epp: str = "balance_performance") -> HostSpec:
    return _named(
        replace(spec, cpu=replace(spec.cpu, governor=name, epp=epp)), f"governor-{name}", f"CPU governor {name}, EPP {epp}"
    )


def scaling_driver(spec: HostSpec, driver: str) -> HostSpec:
    """Another cpufreq driver (``acpi-cpufreq`` on an AMD host without ``amd_pstate=``...)."""
    return _named(replace(spec, cpu=replace(spec.cpu, freq_driver=driver)), f"cpufreq-{driver}", f"cpufreq driver {driver}")


def shm(spec: HostSpec, size: int = 64 * 2**20) -> HostSpec:
    """The container's /dev/shm at ``size`` bytes (64 MiB: Docker's and containerd's default)."""
    return _named(
        replace(spec, platform=replace(spec.platform, shm_bytes=size)), f"shm-{size >> 20}m", f"/dev/shm {size >> 20} MiB"
    )


def cpu_throttled(spec: HostSpec, cpus: float = 4, throttled: tuple[int, int] = (81234, 91234)) -> HostSpec:
    platform = replace(spec.platform, cpu_quota=cpus, throttled=throttled)
    return _named(
        replace(spec, platform=platform),
        f"cpu-quota-{cpus:g}",
        f"CPU quota {cpus:g} CPUs, throttled {throttled[0]}/{throttled[1]} periods",
    )


def mig_pending(spec: HostSpec, gpus: tuple[int, ...] = (0,)) -> HostSpec:
    return _named(
        replace(spec, gpus=replace(spec.gpus, mig_pending=gpus)), "mig-pending", f"MIG mode change pending on GPUs {gpus}"
    )


def mig_unused(spec: HostSpec, gpus: tuple[int, ...] = (0, 1)) -> HostSpec:
    """MIG enabled on ``gpus`` with one whole-GPU (7g) instance each and nothing running on them (left on by mistake)."""
    profiles = GPUS[spec.gpus.model].mig_profiles
    whole = profiles[-1][0] if profiles else "7g.80gb"
    mig = list(spec.gpus.mig) + [None] * (spec.gpus.count - len(spec.gpus.mig))
    for g in gpus:
        mig[g] = (MigInstance(whole, 0),)
    processes = tuple(p for p in spec.processes if not set(p.gpus) & set(gpus))
    return _named(
        replace(spec, gpus=replace(spec.gpus, mig=tuple(mig)), processes=processes),
        "mig-unused",
        f"MIG on GPUs {gpus} with nothing using it",
    )


def nvlink_down(spec: HostSpec, links: tuple[tuple[int, int], ...] = ((3, 5),)) -> HostSpec:
    return _named(replace(spec, gpus=replace(spec.gpus, nvlink_down=links)), "nvlink-down", f"NVLinks {links} inactive")


def link_degraded(spec: HostSpec, gpu: int = 2, gen: int = 4, width: int = 8) -> HostSpec:
    down = (*spec.gpus.link_down, (gpu, gen, width))
    return _named(
        replace(spec, gpus=replace(spec.gpus, link_down=down)),
        f"gpu{gpu}-gen{gen}x{width}",
        f"GPU{gpu} link trained at Gen{gen} x{width}",
    )


def acs_redirect(spec: HostSpec) -> HostSpec:
    return _named(
        replace(spec, acs_redirect=True, iommu=spec.iommu or "identity"),
        "acs-redirect",
        "ACS redirect on switch downstream ports",
    )


def iommu_translated(spec: HostSpec) -> HostSpec:
    cmdline = spec.os.cmdline.replace("iommu=pt", "").strip() + (
        " intel_iommu=on" if spec.cpu.vendor == "intel" else " amd_iommu=on"
    )
    os = replace(spec.os, cmdline=cmdline.strip())
    return _named(
        replace(spec, iommu="DMA-FQ", acs_redirect=True, os=os), "iommu-dma", "IOMMU translating DMA (DMA-FQ) with ACS redirect"
    )


def bar1_small(spec: HostSpec) -> HostSpec:
    return _named(replace(spec, gpus=replace(spec.gpus, bar1_small=True)), "bar1-256m", "BAR1 256 MiB (Resizable BAR off)")


def max_read_request(spec: HostSpec, size: int = 512) -> HostSpec:
    return _named(replace(spec, gpus=replace(spec.gpus, max_read_request=size)), f"mrrs-{size}", f"GPU MaxReadReq {size} bytes")


def xid(
    spec: HostSpec, gpu: int = 0, code: int = 79, text: str = "pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
) -> HostSpec:
    xids = (*spec.gpus.xids, (gpu, code, text))
    return _named(replace(spec, gpus=replace(spec.gpus, xids=xids)), f"xid{code}", f"Xid {code} on GPU{gpu}")


def power_capped(spec: HostSpec, watts: int = 400) -> HostSpec:
    limits = tuple(watts for _ in range(spec.gpus.count))
    return _named(replace(spec, gpus=replace(spec.gpus, power_limit_w=limits)), f"power-{watts}w", f"GPU power limit {watts} W")


def persistence_off(spec: HostSpec) -> HostSpec:
    driver = replace(spec.driver, persistence=False, persistenced="inactive")
    return _named(replace(spec, driver=driver), "persistence-off", "persistence mode off, nvidia-persistenced inactive")


def thp_always(spec: HostSpec) -> HostSpec:
    return _named(
        replace(spec, os=replace(spec.os, thp="always", thp_defrag="always")), "thp-always", "THP always with synchronous defrag"
    )


def numa_balancing_on(spec: HostSpec) -> HostSpec:
    return _named(replace(spec, os=replace(spec.os, numa_balancing=1)), "numa-balancing", "kernel.numa_balancing=1")


def server_env(spec: HostSpec, **env: str) -> HostSpec:
    """Extra environment variables on every server process (``NCCL_P2P_DISABLE="1"``...)."""
    processes = tuple(replace(p, env=(*p.env, *env.items())) for p in spec.processes)
    shown = ",".join(f"{k}={v}" for k, v in env.items())
    return _named(replace(spec, processes=processes), "env-" + "-".join(k.lower() for k in env), f"server environment {shown}")


def ib_disabled_on_one_node(spec: HostSpec) -> HostSpec:
    """``NCCL_IB_DISABLE=1`` on servers that serve from this node alone: their environment names no NCCL network
    (no ``NCCL_IB_HCA``, ``NCCL_SOCKET_IFNAME``) and no flag of theirs reaches another node."""
    network = ("NCCL_IB_HCA", "NCCL_SOCKET_IFNAME")
    processes = tuple(
        replace(p, env=(*[(k, v) for k, v in p.env if k not in network], ("NCCL_IB_DISABLE", "1"))) for p in spec.processes
    )
    return _named(replace(spec, processes=processes), "ib-disabled-one-node", "NCCL_IB_DISABLE=1 on single-node servers")


def nccl_topo_unset(spec: HostSpec) -> HostSpec:
    """An Azure ND guest from a plain Marketplace image: no /opt/microsoft topology file, no /etc/nccl.conf."""
    return _named(replace(spec, nccl_conf=None, nccl_topo=None), "no-nccl-topo", "no NCCL topology file configured")


def server_environ_unreadable(spec: HostSpec) -> HostSpec:
    """The servers' /proc/PID/environ cannot be read (an audit without SYS_PTRACE on another user's processes)."""

    def apply(built: Built) -> None:
        argvs = {p.argv for p in built.spec.processes}
        pids = {row[0] for rows in built.gpu_process_map.values() for row in rows}
        pids |= {pid for pid, proc in built.procs.items() if proc.argv in argvs}
        for pid in sorted(pids):
            built.tree.deny(f"/proc/{pid}/environ")

    return _named(
        replace(spec, faults=(*spec.faults, Fault("environ-unreadable", "server environments unreadable", apply))),
        "environ-unreadable",
        "the servers' environments are unreadable",
    )


def memlock(spec: HostSpec, value: str = "65536") -> HostSpec:
    processes = tuple(replace(p, memlock=value) for p in spec.processes)
    platform = replace(spec.platform, memlock=value)
    return _named(replace(spec, processes=processes, platform=platform), f"memlock-{value}", f"RLIMIT_MEMLOCK {value} bytes")


def no_server(spec: HostSpec) -> HostSpec:
    return _named(replace(spec, processes=()), "idle", "no inference server running")


def server(spec: HostSpec, process: ProcessSpec) -> HostSpec:
    return _named(replace(spec, processes=(*spec.processes, process)), "extra-process", "another process holds GPU memory")


def legacy_machine_type(spec: HostSpec) -> HostSpec:
    """A q35 guest of a machine type before QEMU 4.0 (pc-q35-3.1): its root ports advertise 2.5 GT/s x1, so the
    guest kernel reports each GPU's bandwidth "limited by" the emulated port and NVML's maxima "in this system" are
    Gen1 x1, while the GPUs' physical links are untouched."""
    dmi = tuple((k, "pc-q35-3.1" if k == "product_version" else v) for k, v in spec.platform.dmi)
    platform = replace(spec.platform, vm_root_port=(1, 1), dmi=dmi)
    gts = {3: 8.0, 4: 16.0, 5: 32.0}[GPUS[spec.gpus.model].pcie_gen]
    lines = tuple(
        f"pci 0000:{index + 1:02x}:00.0: 2.000 Gb/s available PCIe bandwidth, limited by 2.5 GT/s PCIe x1 link at "
        f"0000:00:10.{index} (capable of {gts * 16 * 128 / 130:.3f} Gb/s with {gts:.1f} GT/s PCIe x16 link)"
        for index in range(spec.gpus.count)
    )
    return _named(
        replace(spec, platform=platform, dmesg_extra=(*spec.dmesg_extra, *lines)),
        "pc-q35-3.1",
        "machine type pc-q35-3.1: emulated root ports at 2.5 GT/s x1",
    )


def dockerenv_in_image(spec: HostSpec) -> HostSpec:
    """An empty ``/.dockerenv`` left in a machine or VM image built with Docker (``docker export`` into a disk
    image): the system boots from its disk with the kernel's devtmpfs, it is no container."""

    def apply(built: Built) -> None:
        built.tree.file("/.dockerenv", "")

    fault = Fault("dockerenv-in-image", "/.dockerenv left in the boot image", apply)
    return _named(replace(spec, faults=(*spec.faults, fault)), "dockerenv", "an empty /.dockerenv in the boot image")


def lxc_cgroup_only(spec: HostSpec) -> HostSpec:
    """Inside an LXC/Incus container whose only sign is its cgroup (``/dev/.lxc-boot-id`` not bound, PID 1's
    environment unreadable to the audit's user)."""

    def apply(built: Built) -> None:
        for pid in ("1", built.tree.links.get("/proc/self", "self")):
            built.tree.file(f"/proc/{pid}/cgroup", "0::/lxc.payload.ai-node/init.scope\n")
        built.tree.remove("/proc/1/environ")
        built.tree.deny("/proc/1/environ")

    fault = Fault("lxc-cgroup-only", "an LXC container known by its cgroup alone", apply)
    return _named(replace(spec, faults=(*spec.faults, fault)), "lxc-cgroup", "LXC container, cgroup the only sign")


def vgpu_unlicensed(spec: HostSpec) -> HostSpec:
    """A vGPU guest whose nvidia-gridd holds no licence (no client configuration token, or the license server out of
    reach past the lease): NVML's licensable feature unlicensed, nvidia-smi -q 'Unlicensed (Restricted)'."""
    return _named(
        replace(spec, driver=replace(spec.driver, vgpu_license="unlicensed")), "vgpu-unlicensed", "vGPU licence not acquired"
    )


def nvlink_bridge_unseated(spec: HostSpec, pair: int = 1) -> HostSpec:
    """The NVLink bridges of bridged pair ``pair`` not seated (or removed): every link of both GPUs inactive, the
    pair peers over PCIe."""
    a, b = spec.gpus.nvlink_bridges[pair]
    links = GPUS[spec.gpus.model].nvlinks
    down = tuple((g, k) for g in (a, b) for k in range(links))
    return _named(
        replace(spec, gpus=replace(spec.gpus, nvlink_down=down)), f"bridge-{a}-{b}-unseated", f"NVLink bridge GPU{a}-GPU{b}"
    )


def tp_across_pairs(spec: HostSpec) -> HostSpec:
    """One server at TP 4 over both bridged pairs of a 4-GPU host (its all-reduce crosses the pairs over PCIe)."""
    first = spec.processes[0]
    argv = tuple(
        "4" if prev == "--tensor-parallel-size" else arg for prev, arg in zip(("", *first.argv), first.argv, strict=False)
    )
    return _named(replace(spec, processes=(replace(first, argv=argv, gpus=(0, 1, 2, 3)),)), "tp4-across-pairs", "vLLM at TP 4")


def on_root_bus(spec: HostSpec) -> HostSpec:
    """A q35 guest's GPUs placed on the root bus (pcie.0, ``-device vfio-pci,bus=pcie.0``) instead of behind root
    ports: vfio shows them as integrated endpoints whose Link Status reads zero in sysfs; NVML reads the real link."""
    platform = replace(spec.platform, vm_root_port=(0, 0))
    return _named(replace(spec, platform=platform), "root-bus", "GPUs on the guest's root bus")


def cppc_off(spec: HostSpec) -> HostSpec:
    """CPPC disabled in the BIOS: no ``_CPC`` objects, so no ``cpuN/acpi_cppc`` and acpi-cpufreq drives the cores (the
    CPU's ``cppc`` feature flag stays: it is CPUID's, not the firmware's)."""
    cpu = replace(spec.cpu, cppc=False, freq_driver="acpi-cpufreq")
    return _named(replace(spec, cpu=cpu), "cppc-off", "CPPC off in the BIOS (no acpi_cppc)")


TUNED_CPU = {
    "balanced": ("powersave", "balance_performance"),
    "throughput-performance": ("performance", "performance"),
    "accelerator-performance": ("performance", "performance"),
}
"""What a profile leaves the cores at under intel_pstate (balanced: ``conservative|powersave``, of which intel_pstate
offers powersave; its EPP ``balance_performance``)."""


def tuned_profile(spec: HostSpec, profile: str = "balanced") -> HostSpec:
    """tuned switched to ``profile`` (``tuned-adm profile balanced``): the governor and EPP it sets with it."""
    governor, epp = TUNED_CPU[profile]
    changed = replace(spec, os=replace(spec.os, tuned=profile), cpu=replace(spec.cpu, governor=governor, epp=epp))
    return _named(changed, f"tuned-{profile}", f"tuned profile {profile} (governor {governor}, EPP {epp})")


def persistence_by_unit(spec: HostSpec) -> HostSpec:
    """nvidia-persistenced active but started by its unit with ``--no-persistence-mode``: the daemon runs and
    persistence mode is off on every GPU."""
    driver = replace(
        spec.driver,
        persistence=False,
        persistenced="active",
        persistenced_args="--user nvidia-persistenced --no-persistence-mode --verbose",
    )
    return _named(replace(spec, driver=driver), "persistence-by-unit", "nvidia-persistenced run with --no-persistence-mode")


def proprietary_on_blackwell(spec: HostSpec) -> HostSpec:
    """The proprietary kernel module installed on Blackwell GPUs, which only the open modules drive: the module's probe
    refuses every GPU (the kernel log says why), nvidia.ko does not stay loaded, NVML finds no driver. The refusal
    follows the driver's message ('requires use of the NVIDIA open kernel modules'); the probe's follow-up lines are
    not shown by a public source read here."""

    def apply(built: Built) -> None:
        tree = built.tree
        _nvidia_ko_not_loaded(built)
        device = GPUS[spec.gpus.model].device_id
        lines = [
            f"NVRM: The NVIDIA GPU {g.bdf} (PCI ID: 10de:{device:04x}) installed in this system requires use of the "
            "NVIDIA open kernel modules."
            for g in built.gpu_states_all
        ]
        lines += [
            f"NVRM: The NVIDIA probe routine failed for {len(lines)} device(s).",
            "NVRM: None of the NVIDIA devices were initialized.",
        ]
        dmesg = tree.commands.get(("dmesg",))
        if dmesg is not None and "stdout" in dmesg:
            dmesg["stdout"] += "".join(f"[   14.{k + 100:06d}] {line}\n" for k, line in enumerate(lines))

    fault = Fault("proprietary-on-blackwell", "the proprietary module refuses Blackwell GPUs", apply)
    changed = replace(spec, driver=replace(spec.driver, open=False), faults=(*spec.faults, fault))
    return _named(changed, "proprietary", "the proprietary kernel module on Blackwell GPUs")


def init_on_alloc_default(spec: HostSpec) -> HostSpec:
    """``init_on_alloc=0`` dropped from the boot line: the kernel's default (Ubuntu's: zero every allocation)."""
    words = " ".join(w for w in spec.os.cmdline.split() if not w.startswith("init_on_alloc="))
    return _named(replace(spec, os=replace(spec.os, cmdline=words)), "init-on-alloc", "init_on_alloc=0 not on the boot line")


def tuned_thp_defrag(spec: HostSpec) -> HostSpec:
    """A custom tuned profile (``/etc/tuned/llm-serving``, including throughput-performance) that sets THP's defrag to
    always: page faults stall in direct compaction (compact_stall grows), and tuned applies the setting again on every
    restart."""

    def apply(built: Built) -> None:
        tree = built.tree
        tree.file(
            "/etc/tuned/llm-serving/tuned.conf",
            "[main]\nsummary=LLM serving\ninclude=throughput-performance\n\n[vm]\ntransparent_hugepage.defrag=always\n",
        )
        vmstat = tree.files.get("/proc/vmstat", b"").decode()
        tree.file("/proc/vmstat", vmstat.replace("compact_stall 0\n", "compact_stall 18234\n"))

    fault = Fault("tuned-thp-defrag", "a tuned profile sets THP defrag always", apply)
    changed = replace(
        spec, os=replace(spec.os, tuned="llm-serving", thp="always", thp_defrag="always"), faults=(*spec.faults, fault)
    )
    return _named(changed, "tuned-thp-defrag", "tuned profile llm-serving sets transparent_hugepage.defrag=always")


def tuned_force_latency_child(spec: HostSpec, value: str = "cstate.id_no_zero:1|3") -> HostSpec:
    """rigaudit's own power.cstates fix applied on a host run by tuned: the child profile
    ``/etc/tuned/rigaudit-performance`` (including the active profile, ``[cpu] force_latency=cstate.id_no_zero:1|3``,
    or ``value``: a number of microseconds) selected. tuned holds /dev/cpu_dma_latency; the deep states stay enabled in
    sysfs (force_latency is a PM QoS request, not a ``disable`` write)."""
    base = spec.os.tuned or "throughput-performance"

    def apply(built: Built) -> None:
        built.tree.file(
            "/etc/tuned/rigaudit-performance/tuned.conf",
            f"[main]\nsummary=rigaudit\ninclude={base}\n\n[cpu]\nforce_latency={value}\n",
        )

    fault = Fault("tuned-force-latency", f"a tuned child profile holds force_latency={value}", apply)
    changed = replace(spec, os=replace(spec.os, tuned="rigaudit-performance"), faults=(*spec.faults, fault))
    suffix = "tuned-force-latency" if value.startswith("cstate.") else f"tuned-force-latency-{value}"
    return _named(changed, suffix, f"tuned child profile rigaudit-performance with [cpu] force_latency={value}")


def tuned_stopped(spec: HostSpec) -> HostSpec:
    """tuned stopped (``systemctl stop tuned``) with its last profile still named in /etc/tuned/active_profile: nothing
    holds what the profile sets (no PM QoS request for force_latency)."""

    def apply(built: Built) -> None:
        built.tree.command(("systemctl", "is-active", "tuned"), "inactive\n", exit_code=3)

    fault = Fault("tuned-stopped", "tuned stopped", apply)
    return _named(replace(spec, faults=(*spec.faults, fault)), "tuned-stopped", "tuned stopped, its profile still named")


# -- failures whose reason the component itself gives (issue 33: causes before fixes) --------------------------------


def _nvidia_ko_not_loaded(built: Built) -> None:
    """nvidia.ko refused at load: no /proc/driver/nvidia or /sys/module/nvidia, NVML finds no driver, no nvidia
    module in /proc/modules."""
    tree = built.tree
    for path in [p for p in tree.files if p.startswith(("/proc/driver/nvidia", "/sys/module/nvidia"))]:
        tree.remove(path)
    for key in [k for k in tree.nvml if k[0] != "nvmlInit"]:
        del tree.nvml[key]
    tree.call("nvmlInit", (), error="DRIVER_NOT_LOADED")
    modules = tree.files.get("/proc/modules", b"").decode()
    tree.file("/proc/modules", "".join(line for line in modules.splitlines(True) if not line.startswith("nvidia")))


def _add_dmesg(built: Built, lines: list[str], at: float = 15.0) -> None:
    dmesg = built.tree.commands.get(("dmesg",))
    if dmesg is not None and "stdout" in dmesg:
        dmesg["stdout"] += "".join(f"[{at + k / 1000:12.6f}] {line}\n" for k, line in enumerate(lines))


def _fabric_failed(spec: HostSpec, suffix: str, summary: str, apply: Callable[[Built], None]) -> HostSpec:
    changed = replace(
        spec, driver=replace(spec.driver, fabricmanager="failed"), faults=(*spec.faults, Fault(suffix, summary, apply))
    )
    return _named(changed, suffix, summary)


FM_UNIT = "NVIDIA fabric manager service"


def fabricmanager_version_refused(spec: HostSpec, version: str = "550.127.08") -> HostSpec:
    """The fabric manager package of another version than the loaded driver (installed on its own, apt upgraded it):
    it checks the driver's version at start and aborts. The message is nv-fabricmanager's as printed in public reports
    (github.com/NVIDIA/gpu-operator/issues/544, github.com/siderolabs/pkgs/issues/720); build.py writes it to
    /var/log/fabricmanager.log too."""
    loaded = spec.driver.version

    def apply(built: Built) -> None:
        message = (
            f"fabric manager NVIDIA GPU driver interface version {version} don't match with driver version {loaded}. "
            "Please update with matching NVIDIA driver package."
        )
        unit_failed(built, "nvidia-fabricmanager", FM_UNIT, [("nv-fabricmanager[2314]", message)])

    changed = replace(spec, driver=replace(spec.driver, fabricmanager="failed", fabricmanager_version=version))
    fault = Fault("fm-version-refused", f"fabric manager {version} refuses driver {loaded}", apply)
    return _named(
        replace(changed, faults=(*changed.faults, fault)), "fm-version-refused", f"fabric manager {version} vs {loaded}"
    )


def nvlsm_without_ib_umad(spec: HostSpec) -> HostSpec:
    """NVLink 5 (HGX B200): ib_umad not loaded, so NVLSM cannot open the NVSwitch management port and the fabric
    manager's start fails. NVLSM's message is libibumad's as shown by github.com/siderolabs/docs/pull/581; the prefix
    it carries in the unit's journal (the start script's name) is not shown by a public source read here."""

    def apply(built: Built) -> None:
        message = (
            "ibwarn: [2316] umad_init: can't read ABI version from /sys/class/infiniband_mad/abi_version (No such file "
            "or directory): is ib_umad module loaded?"
        )
        unit_failed(built, "nvidia-fabricmanager", FM_UNIT, [("nvidia-fabricmanager-start.sh[2310]", message)])
        modules = built.tree.files.get("/proc/modules", b"").decode()
        built.tree.file("/proc/modules", "".join(ln for ln in modules.splitlines(True) if not ln.startswith("ib_umad ")))

    return _fabric_failed(spec, "no-ib-umad", "ib_umad not loaded: NVLSM cannot start", apply)


NOTHING_TO_DO = (
    "request to query NVSwitch device information from NVSwitch driver failed with error:WARNING Nothing to do "
    "[NV_WARN_NOTHING_TO_DO]"
)
"""nv-fabricmanager's line as printed (github.com/NVIDIA/gpu-operator/issues/610); NVIDIA's Fabric Manager user guide
(release 2.3) names this error for NVLink 5 systems whose NVLSM is not running."""


def nvlsm_not_running(spec: HostSpec) -> HostSpec:
    """NVLink 5 (HGX B200) with the fabric manager started without NVLSM (its package missing): FM finds nothing to
    do."""

    def apply(built: Built) -> None:
        unit_failed(built, "nvidia-fabricmanager", FM_UNIT, [("nv-fabricmanager[2314]", NOTHING_TO_DO)])
        for path in (NVLSM, NVLSM_LOG):
            built.tree.remove(path)

    return _fabric_failed(spec, "no-nvlsm", "NVLSM not running: the fabric manager has nothing to do", apply)


def nvlsm_guid_not_found(spec: HostSpec, guid: str = "0xcc40f3030027f630") -> HostSpec:
    """NVLink 5 with NVLSM installed but given a port GUID no local port owns (an override of the fabric manager's
    unit pins another host's management port): NVLSM exits at bind, and the fabric manager, with no NVLSM to talk
    to, finds nothing to do. NVLSM's lines are OpenSM's (linux-rdma/opensm, libvendor/osm_vendor_ibumad.c: ERR 5422,
    ERR 5424), in its own log; the GUID is the HGX B200 port of github.com/siderolabs/extensions/issues/893."""

    def apply(built: Built) -> None:
        unit_failed(built, "nvidia-fabricmanager", FM_UNIT, [("nv-fabricmanager[2314]", NOTHING_TO_DO)])
        log = built.tree.text(NVLSM_LOG) or ""
        log = log.replace(nvlsm_log(built)[1].rsplit(" ", 1)[-1], guid)
        lines = [
            *log.splitlines()[:2],
            "Nov 30 09:58:11 499021 [7F1C2E9FF640] 0x01 -> osm_vendor_open_port: ERR 5422: Unable to find requested "
            f"CA guid {guid}",
            f"Nov 30 09:58:11 499030 [7F1C2E9FF640] 0x01 -> osm_vendor_bind: ERR 5424: Unable to open port {guid}",
        ]
        built.tree.file(NVLSM_LOG, "\n".join(lines) + "\n")

    return _fabric_failed(spec, "nvlsm-guid", f"NVLSM given port GUID {guid}, which no local port owns", apply)


def nvlsm_log_unreadable(spec: HostSpec) -> HostSpec:
    """NVLink 5 with NVLSM installed and not running, the fabric manager finding nothing to do, and NVLSM's log not
    readable by the auditor: why NVLSM stopped is unknown."""

    def apply(built: Built) -> None:
        unit_failed(built, "nvidia-fabricmanager", FM_UNIT, [("nv-fabricmanager[2314]", NOTHING_TO_DO)])
        built.tree.remove(NVLSM_LOG)
        built.tree.unreadable[NVLSM_LOG] = "EACCES"

    return _fabric_failed(spec, "nvlsm-log-unreadable", "NVLSM stopped; its log is not readable", apply)


def fabricmanager_masked(spec: HostSpec) -> HostSpec:
    """nvidia-fabricmanager masked (``systemctl mask``): systemd never starts it; status says so (systemd 249+)."""

    def apply(built: Built) -> None:
        unit = "nvidia-fabricmanager"
        tree = built.tree
        tree.command(("systemctl", "is-active", unit), "inactive\n", exit_code=3)
        tree.command(("journalctl", "-u", unit, "-n", "50", "--no-pager"), "-- No entries --\n")
        status = f"○ {unit}.service\n     Loaded: masked (Reason: Unit {unit}.service is masked.)\n     Active: inactive (dead)\n"
        tree.command(("systemctl", "status", unit, "--no-pager"), status, exit_code=3)

    changed = replace(spec, driver=replace(spec.driver, fabricmanager="inactive"))
    fault = Fault("fm-masked", "nvidia-fabricmanager masked", apply)
    return _named(replace(changed, faults=(*changed.faults, fault)), "fm-masked", "nvidia-fabricmanager masked")


def fabricmanager_unexplained(spec: HostSpec) -> HostSpec:
    """The fabric manager failed and its journal gives no reason rigaudit knows (it was killed): the cause is unknown."""

    def apply(built: Built) -> None:
        unit_failed(built, "nvidia-fabricmanager", FM_UNIT, [("systemd[1]", "nvidia-fabricmanager.service: Killed.")])

    return _fabric_failed(spec, "fm-killed", "nvidia-fabricmanager killed, no reason logged", apply)


def persistenced_no_devices(spec: HostSpec) -> HostSpec:
    """nvidia-persistenced failed: it could not open /dev/nvidia* as its user. The messages are the daemon's own
    (github.com/NVIDIA/nvidia-persistenced, nvpd.c)."""

    def apply(built: Built) -> None:
        unit_failed(
            built,
            "nvidia-persistenced",
            "NVIDIA Persistence Daemon",
            [
                ("nvidia-persistenced[887]", "Started (887)"),
                (
                    "nvidia-persistenced[887]",
                    "Failed to query NVIDIA devices. Please ensure that the NVIDIA device files (/dev/nvidia*) exist, "
                    "and that user 991 has read and write permissions for those files.",
                ),
                ("nvidia-persistenced[887]", "Shutdown (887)"),
                ("nvidia-persistenced[881]", "nvidia-persistenced failed to initialize. Check syslog for more details."),
            ],
        )

    driver = replace(spec.driver, persistence=False, persistenced="failed")
    fault = Fault("pd-no-devices", "nvidia-persistenced cannot open /dev/nvidia*", apply)
    changed = replace(spec, driver=driver, faults=(*spec.faults, fault))
    return _named(changed, "pd-no-devices", "nvidia-persistenced failed: cannot open /dev/nvidia*")


def _module_refused(built: Built, module: str, lines: list[str]) -> None:
    modules = built.tree.files.get("/proc/modules", b"").decode()
    built.tree.file("/proc/modules", "".join(ln for ln in modules.splitlines(True) if not ln.startswith(f"{module} ")))
    built.tree.remove(f"/sys/module/{module}")
    _add_dmesg(built, lines)


def peermem_unknown_symbol(spec: HostSpec) -> HostSpec:
    """nvidia_peermem refused by the kernel: built against an ib_core without the peer-memory API. The kernel's lines
    as printed in public reports (the kernel's form '%s: Unknown symbol %s (err %d)')."""

    def apply(built: Built) -> None:
        _module_refused(
            built,
            "nvidia_peermem",
            [
                "nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -2)",
                "nvidia_peermem: Unknown symbol ib_unregister_peer_memory_client (err -2)",
            ],
        )

    fault = Fault("peermem-unknown-symbol", "nvidia_peermem refused: no peer-memory API in ib_core", apply)
    changed = replace(spec, driver=replace(spec.driver, peermem=False), faults=(*spec.faults, fault))
    return _named(changed, "peermem-symbol", "nvidia_peermem: Unknown symbol ib_register_peer_memory_client")


def uvm_symbol_mismatch(spec: HostSpec) -> HostSpec:
    """nvidia_uvm refused by the kernel: built against another nvidia.ko than the loaded one (two driver installs)."""

    def apply(built: Built) -> None:
        _module_refused(
            built,
            "nvidia_uvm",
            [
                "nvidia_uvm: disagrees about version of symbol nvUvmInterfaceRegisterGpu",
                "nvidia_uvm: Unknown symbol nvUvmInterfaceRegisterGpu (err -22)",
            ],
        )
        built.tree.remove("/dev/nvidia-uvm")
        built.tree.remove("/dev/nvidia-uvm-tools")
        devices = built.tree.files.get("/proc/devices", b"").decode()  # a module never loaded registered no device
        built.tree.file("/proc/devices", "".join(ln for ln in devices.splitlines(True) if not ln.endswith(" nvidia-uvm\n")))

    fault = Fault("uvm-symbol-mismatch", "nvidia_uvm refused: symbol versions differ from nvidia.ko's", apply)
    return _named(replace(spec, faults=(*spec.faults, fault)), "uvm-symbols", "nvidia_uvm: disagrees about version of symbol")


def gpu_unsupported_by_driver(spec: HostSpec) -> HostSpec:
    """The driver release does not support the GPUs: nvidia.ko refuses them and does not stay loaded. The lines are
    the driver's as printed (github.com/NVIDIA/nvtrust/issues/55)."""

    def apply(built: Built) -> None:
        _nvidia_ko_not_loaded(built)
        device = GPUS[spec.gpus.model].device_id
        lines = []
        for g in built.gpu_states_all:
            lines += [
                f"NVRM: The NVIDIA GPU {g.bdf} (PCI ID: 10de:{device:04x})",
                "NVRM: installed in this system is not supported by the",
                f"NVRM: NVIDIA {spec.driver.version} driver release.",
            ]
        lines.append("NVRM: None of the NVIDIA devices were initialized.")
        _add_dmesg(built, lines, 14.0)

    fault = Fault("gpu-unsupported", "the driver release does not support the GPUs", apply)
    return _named(replace(spec, faults=(*spec.faults, fault)), "gpu-unsupported", "GPUs not supported by the driver release")


# -- GPU memory events, as NVML and the kernel log show them together (issue 33: one event, one severity) -----------

_XID_TEXT = {
    # NVIDIA's "GPU Memory Error Management", Table 2 (XID log examples) for 94 and 95. The text after the code of 63
    # and 64 is not shown by a public source read here: only the code is read by the rules.
    94: "pid=7062, Contained: CE User Channel (0x9). RST: No, D-RST: No",
    95: "pid=7062, Uncontained: LTC TAG (0x2,0x0). RST: Yes, D-RST: No",
    63: "pid='<unknown>', name=<unknown>, Row Remapper: New row marked for remapping, reset gpu to activate.",
    64: "pid='<unknown>', name=<unknown>, Row Remapper: Failed to remap row",
}


def memory_event(
    spec: HostSpec, rows: tuple[int, int, int, int], xids: tuple[int, ...], gpu: int = 0, uncorrected: int = 0
) -> HostSpec:
    """GPU ``gpu`` (the audit's NVML index) with remapped rows ``rows`` (correctable, uncorrectable, pending, failure),
    ``uncorrected`` volatile uncorrectable errors, and the memory Xids the driver logs with them."""
    name = {(0, 0): "correctable", (1, 0): "uncorrectable"}.get((min(rows[1], 1), rows[3]), "remap-failed")

    def apply(built: Built) -> None:
        g = built.gpu_states[gpu]
        built.tree.call("nvmlDeviceGetRemappedRows", (g.index,), list(rows))
        if uncorrected:
            built.tree.call("nvmlDeviceGetTotalEccErrors", (g.index, 1, 0), uncorrected)
        bus = g.bdf.rsplit(".", 1)[0]
        _add_dmesg(built, [f"NVRM: Xid (PCI:{bus}): {code}, {_XID_TEXT[code]}" for code in xids], 70123.0)

    fault = Fault(f"memory-{name}", f"GPU{gpu} memory event {rows}, Xids {xids}", apply)
    return _named(replace(spec, faults=(*spec.faults, fault)), f"memory-{name}", f"GPU{gpu} rows {rows}, Xids {xids}")


def correctable_remap_pending(spec: HostSpec, gpu: int = 0) -> HostSpec:
    """Correctable errors on one row: the driver records its remap (Xid 63), pending until the next reset."""
    return memory_event(spec, (2, 0, 1, 0), (63,), gpu)


def contained_error_pending(spec: HostSpec, gpu: int = 0) -> HostSpec:
    """An uncorrectable error, contained (Xid 94: the application that touched it ended, its page offlined), its row
    recorded for remapping (Xid 63) and pending until the next reset."""
    return memory_event(spec, (0, 1, 1, 0), (94, 63), gpu, uncorrected=1)


def remap_failed(spec: HostSpec, gpu: int = 0) -> HostSpec:
    """A bank out of spare rows: the remap could not be recorded (Xid 64), NVML's failure flag set."""
    return memory_event(spec, (0, 1, 0, 1), (64,), gpu)


# -- a machine that does more than serve (issue 35: a share bundle keeps only what the audit judges) -----------------

BUSY_SECRET = "s3cr3t-Busy-Machine-7f41c2"
"""In the command line and environment of every process :func:`busy_machine` adds: a bundle must hold it nowhere."""
_BUSY = (
    (("-bash",), "bash"),
    (("tmux", "new", "-s", "alice-exp"), "tmux: server"),
    (("/usr/bin/python3", "/home/alice/train.py", "--data", "/data/corp-set", "--secret", BUSY_SECRET), "python3"),
    (("/opt/conda/bin/jupyter-lab", "--ip=10.20.30.41", f"--NotebookApp.password={BUSY_SECRET}"), "jupyter-lab"),
    (("rsync", "-a", f"rsync://backup:{BUSY_SECRET}@nas.corp/models", "/models"), "rsync"),
    (("/usr/sbin/postgres", "-D", "/var/lib/postgresql/14/main", "-c", f"password={BUSY_SECRET}"), "postgres"),
)


def busy_machine(spec: HostSpec, count: int = 150) -> HostSpec:
    """``count`` processes beside the servers (login shells, notebooks, training scripts, backups, a database), each
    with :data:`BUSY_SECRET` and the user's name in its command line and environment."""

    def apply(built: Built) -> None:
        for k in range(count):
            argv, comm = _BUSY[k % len(_BUSY)]
            env = {"USER": "alice", "HOME": "/home/alice", "SESSION_NOTE": BUSY_SECRET, "PATH": "/usr/bin:/bin"}
            proc = Proc(20000 + k, argv, comm=comm, uid=1000, env=env, cgroup="0::/user.slice/user-1000.slice\n")
            built.procs[proc.pid] = proc
            write_proc(built.tree, proc)

    fault = Fault("busy", f"{count} other processes", apply)
    return _named(replace(spec, faults=(*spec.faults, fault)), f"busy-{count}", f"{count} processes beside the servers")


# -- what a Kubernetes pod without one of its privileges reads (deploy/kubernetes, docs/fleet.md) --------------------

_PTRACE_FILES = ("environ", "maps", "root", "exe", "ns/mnt", "cwd")
"""What the kernel shows another process only with ptrace read access (CAP_SYS_PTRACE for a server or init)."""


def _without_ptrace(built: Built) -> None:
    tree, own = built.tree, built.tree.links.get("/proc/self")
    for pid in sorted(built.procs):
        if str(pid) == own:
            continue
        for name in _PTRACE_FILES:
            tree.remove(f"/proc/{pid}/{name}")
            tree.deny(f"/proc/{pid}/{name}")


def _without_sys_admin(built: Built) -> None:
    for path in [p for p in built.tree.files if p.startswith("/sys/devices/") and p.endswith("/config")]:
        built.tree.files[path] = built.tree.files[path][:64]  # the kernel gives the rest to CAP_SYS_ADMIN only


def _without_syslog(built: Built) -> None:
    built.tree.command(("dmesg",), exit_code=1, stderr="dmesg: read kernel buffer failed: Operation not permitted\n")


WITHOUT = {"SYS_PTRACE": _without_ptrace, "SYS_ADMIN": _without_sys_admin, "SYSLOG": _without_syslog}
"""A capability of the DaemonSets -> what the audit reads when the pod runs without it."""


def without_capability(spec: HostSpec, capability: str) -> HostSpec:
    """The host as a rigaudit pod with hostPID and the DaemonSet's capabilities less ``capability`` reads it."""
    fault = Fault(f"no-{capability}", f"read without CAP_{capability}", WITHOUT[capability])
    return _named(replace(spec, faults=(*spec.faults, fault)), f"no-{capability.lower()}", f"no CAP_{capability}")


def _imex_failed(spec: HostSpec, suffix: str, summary: str, apply: Callable[[Built], None]) -> HostSpec:
    changed = replace(spec, driver=replace(spec.driver, imex="failed"), faults=(*spec.faults, Fault(suffix, summary, apply)))
    return _named(changed, suffix, summary)


def imex_wrong_nodes(spec: HostSpec) -> HostSpec:
    """nvidia-imex failed at start: its nodes config lists another rack's trays (none of them this tray), so the
    daemon finds no interface of its own among them and says so in its log and journal."""

    def apply(built: Built) -> None:
        built.tree.file(imex.NODES_CONFIG, "\n".join(ip.replace("10.114.8.", "10.114.7.") for ip in imex.RACK_IPS) + "\n")
        imex.imex_failed(built, imex.NO_INTERFACE)

    return _imex_failed(spec, "imex-wrong-nodes", "nvidia-imex failed: its nodes config is another rack's", apply)


def imex_nodes_config_missing(spec: HostSpec) -> HostSpec:
    """/etc/nvidia-imex/nodes_config.cfg missing: nvidia-imex failed at start. What the daemon prints then is not shown
    by a public source read here: its log stops after its configuration lines and the journal has systemd's account."""

    def apply(built: Built) -> None:
        built.tree.remove(imex.NODES_CONFIG)
        imex.imex_failed(built, None)

    return _imex_failed(spec, "imex-no-nodes-config", "nvidia-imex failed: no nodes config", apply)


def rack_fabric_not_up(spec: HostSpec) -> HostSpec:
    """A GB200 tray whose rack fabric the NVLink switch trays have not completed: NVML's fabric state not started, the
    NVLinks inactive, CUDA refusing work (no GPU memory held, no pair peering)."""
    changed = replace(spec, gpus=replace(spec.gpus, rack_fabric=False))
    return _named(changed, "rack-fabric-not-up", "the switch trays have not completed the rack's NVLink fabric")


def imex_no_channel(spec: HostSpec) -> HostSpec:
    """IMEX active, but no IMEX channel created since the last boot (/dev/nvidia-caps-imex-channels absent)."""

    def apply(built: Built) -> None:
        built.tree.remove(imex.CHANNELS)

    fault = Fault("imex-no-channel", "no IMEX channel created", apply)
    return _named(replace(spec, faults=(*spec.faults, fault)), "imex-no-channel", "no IMEX channel")


def cdi_spec_without_uvm(spec: HostSpec) -> HostSpec:
    """A container given its GPUs by a CDI spec generated before ``nvidia_uvm`` was loaded (``nvidia-ctk cdi
    generate`` run at boot ahead of the module, as the NVIDIA Container Toolkit's CDI documentation warns: the spec
    lists the device nodes present when it is generated): the host has the module and its nodes, the container has no
    /dev/nvidia-uvm, so CUDA initialization fails in it and the server holds no GPU memory."""

    def apply(built: Built) -> None:
        tree = built.tree
        for node in ("/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"):
            tree.remove(node)
        for path in [p for p in tree.files if p.startswith("/proc/") and p.endswith(("/mounts", "/mountinfo"))]:
            lines = (tree.text(path) or "").splitlines(True)
            tree.file(path, "".join(ln for ln in lines if " /dev/nvidia-uvm" not in ln))
        for g in built.gpu_states:  # cuInit failed in the server: it holds no GPU memory
            tree.call("nvmlDeviceGetComputeRunningProcesses", (g.index,), [])
            tree.call("nvmlDeviceGetMPSComputeRunningProcesses", (g.index,), [])
            total = g.total_bytes
            tree.call("nvmlDeviceGetMemoryInfo", (g.index,), {"total": total, "free": total - (1 << 20), "used": 1 << 20})

    fault = Fault("cdi-without-uvm", "the CDI spec predates nvidia_uvm: no /dev/nvidia-uvm in the container", apply)
    return _named(replace(spec, faults=(*spec.faults, fault)), "cdi-no-uvm", "CDI spec without /dev/nvidia-uvm")


def rdma_passed_in(spec: HostSpec) -> HostSpec:
    """The container is given the host's RDMA devices (``--device /dev/infiniband``): its server can register memory
    with them."""

    def apply(built: Built) -> None:
        from tests.hostgen.build import CONTAINER_NS

        roots = [""] if built.container else [f"/proc/{pid}/root" for pid, p in built.procs.items() if p.mnt_ns == CONTAINER_NS]
        for root in roots:
            for k in range(len(built.rdma_names)):
                built.tree.unreadable[f"{root}/dev/infiniband/uverbs{k}"] = "NOT_RECORDED"
            built.tree.unreadable[f"{root}/dev/infiniband/rdma_cm"] = "NOT_RECORDED"

    fault = Fault("rdma-passed-in", "/dev/infiniband passed into the container", apply)
    return _named(replace(spec, faults=(*spec.faults, fault)), "rdma-in", "RDMA devices passed in")


def nvml_unrecorded(spec: HostSpec, fn: str) -> HostSpec:
    """A snapshot that holds no answer of NVML's ``fn`` (recorded by a rigaudit that did not ask it)."""

    def apply(built: Built) -> None:
        for key in [k for k in built.tree.nvml if k[0] == fn]:
            del built.tree.nvml[key]

    fault = Fault(f"unrecorded-{fn}", f"no {fn} record", apply)
    return _named(replace(spec, faults=(*spec.faults, fault)), f"no-{fn}", f"{fn} not recorded")


def cc_not_ready(spec: HostSpec) -> HostSpec:
    """A CVM whose GPUs are in CC mode but were never set ready (no attestation, or its unit did not run): CUDA
    refuses every context (802, "system not yet initialized"), the server holds no GPU memory."""
    return _named(replace(spec, driver=replace(spec.driver, cc_ready=False)), "cc-not-ready", "CC GPUs not ready")


def cc_devtools(spec: HostSpec) -> HostSpec:
    """GPUs whose CC mode is ``devtools`` (set so on the hypervisor host): not a production CC mode."""
    return _named(replace(spec, driver=replace(spec.driver, cc_devtools=True)), "cc-devtools", "CC DevTools mode")


def cdi_spec_stale(spec: HostSpec, new: str = "550.144.03") -> HostSpec:
    """The driver upgraded to ``new`` and the host rebooted, while the CDI spec stays the one generated for the old
    driver (no ``nvidia-cdi-refresh``, or its path unit disabled): the spec names the old version's libraries and
    firmware, which the upgrade removed, so the server's container no longer starts (crun: error stat'ing file
    /usr/lib64/libcuda.so.<old>: No such file or directory) and no server runs."""
    assert spec.cdi is not None, spec.name
    cdi = replace(spec.cdi, driver=spec.driver.version)
    driver = replace(spec.driver, version=new, userspace=None)
    said = f"driver {new} with a CDI spec for {spec.driver.version}"
    return _named(replace(spec, driver=driver, cdi=cdi, processes=()), "cdi-stale", said)


def cdi_refresh_disabled(spec: HostSpec, new: str = "550.144.03") -> HostSpec:
    """Toolkit 1.18's ``nvidia-cdi-refresh`` units installed but the path unit disabled: the driver upgrade to ``new``
    (and a reboot before the service ran) left /var/run/cdi/nvidia.yaml naming the old driver's files."""
    assert spec.cdi is not None and spec.cdi.refresh, spec.name
    stale = cdi_spec_stale(spec, new)
    assert stale.cdi is not None
    cdi = replace(stale.cdi, refresh=False, refresh_disabled=True)
    return _named(replace(stale, cdi=cdi), "cdi-refresh-off", "nvidia-cdi-refresh.path disabled")


def cdi_spec_before_uvm(spec: HostSpec) -> HostSpec:
    """The host's CDI spec generated before ``nvidia_uvm`` loaded (it lists no /dev/nvidia-uvm): containers started
    from it fail CUDA initialization, so the server's processes hold no GPU memory (seen from the host)."""
    assert spec.cdi is not None, spec.name
    return _named(replace(spec, cdi=replace(spec.cdi, uvm=False), processes=()), "cdi-no-uvm-host", "host CDI spec without uvm")


def mps_client_of_another_user(spec: HostSpec, uid: int = 1002) -> HostSpec:
    """A second user's CUDA job (a fine-tuning script of uid ``uid``) started on the MPS host while root's MPS server
    holds the GPUs for the replicas: the control daemon logs it onto its pending list (the wording of public control
    logs, NVIDIA/k8s-device-plugin issue 679: "NEW CLIENT 0 from user 1000: Server is not ready, push client to pending
    list") and starts no server for it until every client of root's server has exited (nvidia-cuda-mps-control(1)); the
    job waits in CUDA initialization and holds no GPU memory."""
    pid = 4410

    def apply(built: Built) -> None:
        from tests.hostgen.mps import CONTROL_PID, LOGS

        proc = Proc(
            pid,
            ("/usr/bin/python3", "/home/ana/finetune.py"),
            comm="python3",
            uid=uid,
            cgroup=f"0::/user.slice/user-{uid}.slice/session-7.scope\n",
        )
        write_proc(built.tree, proc)
        day = "2026-11-30 14:02"
        lines = (
            f"[{day}:51.118 Control {CONTROL_PID}] Accepting connection...\n"
            f"[{day}:51.118 Control {CONTROL_PID}] User did not send valid credentials\n"
            f"[{day}:51.118 Control {CONTROL_PID}] Accepting connection...\n"
            f"[{day}:51.119 Control {CONTROL_PID}] NEW CLIENT {pid} from user {uid}: "
            "Server is not ready, push client to pending list\n"
        )
        path = f"{LOGS}/control.log"
        built.tree.file(path, (built.tree.text(path) or "") + lines)

    fault = Fault("mps-other-user", f"a client of uid {uid} queued behind root's MPS server", apply)
    return _named(replace(spec, faults=(*spec.faults, fault)), "mps-other-user", f"uid {uid}'s client waits for the MPS server")


def exclusive_on_time_sliced(spec: HostSpec) -> HostSpec:
    """Exclusive_Process set on the GPUs of a node whose device plugin time-slices them (a boot script left from an
    MPS setup): one context per GPU, so each GPU's first pod holds it and the pods of its other replicas fail CUDA
    initialization ("all CUDA-capable devices are busy or unavailable") and hold no GPU memory."""
    assert spec.time_slicing, spec.name
    first: dict[int, ProcessSpec] = {}
    for p in spec.processes:
        first.setdefault(p.gpus[0], p)
    failed = tuple(replace(p, gpus=()) if first[p.gpus[0]] is not p else p for p in spec.processes)
    gpus = replace(spec.gpus, compute_mode=3)
    return _named(replace(spec, gpus=gpus, processes=failed), "exclusive-sliced", "Exclusive_Process on time-sliced GPUs")


def mps_daemon_not_serving(spec: HostSpec) -> HostSpec:
    """The node's MPS control daemon (the device plugin's) is not running: the pipe directory the pod's server is
    given holds no control socket (the device plugin's known issue: it may advertise shared GPUs before its MPS
    daemon is up), so the server's CUDA runs without MPS on an Exclusive_Process GPU and fails to initialize."""

    def apply(built: Built) -> None:
        from tests.hostgen.mps import PLUGIN_PIPE

        built.tree.remove(PLUGIN_PIPE)
        built.tree.directory(PLUGIN_PIPE)

    processes = tuple(replace(p, gpus=()) for p in spec.processes)
    fault = Fault("mps-not-serving", "no MPS control daemon serves the pod's pipe directory", apply)
    return _named(replace(spec, processes=processes, faults=(*spec.faults, fault)), "mps-down", "MPS daemon not serving")


def p2p_bench_result(spec: HostSpec, unidir: float, staged: float, *, access: bool = True, limit: float = 63.0) -> HostSpec:
    """``rigaudit bench p2p`` left its result (``/var/tmp/rigaudit/p2p.json``, ``rigaudit.p2p/1``) with every ordered
    pair at ``unidir`` GB/s one way and ``staged`` through a pinned host buffer, against a link limit of ``limit``
    (PCIe Gen5 x16). The figures are the caller's: no public measurement of a given pair is read here."""

    def apply(built: Built) -> None:
        import json

        from rigaudit.tools.bench.p2p_file import P2P_SCHEMA

        n = len(built.gpu_states)
        pairs = [
            {
                **{"src": a, "dst": b, "unidir_gbps": unidir, "bidir_gbps": unidir * 1.6, "staged_gbps": staged},
                **{"limit_gbps": limit, "data_ok": True, "p2p_access": access, "link": "pcie"},
            }
            for a in range(n)
            for b in range(n)
            if a != b
        ]
        report = {"schema": P2P_SCHEMA, "host": built.tree.hostname, "backend": "cuda", "size_mib": 256, "pairs": pairs}
        built.tree.file("/var/tmp/rigaudit/p2p.json", json.dumps(report))

    fault = Fault("p2p-bench", f"a P2P benchmark at {unidir} GB/s", apply)
    return _named(replace(spec, faults=(*spec.faults, fault)), f"p2p-bench-{unidir:g}", f"P2P benchmark {unidir} GB/s")


def ecc_off(spec: HostSpec) -> HostSpec:
    """ECC disabled on every GPU (``nvidia-smi -e 0`` and a reboot): NVML answers NOT_SUPPORTED to every error count."""
    return _named(replace(spec, gpus=replace(spec.gpus, ecc=False)), "ecc-off", "ECC disabled on every GPU")


def ports_capped(spec: HostSpec, gen: int = 4) -> HostSpec:
    """Every GPU trained at Gen``gen`` x16 under a port whose own maximum is Gen``gen``: a BIOS speed cap, or a CPU
    whose root ports go no faster (which one is the CPU's to tell)."""
    speed = {3: "8.0 GT/s PCIe", 4: "16.0 GT/s PCIe", 5: "32.0 GT/s PCIe"}[gen]
    for g in range(spec.gpus.count):
        spec = replace(spec, gpus=replace(spec.gpus, link_down=(*spec.gpus.link_down, (g, gen, 16))))

    def apply(built: Built) -> None:
        for function in built.placed.gpus:
            built.tree.attrs(posixpath.dirname(function.path), {"max_link_speed": speed, "current_link_speed": speed})

    capped = replace(spec, faults=(*spec.faults, Fault(f"ports-gen{gen}", f"the GPUs' ports top out at Gen{gen}", apply)))
    return _named(capped, f"ports-gen{gen}", f"every GPU at Gen{gen} x16 under ports whose maximum is Gen{gen}")
