"""Fault injection: each helper returns a changed COPY of a host description (specs are frozen).

``write(faults.fabricmanager_down(ARCHETYPES["hgx-h100-jammy"]), dir)`` is the HGX host with its fabric manager
failed. Helpers change the facts a real fault changes together (a driver upgraded without a reboot changes the
user-space libraries, NVML, nvidia-smi, the kernel log and the fabric manager at once), never one file alone.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from tests.hostgen.catalog import GPUS
from tests.hostgen.spec import Fault, HostSpec, MigInstance, ProcessSpec

if TYPE_CHECKING:
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


TUNED_CPU = {"balanced": ("powersave", "balance_performance"), "throughput-performance": ("performance", "performance")}
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
        for path in [p for p in tree.files if p.startswith(("/proc/driver/nvidia", "/sys/module/nvidia"))]:
            tree.remove(path)
        for key in [k for k in tree.nvml if k[0] != "nvmlInit"]:
            del tree.nvml[key]
        tree.call("nvmlInit", (), error="DRIVER_NOT_LOADED")
        modules = tree.files.get("/proc/modules", b"").decode()
        tree.file("/proc/modules", "".join(line for line in modules.splitlines(True) if not line.startswith("nvidia")))
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
