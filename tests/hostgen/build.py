"""Turn a :class:`~tests.hostgen.spec.HostSpec` into a snapshot tree: :func:`build` (in memory) and :func:`write`."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path

from tests.hostgen import k8s, podman, topo, vgpu
from tests.hostgen import kernel as kn
from tests.hostgen import nvidia as nv
from tests.hostgen import platform as pf
from tests.hostgen.azure import write_topology_file
from tests.hostgen.catalog import GPUS, MIB, GpuModel
from tests.hostgen.cdi import write_cdi
from tests.hostgen.cpu import Layout, cpulist, write_cpus
from tests.hostgen.devices import BAR1_SMALL, GpuPci, with_link
from tests.hostgen.docker import write_inspect
from tests.hostgen.imex import CHANNELS, imex_proc_devices, write_imex
from tests.hostgen.imex import CONFIG as IMEX_CONFIG
from tests.hostgen.mps import add_server_rows, write_mps
from tests.hostgen.pci import Function, lspci_lines, write_topology
from tests.hostgen.pciconfig import ACS_KERNEL_ENABLES
from tests.hostgen.podman import write_podman
from tests.hostgen.procs import KERNEL_THREADS, Proc, limits_text, write_proc
from tests.hostgen.rdma import (
    NVLSM,
    NVLSM_LOG,
    NVLSM_PID,
    NVLSM_PROC,
    ib_name,
    nvlsm_argv,
    nvlsm_log,
    start_script_lines,
    write_rdma,
)
from tests.hostgen.spec import HostSpec, ProcessSpec
from tests.hostgen.tree import Tree
from tests.hostgen.tuned import write_tuned
from tests.hostgen.units import unit_failed, unit_shown

SELF_PID_HOST = 48213
SELF_PID_CONTAINER = 412
HOST_NS = "mnt:[4026531841]"
CONTAINER_NS = "mnt:[4026533112]"


@dataclass
class Built:
    """The host being built: its description, its tree, and what the builders decided (topology, GPUs, processes)."""

    spec: HostSpec
    tree: Tree
    placed: topo.Placed
    layout: Layout
    gpu_states: list[nv.GpuState] = field(default_factory=list)
    procs: dict[int, Proc] = field(default_factory=dict)
    rdma_names: list[str] = field(default_factory=list)
    nvml_error: str | None = None
    fabric_ready: bool = True
    gpu_process_map: dict[int, list[tuple[int, int, int, int]]] = field(default_factory=dict)
    """Physical GPU -> NVML compute process rows (pid, bytes, GPU instance, compute instance)."""
    mps_clients: set[int] = field(default_factory=set)
    """Pids that compute through the MPS server (NVML's MPS compute processes, nvidia-smi's ``M+C``)."""
    gpu_states_all: list[nv.GpuState] = field(default_factory=list)
    """Every physical GPU, also those a container does not see through NVML."""
    _by_bdf: dict[str, Function] = field(default_factory=dict)

    # -- facts the builders share --------------------------------------------------------
    @property
    def model(self) -> GpuModel:
        return GPUS[self.spec.gpus.model]

    @property
    def arch(self) -> str:
        return "aarch64" if self.spec.cpu.vendor == "arm" else "x86_64"

    @property
    def guest(self) -> bool:
        return self.spec.platform.vm is not None

    @property
    def container(self) -> str | None:
        return self.spec.platform.container

    @property
    def all_cpus(self) -> str:
        return cpulist(list(range(self.spec.cpu.logical)))

    @property
    def all_mems(self) -> str:
        """Mems_allowed_list of a process no cpuset restricts: every node with memory (memory-only ones too)."""
        cpu = self.spec.cpu
        return cpulist(sorted({*range(cpu.nodes), *(node for node, _ in cpu.extra_nodes)}))

    @property
    def nvswitch_bdfs(self) -> list[str]:
        return [f.bdf for f in self.placed.nvswitches]

    @property
    def rdma_bdfs(self) -> list[str]:
        return [f.bdf for f in self.placed.nics]

    @property
    def nvlink_connected(self) -> bool:
        return self.model.nvlinks > 0 and (
            self.spec.gpus.nvswitches > 0 or bool(self.spec.gpus.nvlink_bridges) or self.spec.topology == "grace-nvl"
        )

    @property
    def rack_tray(self) -> bool:
        """A multi-node NVLink rack's compute tray (GB200 NVL72): its GPUs' NVLinks go to the rack's switch trays."""
        return self.spec.topology == "grace-nvl"

    @property
    def nvlink_trained(self) -> bool:
        """The GPUs' NVLinks are up: on an NVSwitch system of the Hopper generation and later the fabric manager
        trains them, so with it down every link reads inactive (an A100's links train without it)."""
        return self.nvlink_connected and (self.fabric_ready or self.model.arch < 9)

    @property
    def nvlink_peers(self) -> bool:
        """GPU pairs peer over NVLink: the links are up and, behind NVSwitches, the fabric manager programmed the
        switches (without it the driver offers no NVLink P2P and falls back to the PCIe path)."""
        return self.nvlink_trained and self.fabric_ready

    @property
    def cuda_ready(self) -> bool:
        """CUDA initializes on these GPUs: on an NVSwitch system of the Hopper generation and later it refuses work
        until the fabric manager has completed the fabric (cudaErrorSystemNotReady, 802), so no compute process holds
        GPU memory and the driver lets no pair peer; in CC mode, until the CVM sets the GPUs ready (the same 802,
        "system not yet initialized": NVIDIA/nvtrust issue 87)."""
        fabric = self.fabric_ready or not (self.spec.gpus.nvswitches or self.rack_tray) or self.model.arch < 9
        return fabric and (self.spec.driver.cc is None or self.spec.driver.cc_ready)

    def cuda_starts(self, server: ProcessSpec) -> bool:
        """The server's CUDA initializes: not before the fabric (``cuda_ready``), and not with a forward-compatibility
        libcuda on GeForce, where cuInit fails with CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804); a server that
        failed it holds no GPU memory (its process stays, its maps naming the libcuda it loaded)."""
        return self.cuda_ready and not (server.compat and self.model.product_brand == "GeForce")

    @property
    def visible_physical(self) -> list[int]:
        visible = self.spec.platform.visible_gpus
        return list(visible) if visible is not None else list(range(self.spec.gpus.count))

    @property
    def visible_gpu_minors(self) -> list[int]:
        return self.visible_physical

    def function(self, bdf: str) -> Function:
        if not self._by_bdf:
            self._by_bdf.update({f.bdf: f for f in self.placed.topology.functions()})
        return self._by_bdf[bdf]

    def chain(self, bdf: str) -> list[str]:
        path = self.function(bdf).path
        return [part for part in path.split("/") if part.count(":") == 2]

    def numa_of(self, bdf: str) -> int:
        return self.function(bdf).numa_node

    def cpulist_of(self, bdf: str) -> str:
        return self.function(bdf).cpulist

    def topology_level_bdf(self, a: str, b: str) -> int:
        if a == b:
            return nv.TOPO_INTERNAL
        ca, cb = self.chain(a), self.chain(b)
        common = [x for x, y in zip(ca[:-1], cb[:-1], strict=False) if x == y]
        if common:
            deepest = self.function(common[-1])
            below = max(len(ca) - len(common), len(cb) - len(common))
            if deepest.role in ("upstream", "downstream") and below <= 2:
                return nv.TOPO_SINGLE
            return nv.TOPO_MULTIPLE if deepest.role != "root_port" or below > 1 else nv.TOPO_HOSTBRIDGE
        ra, rb = _root_of(self.function(a).path), _root_of(self.function(b).path)
        if ra == rb:
            return nv.TOPO_HOSTBRIDGE
        na, nb = self.numa_of(a), self.numa_of(b)
        if na == nb and na >= 0:
            return nv.TOPO_NODE
        if self.guest and (na < 0 or nb < 0):
            return nv.TOPO_HOSTBRIDGE
        sockets = self.spec.cpu.nodes_per_socket
        if na >= 0 and nb >= 0 and na // sockets == nb // sockets:
            return nv.TOPO_NODE
        return nv.TOPO_SYSTEM

    def topology_level(self, a: int, b: int) -> int:
        return self.topology_level_bdf(self.gpu_states[a].bdf, self.gpu_states[b].bdf)

    def nvlink_between(self, a: nv.GpuState, b: nv.GpuState) -> bool:
        if not self.nvlink_peers or a.index == b.index:
            return False
        bridges = self.spec.gpus.nvlink_bridges
        if not bridges:
            return True
        up = all(len(g.nvlinks_down) < g.model.nvlinks for g in (a, b))
        return up and (min(a.minor, b.minor), max(a.minor, b.minor)) in {(min(p), max(p)) for p in bridges}

    def bridge_peer(self, g: nv.GpuState) -> nv.GpuState | None:
        """The GPU an NVLink bridge joins ``g`` to (None: no bridge)."""
        for pair in self.spec.gpus.nvlink_bridges:
            if g.minor in pair:
                other = pair[1] if pair[0] == g.minor else pair[0]
                return next((s for s in self.gpu_states_all if s.minor == other), None)
        return None

    def p2p_status(self, a: nv.GpuState, b: nv.GpuState) -> int:
        forced = self.spec.gpus.p2p
        if forced is not None:
            return nv.P2P_CODES[forced]
        if not a.model.p2p:
            # What `nvidia-smi topo -p2p r` prints as GNS on GeForce RTX 40/50 cards.
            return nv.P2P_CODES["GPU_NOT_SUPPORTED"]
        if a.mig is not None or b.mig is not None or self.spec.gpus.vgpu is not None:
            return nv.P2P_CODES["NOT_SUPPORTED"]
        if self.nvlink_between(a, b):
            return nv.P2P_CODES["OK"]
        if self.guest:
            return nv.P2P_CODES["CHIPSET_NOT_SUPPORTED"]
        if not self.cuda_ready:
            return nv.P2P_CODES["NOT_SUPPORTED"]
        if self.topology_level(a.index, b.index) == nv.TOPO_SYSTEM and self.spec.cpu.vendor == "intel":
            return nv.P2P_CODES["IOH_TOPOLOGY_NOT_SUPPORTED"]
        return nv.P2P_CODES["OK"]

    def bar1_bytes(self, g: nv.GpuState) -> int:
        """BAR1 as NVML reports it (a vGPU's is the 256 MiB window the vGPU manager gives it)."""
        return BAR1_SMALL if self.spec.gpus.bar1_small or self.spec.gpus.vgpu else g.model.bar1_bytes

    def process_name(self, pid: int) -> str:
        proc = self.procs.get(pid)
        if proc is None:
            return "python3"
        return proc.argv[0] if proc.argv else proc.name


def _root_of(path: str) -> str:
    """The ``pciDDDD:BB`` folder a device's sysfs path runs through (its root complex)."""
    return next(part for part in path.split("/") if part.startswith("pci"))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _placed(spec: HostSpec) -> topo.Placed:
    gpus = spec.gpus
    model = GPUS[gpus.model]
    pci = GpuPci(max_read_request=gpus.max_read_request, bar1_bytes=BAR1_SMALL if gpus.bar1_small else None)
    nic_kind = spec.nics.kind if spec.nics else "cx7"
    parts = topo.Parts(
        model=model,
        count=gpus.count,
        gpu_pci=pci,
        nvswitches=gpus.nvswitches,
        nvswitch_key="nvswitch-a100" if model.arch == 7 else "nvswitch-h100" if model.arch == 9 else "",
        nics=spec.nics.count if spec.nics else 0,
        nic_key=nic_kind,
        nvlink_management=4 if model.arch >= 10 and gpus.nvswitches and spec.topology == "hgx" else 0,
        root=spec.root_complex,
        acs_control=ACS_KERNEL_ENABLES if spec.acs_redirect else 0,
        iommu=spec.iommu,
    )
    if spec.topology == "hgx":
        placed = topo.hgx(spec.cpu, parts)
    elif spec.topology == "switch":
        placed = topo.switched(spec.cpu, parts)
    elif spec.topology == "flat":
        placed = topo.flat_vm(spec.cpu, parts, cloud=spec.platform.cloud or "kvm", numa_aware=spec.gpus.count >= 8)
    elif spec.topology == "hyperv":
        placed = topo.hyperv_vm(spec.cpu, parts)
    elif spec.topology == "q35":
        placed = topo.q35_vm(spec.cpu, parts, port=spec.platform.vm_root_port)
    elif spec.topology == "grace":
        placed = topo.grace(spec.cpu, parts)
    elif spec.topology == "grace-nvl":
        placed = topo.gb200_tray(spec.cpu, parts)
    elif spec.topology == "spark":
        placed = topo.spark(spec.cpu, parts)
    else:
        placed = topo.direct(spec.cpu, parts)
    for gpu_index, gen, width in gpus.link_down:
        with_link(placed.gpus[gpu_index], gen=gen, width=width)
    return placed


def _gpu_states(built: Built) -> None:
    spec = built.spec
    gpus = spec.gpus
    model = built.model
    physical = sorted(built.placed.gpus, key=lambda f: f.bdf)
    for i, function in enumerate(physical):
        function.tag = f"GPU{i}"
    server_pids = built.gpu_process_map
    for nvml_index, p in enumerate(built.visible_physical):
        function = physical[p]
        mig = gpus.mig[p] if p < len(gpus.mig) else None
        limit = gpus.power_limit_w[p] * 1000 if p < len(gpus.power_limit_w) else model.power_default_mw
        exp = function.express
        assert exp is not None
        procs = tuple(server_pids.get(p, ()))
        used = sum(u for _, u, _, _ in procs) // MIB + (spec.platform.shared_mib if built.container else 0)
        built.gpu_states.append(
            nv.GpuState(
                index=nvml_index,
                model=model,
                bdf=function.bdf,
                uuid=nv.uuid(spec.hostname, "gpu", p),
                serial=f"16549220{p:05d}",
                minor=p,
                used_mib=used + (0 if procs else 1),
                mig=mig,
                mig_pending=p in gpus.mig_pending,
                power_limit_mw=limit,
                ecc=gpus.ecc if gpus.ecc is not None else model.ecc,
                temperature=gpus.temperature_c + p % 3,
                reasons=gpus.clocks_event_reasons if not procs else 0x0,
                nvlinks_down=frozenset(link for g, link in gpus.nvlink_down if g == p),
                vbios=(model.vbios[:-2] + "02") if p in gpus.vbios_odd else model.vbios,
                link=(
                    exp.current_speed or exp.link_speed or model.pcie_gen,  # an integrated endpoint: the real link
                    exp.current_width if exp.current_width is not None else exp.link_width or 16,
                ),
                max_width=min(exp.link_width or 16, _upstream(built, function.bdf)[1] or exp.link_width or 16),
                host_max_gen=_upstream(built, function.bdf)[0],
                remap_pending=p in gpus.remapped_pending,
                processes=procs,
            )
        )


def _upstream(built: Built, bdf: str) -> tuple[int, int]:
    """LnkCap (generation, width) of the port right above ``bdf``, as the NVIDIA driver reads it for NVML's maxima
    "with this device and system"; (0, 0) on a root bus."""
    chain = built.chain(bdf)
    above = built.function(chain[-2]).express if len(chain) > 1 else None
    return (above.link_speed, above.link_width) if above is not None else (0, 0)


def _server_processes(built: Built) -> None:
    """Server processes: a main process and one worker per GPU it serves; the map of GPU -> NVML process rows."""
    spec = built.spec
    pid = 3120 if not built.container else 1
    built.gpu_process_map = {}
    for server in spec.processes:
        main = pid
        in_docker = server.in_container and not built.container
        ns = CONTAINER_NS if (in_docker or built.container) else HOST_NS
        cgroup = _cgroup_line(built, server)
        env = dict(server.env)
        gpus = list(server.gpus)
        per_gpu = server.gpu_memory_mib * MIB
        maps = _maps(built, server)
        if server.compat and built.container:
            _compat_files(built, server.compat)
        mounts = pf.container_mounts(built) if (in_docker or built.container) else pf.host_mounts(built)
        limits = limits_text(memlock=server.memlock, nofile=server.nofile, nproc=server.nproc)
        cpus = built.all_cpus
        base = Proc(
            main,
            server.argv,
            comm=server.argv[0].rsplit("/", 1)[-1][:15] if not server.argv[0].startswith("/usr/bin/python") else "python3",
            ppid=0 if main == 1 else 1,
            uid=server.user,
            threads=server.threads,
            env=env,
            cgroup=cgroup,
            limits=limits,
            mounts=mounts,
            mountinfo=pf.mountinfo(mounts),
            maps=maps,
            exe=server.python.replace("python3", "python3.10") if server.python.endswith("python3") else server.python,
            mnt_ns=ns,
            vm_kib=41_000_000,
            cpus=cpus,
            mems=built.all_mems,
        )
        built.procs[main] = base
        if (unit := _service_of(cgroup)) is not None:
            unit_shown(built, unit)
        if in_docker and server.engine == "docker":
            write_inspect(built, pf.docker_cgroup().split("docker-", 1)[1][:12], server)
        pid += 1
        workers: list[int] = []
        single = len(gpus) <= 1
        for k in range(len(gpus)):
            if single or (k == 0 and server.mig):
                workers.append(main)
                continue
            worker = Proc(
                pid,
                (
                    server.python,
                    "-c",
                    "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=52, pipe_handle=" + str(60 + k) + ")",
                    "--multiprocessing-fork",
                ),
                comm="pt_main_thread",
                ppid=main,
                uid=server.user,
                threads=96,
                env=env,
                cgroup=cgroup,
                limits=limits,
                mounts=mounts,
                maps=maps,
                exe=base.exe,
                mnt_ns=ns,
                vm_kib=38_000_000,
                cpus=cpus,
                mems=built.all_mems,
            )
            built.procs[pid] = worker
            workers.append(pid)
            pid += 1
        for k, g in enumerate(gpus):
            if not built.cuda_starts(server):
                break  # the server failed CUDA initialization: it holds no GPU memory
            owner = workers[k]
            if server.mig:
                for gi_gpu, gi, ci in server.mig:
                    if gi_gpu == g:
                        built.gpu_process_map.setdefault(g, []).append((owner, per_gpu, gi, ci))
            else:
                built.gpu_process_map.setdefault(g, []).append((owner, per_gpu, nv.NO_INSTANCE, nv.NO_INSTANCE))
        pid += 7


def _service_of(cgroup: str) -> str | None:
    """The system service a server's cgroup line names (``0::/system.slice/vllm.service``)."""
    last = cgroup.strip().rsplit("/", 1)[-1]
    return last if cgroup.startswith("0::/system.slice/") and last.endswith(".service") else None


def _cgroup_line(built: Built, server: ProcessSpec) -> str:
    if server.cgroup is not None:
        return server.cgroup
    if built.container:
        return "0::/\n"
    if server.in_container and server.engine == "containerd":
        return k8s.pod_cgroup(built.spec.processes.index(server))
    if server.in_container and server.engine == "podman":
        return f"0::{podman.user_slice(server.user)}/libpod-{podman.CONTAINER_ID}.scope/container\n"
    if server.in_container:
        return f"0::{pf.docker_cgroup()}\n"
    return "0::/system.slice/vllm.service\n"


def _compat_files(built: Built, path: str) -> None:
    """The image's cuda-compat package (libcuda and its PTX JIT compiler in /usr/local/cuda-X.Y/compat) and the
    ld.so.conf.d entry that points the loader at it. The NVIDIA Container Toolkit writes such an entry
    (``00-compat-*.conf``) when the image's compat libcuda is newer than the host's driver; which toolkit version
    first does so is not shown by a public source read here, so the fixture only carries the file."""
    folder, name = path.rsplit("/", 1)
    version = name.split(".so.", 1)[1]
    built.tree.file(path, b"\x7fELF\x02\x01\x01")
    built.tree.link(f"{folder}/libcuda.so.1", name)
    built.tree.file(f"{folder}/libnvidia-ptxjitcompiler.so.{version}", b"\x7fELF\x02\x01\x01")
    built.tree.file("/etc/ld.so.conf.d/00-compat-1234567890.conf", folder + "\n")


def _maps(built: Built, server: ProcessSpec) -> str:
    version = built.spec.driver.userspace or built.spec.driver.version
    libdir = pf.driver_libdir(built)
    site = server.site
    python = server.python.replace("python3", "python3.10")
    mapped = [
        ("55d4c7e00000-55d4c7e2e000 r--p", 1835271, python),
        ("7f1c2a000000-7f1c2e5b1000 r-xp", 2360101, f"{site}/torch/lib/libtorch_cuda.so"),
        ("7f1c30000000-7f1c30e3c000 r-xp", 2360088, f"{site}/torch/lib/libtorch_cpu.so"),
        ("7f1c31000000-7f1c3102a000 r-xp", 2360070, f"{site}/torch/_C.cpython-310-x86_64-linux-gnu.so"),
        ("7f1c32000000-7f1c3451c000 r-xp", 2361201, f"{site}/nvidia/nccl/lib/libnccl.so.2"),
        ("7f1c36000000-7f1c3790c000 r-xp", 1574021, server.compat or f"{libdir}/libcuda.so.{version}"),
        ("7f1c38000000-7f1c3862a000 r-xp", 1574033, f"{libdir}/libnvidia-ml.so.{version}"),
        ("7f1c39000000-7f1c390a1000 r-xp", 2361188, f"{site}/nvidia/cuda_runtime/lib/libcudart.so.12"),
    ]
    rows = [f"{where} 00000000 103:02 {inode:<26}{path}" for where, inode, path in mapped]
    return "\n".join(rows) + "\n"


def _driver_files(built: Built) -> None:
    tree, spec = built.tree, built.spec
    d = spec.driver
    arch = built.arch
    loaded = d.version
    tree.file("/proc/driver/nvidia/version", nv.proc_version_text(loaded, d.open, arch))
    tree.file(
        "/proc/driver/nvidia/params",
        "ResmanDebugLevel: 4294967295\nRmLogonRC: 1\n"
        "ModifyDeviceFiles: 1\nDeviceFileUID: 0\nDeviceFileGID: 0\n"
        "DeviceFileMode: 438\n"
        "InitializeSystemMemoryAllocations: 1\nUsePageAttributeTable: 4294967295\n"
        "EnableMSI: 1\nEnablePCIeGen3: 0\nMemoryPoolSize: 0\n"
        "KMallocHeapMaxSize: 0\nVMallocHeapMaxSize: 0\nIgnoreMMIOCheck: 0\nTCEBypassMode: 0\nEnableStreamMemOPs: 0\n"
        "EnableUserNUMAManagement: 1\nNvLinkDisable: 0\nRmProfilingAdminOnly: 1\nPreserveVideoMemoryAllocations: 0\n"
        "EnableS0ixPowerManagement: 0\nS0ixPowerManagementVideoMemoryThreshold: 256\nDynamicPowerManagement: 3\n"
        "DynamicPowerManagementVideoMemoryThreshold: 200\nRegisterPCIDriver: 1\nEnablePCIERelaxedOrderingMode: 0\n"
        "EnableResizableBar: 0\nEnableGpuFirmware: 18\n"
        "EnableGpuFirmwareLogs: 2\nEnableDbgBreakpoint: 0\n"
        "OpenRmEnableUnsupportedGpus: 1\n"
        'DmaRemapPeerMmio: 1\nImexChannelCount: 2048\nCreateImexChannel0: 0\nGrdmaPciTopoCheckOverride: 0\nRegistryDwords: ""\n'
        'RegistryDwordsPerDevice: ""\nRmMsg: ""\nGpuBlacklist: ""\nTemporaryFilePath: ""\nExcludedGpus: ""\n',
    )
    tree.file("/proc/driver/nvidia/registry", 'Binary: ""\n')
    gsp = loaded if (d.open or built.model.arch >= 9) else None
    for g in built.gpu_states_all:
        folder = f"/proc/driver/nvidia/gpus/{g.bdf}"
        irq = built.function(g.bdf).irq
        profile = spec.gpus.vgpu
        tree.file(f"{folder}/information", nv.information(g, irq, gsp, vgpu.name(g.model, profile) if profile else None))
        tree.file(f"{folder}/registry", 'Binary: ""\n')
        tree.file(
            f"{folder}/power",
            (
                "Runtime D3 status:          Not supported\n"
                "Video Memory:               Active\n\nGPU Hardware Support:\n"
                " Video Memory Self Refresh: Not Supported\n"
                " Video Memory Off:          Supported\n\n"
                "S0ix Power Management:\n Platform Support:          Not Supported\n"
                " Status:                    Disabled\n"
            ),
        )
    tree.file("/proc/driver/nvidia/warnings/README", "\n")
    modules = {
        "nvidia": (loaded, "/sys/module/nvidia"),
        "nvidia_uvm": (loaded, "/sys/module/nvidia_uvm"),
        "nvidia_modeset": (loaded, "/sys/module/nvidia_modeset"),
        "nvidia_drm": (loaded, "/sys/module/nvidia_drm"),
    }
    if d.peermem:
        modules["nvidia_peermem"] = (loaded, "/sys/module/nvidia_peermem")
    for name, (version, folder) in modules.items():
        tree.attrs(
            folder,
            {
                "version": version,
                "initstate": "live",
                "refcnt": 0 if name != "nvidia" else 1240,
                "taint": "POE" if not d.open else "OE",
                "srcversion": _digest(name + version)[:23].upper(),
            },
        )
    tree.attrs(
        "/sys/module/nvidia/parameters",
        {"NVreg_OpenRmEnableUnsupportedGpus": 1, "NVreg_EnableGpuFirmware": 18, "NVreg_RegistryDwords": "(null)"},
    )
    tree.attrs("/sys/module/nvidia_drm/parameters", {"modeset": "Y" if spec.os.distro == "ubuntu-24.04" else "N", "fbdev": "N"})
    libdir = pf.driver_libdir(built)
    user = d.userspace or d.version
    for lib in ("libnvidia-ml.so", "libcuda.so"):
        tree.file(f"{libdir}/{lib}.{user}", b"\x7fELF\x02\x01\x01")
        tree.link(f"{libdir}/{lib}.1", f"{lib}.{user}")
    if not built.container:
        tree.link(f"{libdir}/libcuda.so", "libcuda.so.1")
        tree.file(
            "/etc/modprobe.d/nvidia-graphics-drivers-kms.conf",
            (
                "# This file was generated by nvidia-driver-550\n"
                "# Set value to 0 to disable modesetting\n"
                "options nvidia-drm modeset=1\n"
            ),
        )
        tree.file(
            "/etc/modprobe.d/blacklist-nouveau.conf" if d.dkms else "/lib/modprobe.d/nvidia-graphics-drivers.conf",
            "blacklist nouveau\noptions nouveau modeset=0\n",
        )
        if d.dkms:
            for version in dict.fromkeys([user]):
                tree.directory(f"/var/lib/dkms/nvidia/{version}/{spec.os.kernel}/{arch}/module")
                tree.link(f"/var/lib/dkms/nvidia/kernel-{spec.os.kernel}-{arch}", f"{version}/{spec.os.kernel}/{arch}")
        tree.command(("modinfo", "-F", "version", "nvidia"), user + "\n")
        if d.fabricmanager is not None:
            fm_version = d.fabricmanager_version or user
            branch = fm_version.split(".")[0]  # a versioned package carries its own branch (nvidia-fabricmanager-550)
            tree.command(
                ("systemctl", "is-active", "nvidia-fabricmanager"),
                d.fabricmanager + "\n",
                exit_code=0 if d.fabricmanager == "active" else 3,
            )
            tree.command(("dpkg-query", "-W", "nvidia-fabricmanager*"), f"nvidia-fabricmanager-{branch}\t{fm_version}-1\n")
            if built.placed.management:
                tree.file(NVLSM, b"\x7fELF\x02\x01\x01")
                tree.file(NVLSM_LOG, "\n".join(nvlsm_log(built)) + "\n")
                if d.fabricmanager == "active":
                    tree.file(NVLSM_PID, f"{NVLSM_PROC}\n")
            if d.fabricmanager == "active" and (started := start_script_lines(built)):
                host = spec.hostname
                journal = [f"Nov 30 09:58:11 {host} systemd[1]: Starting NVIDIA fabric manager service..."]
                journal += [f"Nov 30 09:58:11 {host} {program}: {message}" for program, message in started]
                journal.append(f"Nov 30 09:58:19 {host} systemd[1]: Started NVIDIA fabric manager service.")
                tree.command(("journalctl", "-u", "nvidia-fabricmanager", "-n", "50", "--no-pager"), "\n".join(journal) + "\n")
            log = [
                (
                    f"[Nov 30 2026 09:58:11] [INFO] [tid 2314] Fabric Manager version {fm_version} "
                    "is running with the following configuration options"
                ),
                "[Nov 30 2026 09:58:11] [INFO] [tid 2314] Logging level = 4",
                "[Nov 30 2026 09:58:11] [INFO] [tid 2314] Logging file name/path = /var/log/fabricmanager.log",
                "[Nov 30 2026 09:58:11] [INFO] [tid 2314] Fabric Mode = 0",
            ]
            if d.fabricmanager == "active":
                log += [
                    (
                        f"[Nov 30 2026 09:58:13] [INFO] [tid 2314] Connected to {len(built.placed.nvswitches)} "
                        f"NVSwitch devices and {spec.gpus.count} GPUs"
                    ),
                    (
                        "[Nov 30 2026 09:58:19] [INFO] [tid 2314] Successfully configured all the "
                        "available NVSwitches to route GPU NVLink traffic. NVLink Peer-to-Peer support "
                        "will be enabled once the GPUs are successfully registered with the NVLink "
                        "fabric."
                    ),
                ]
            elif fm_version != loaded:
                log += [
                    (
                        "[Nov 30 2026 09:58:12] [ERROR] [tid 2314] fabric manager NVIDIA GPU driver "
                        f"interface version {fm_version} don't match with driver version {loaded}. "
                        "Please update with matching NVIDIA driver package."
                    ),
                ]
            else:
                # No public source read here shows this message: the rules treat it as no known reason (unknown cause).
                log += [
                    (
                        "[Nov 30 2026 09:58:14] [ERROR] [tid 2314] failed to open NVSwitch device "
                        "/dev/nvidia-nvswitch0 error: NVSwitch driver not loaded or device not present"
                    ),
                    "[Nov 30 2026 09:58:14] [ERROR] [tid 2314] fabric manager failed to initialize, exiting",
                ]
            tree.file("/var/log/fabricmanager.log", "\n".join(log) + "\n")
            if d.fabricmanager != "active":  # the unit's journal holds what nv-fabricmanager printed (a fault may replace it)
                errors = [line.split("] ", 3)[-1] for line in log if "[ERROR]" in line]
                unit_failed(
                    built,
                    "nvidia-fabricmanager",
                    "NVIDIA fabric manager service",
                    [("nv-fabricmanager[2314]", e) for e in errors],
                    state=d.fabricmanager,
                )
        else:
            tree.command(("systemctl", "is-active", "nvidia-fabricmanager"), "inactive\n", exit_code=4, stderr="")
            tree.command(
                ("dpkg-query", "-W", "nvidia-fabricmanager*"),
                "",
                exit_code=1,
                stderr="dpkg-query: no packages found matching nvidia-fabricmanager*\n",
            )
        write_imex(built)
        if spec.gpus.vgpu is not None:
            vgpu.gridd(built)
        tree.command(
            ("systemctl", "is-active", "nvidia-persistenced"),
            d.persistenced + "\n",
            exit_code=0 if d.persistenced == "active" else 3,
        )
        unit = "/usr/lib/systemd/system" if spec.os.distro.startswith("rhel") else "/lib/systemd/system"
        tree.file(
            f"{unit}/nvidia-persistenced.service",
            "[Unit]\nDescription=NVIDIA Persistence Daemon\nWants=syslog.target\nStopWhenUnneeded=true\n"
            "Before=systemd-backlight@backlight:nvidia_0.service\n\n[Service]\nType=forking\n"
            f"ExecStart=/usr/bin/nvidia-persistenced {d.persistenced_args}\n"
            "ExecStopPost=/bin/rm -rf /var/run/nvidia-persistenced\n",
        )


def _modules(built: Built) -> list[str]:
    d = built.spec.driver
    names = [
        "nvidia_uvm 4960256 24 - Live 0x0000000000000000 (POE)",
        "nvidia_drm 122880 0 - Live 0x0000000000000000 (POE)",
        "nvidia_modeset 1355776 1 nvidia_drm, Live 0x0000000000000000 (POE)",
        (
            f"nvidia {54018048 if not d.open else 14299136} 1240 "
            f"nvidia_uvm,{'nvidia_peermem,' if d.peermem else ''}nvidia_modeset, "
            "Live 0x0000000000000000 (POE)"
        ),
    ]
    if d.peermem:
        names.insert(0, "nvidia_peermem 16384 0 - Live 0x0000000000000000 (POE)")
    if built.placed.management:
        names.append("ib_umad 45056 0 - Live 0x0000000000000000")  # NVLSM's MAD access to the NVSwitch ports
    if built.placed.nics and (built.spec.nics is None or built.spec.nics.kind != "efa"):
        names += [
            "mlx5_ib 495616 0 - Live 0x0000000000000000 (OE)"
            if built.spec.nics and built.spec.nics.ofed
            else "mlx5_ib 466944 0 - Live 0x0000000000000000",
            "ib_uverbs 196608 2 nvidia_peermem,mlx5_ib, Live 0x0000000000000000"
            if d.peermem
            else "ib_uverbs 196608 1 mlx5_ib, Live 0x0000000000000000",
            "ib_core 507904 3 mlx5_ib,ib_uverbs,rdma_ucm, Live 0x0000000000000000",
            "mlx5_core 2461696 1 mlx5_ib, Live 0x0000000000000000",
            "mlxfw 36864 1 mlx5_core, Live 0x0000000000000000",
            "rdma_ucm 32768 0 - Live 0x0000000000000000",
        ]
    if built.spec.nics is not None and built.spec.nics.kind == "efa":
        names += [
            "efa 151552 0 - Live 0x0000000000000000 (OE)",
            "ib_uverbs 196608 1 efa, Live 0x0000000000000000",
            "ib_core 507904 2 efa,ib_uverbs, Live 0x0000000000000000",
        ]
    names += [
        "overlay 212992 12 - Live 0x0000000000000000",
        "br_netfilter 32768 0 - Live 0x0000000000000000",
        "nvme 61440 3 - Live 0x0000000000000000",
        "nvme_core 212992 4 nvme, Live 0x0000000000000000",
        "ast 81920 0 - Live 0x0000000000000000" if not built.guest else "virtio_net 77824 0 - Live 0x0000000000000000",
        "ipmi_si 90112 0 - Live 0x0000000000000000" if not built.guest else "virtio_blk 28672 2 - Live 0x0000000000000000",
    ]
    if built.spec.cpu.vendor == "intel":
        names += ["intel_rapl_msr 20480 0 - Live 0x0000000000000000", "skx_edac 28672 0 - Live 0x0000000000000000"]
    elif built.spec.cpu.vendor == "amd":
        names += ["amd64_edac 57344 0 - Live 0x0000000000000000", "kvm_amd 200704 0 - Live 0x0000000000000000"]
    if built.spec.cpu.freq_driver == "acpi-cpufreq" and built.spec.cpu.vendor != "arm":
        names.append("acpi_cpufreq 32768 0 - Live 0x0000000000000000")
    if built.spec.os.distro == "ubuntu-24.04" or built.spec.driver.open:
        names = [n.replace("(POE)", "(OE)") for n in names]
    return names


def _modules_dep(built: Built) -> str:
    d = built.spec.driver
    kernel = built.spec.os.kernel
    zstd = built.spec.os.distro == "ubuntu-24.04"
    prefix = "updates/dkms" if d.dkms else f"kernel/nvidia-{d.version.split('.')[0]}srv"
    own = [
        f"{prefix}/nvidia",
        f"{prefix}/nvidia-uvm: {prefix}/nvidia",
        f"{prefix}/nvidia-modeset: {prefix}/nvidia",
        f"{prefix}/nvidia-drm: {prefix}/nvidia-modeset {prefix}/nvidia kernel/drivers/gpu/drm/drm_ttm_helper",
    ]
    if built.spec.nics is not None and built.spec.nics.kind != "efa" and (d.peermem or built.spec.nics.ofed):
        own.append(
            f"{prefix}/nvidia-peermem: {prefix}/nvidia kernel/drivers/infiniband/core/ib_uverbs "
            "kernel/drivers/infiniband/core/ib_core"
        )
    del kernel
    return kn.modules_dep(built.spec.os.kernel, own, zstd=zstd)


def _boot_log(built: Built) -> list[tuple[float, str]]:
    spec = built.spec
    d = spec.driver
    lines: list[tuple[float, str]] = [
        (0.0, kn.proc_version(spec.os, built.arch).strip()),
        (0.0, "Command line: " + kn.cmdline(spec.os).strip()),
        (
            0.0,
            "mem auto-init: stack:off, heap alloc:"
            + ("off" if "init_on_alloc=0" in spec.os.cmdline else "on")
            + ", heap free:off",
        ),
    ]
    dmi = dict(spec.platform.dmi)
    if built.guest:
        dmi = pf.guest_dmi(spec.platform.cloud, spec.platform.instance_type) | dict(spec.platform.dmi)
        lines.append(
            (0.0, "Hypervisor detected: Microsoft Hyper-V" if spec.platform.vm == "microsoft" else "Hypervisor detected: KVM")
        )
    lines.append(
        (
            0.0,
            (
                f"DMI: {dmi.get('sys_vendor', '')} {dmi.get('product_name', '')}/{dmi.get('board_name', '')}, "
                f"BIOS {dmi.get('bios_version', '')} {dmi.get('bios_date', '')}"
            ),
        )
    )
    if spec.cpu.vendor == "intel" and spec.cpu.freq_driver in ("intel_pstate", "intel_cpufreq"):
        lines += [(2.114, "intel_pstate: Intel P-state driver initializing"), (2.118, "intel_pstate: HWP enabled")]
    if (
        spec.cpu.vendor == "amd"
        and spec.cpu.freq_driver == "acpi-cpufreq"
        and kn.kernel_tuple(spec.os.kernel) >= (6, 5)
        and not built.guest
    ):
        lines.append((2.210, "amd_pstate: driver load is disabled, boot with specific mode to enable this"))
    if spec.iommu is not None and not built.guest:
        if spec.cpu.vendor == "intel":
            lines += [
                (0.512, "DMAR: IOMMU enabled"),
                (
                    1.843,
                    (
                        f"iommu: Default domain type: {'Passthrough' if spec.iommu == 'identity' else 'Translated'} "
                        "(set via kernel command line)"
                    ),
                ),
            ]
        else:
            lines += [
                (1.622, "AMD-Vi: Interrupt remapping enabled"),
                (
                    1.843,
                    (
                        f"iommu: Default domain type: {'Passthrough' if spec.iommu == 'identity' else 'Translated'} "
                        "(set via kernel command line)"
                    ),
                ),
            ]
    for g in built.gpu_states_all:
        bus = g.bdf
        lines.append(
            (
                3.1 + 0.01 * g.minor,
                (
                    f"pci {bus}: [10de:{g.model.device_id:04x}] type 00 class 0x{0x030200 if not g.model.vga else 0x030000:06x} "
                    f"PCIe {'Endpoint' if not g.model.vga else 'Legacy Endpoint'}"
                ),
            )
        )
    lines += [
        (11.482, "nvidia: loading out-of-tree module taints kernel."),
        (
            11.482,
            "nvidia: module license 'NVIDIA' taints kernel."
            if not d.open
            else "nvidia: module verification failed: signature and/or required key missing - tainting kernel",
        ),
        (11.533, "nvidia-nvlink: Nvlink Core is being initialized, major device number 234"),
    ]
    for g in built.gpu_states_all:
        lines.append((11.6 + 0.01 * g.minor, f"nvidia {g.bdf}: enabling device (0000 -> 0002)"))
    module = "NVIDIA UNIX Open Kernel Module for " + built.arch if d.open else f"NVIDIA UNIX {built.arch} Kernel Module"
    lines += [
        (11.901, f"NVRM: loading {module}  {d.version}  Tue Oct  8 03:22:07 UTC 2024"),
        (
            12.033,
            (
                "nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms "
                f" {d.version}  Tue Oct  8 02:54:41 UTC 2024"
            ),
        ),
        (
            12.201,
            "nvidia_uvm: module uses symbols nvUvmInterfaceDisableAccessCntr from proprietary module nvidia, inheriting taint.",
        ),
        (12.244, "nvidia-uvm: Loaded the UVM driver, major device number 510."),
    ]
    if d.peermem:
        lines.append((14.02, "nvidia_peermem: loading out-of-tree module taints kernel."))
    for k, _name in enumerate(built.rdma_names):
        bdf = built.rdma_bdfs[k]
        if spec.nics and spec.nics.kind == "efa":
            lines.append((9.1 + 0.01 * k, f"efa {bdf}: Setup irq:{200 + k} name:efa-mgmnt@pci:{bdf}"))
        else:
            lines.append(
                (
                    8.1 + 0.01 * k,
                    f"mlx5_core {bdf}: firmware version: {_nic_firmware(spec)}",
                )
            )
            lines.append((8.1 + 0.01 * k, f"mlx5_core {bdf}: 504.112 Gb/s available PCIe bandwidth (32.0 GT/s PCIe x16 link)"))
    for g_index, xid, text in spec.gpus.xids:
        g = built.gpu_states_all[g_index]
        lines.append((81234.5 + g_index, f"NVRM: Xid (PCI:{g.bdf.rsplit('.', 1)[0]}): {xid}, {text}"))
    if d.userspace and d.userspace != d.version:
        for k in range(3):
            lines += [
                (52311.0 + k, f"NVRM: API mismatch: the client has the version {d.userspace}, but"),
                (52311.0 + k, f"NVRM: this kernel module has the version {d.version}.  Please"),
                (52311.0 + k, "NVRM: make sure that this kernel module and all NVIDIA driver"),
                (52311.0 + k, "NVRM: components have the same version."),
            ]
    for k, text in enumerate(spec.dmesg_extra):
        lines.append((90000.0 + k, text))
    return lines


def _nic_firmware(spec: HostSpec) -> str:
    return "28.39.1002" if spec.nics and spec.nics.kind == "cx7" else "20.39.1002"


class ImpossibleHost(ValueError):
    """A description of a host no real machine can be: a generated fixture must not show values that cannot co-occur."""


def check_possible(spec: HostSpec) -> None:
    """Refuse combinations a real host cannot show (so a fault or archetype cannot test a rule on fiction)."""
    gpus, model = spec.gpus, GPUS[spec.gpus.model]
    problems = []
    if any(m is not None for m in gpus.mig) and not model.mig:
        problems.append(f"MIG instances on {model.name}, which has no MIG")
    for m in gpus.mig:
        for inst in m or ():
            if model.mig_profiles and inst.profile not in {p for p, _, _ in model.mig_profiles}:
                problems.append(f"MIG profile {inst.profile} does not exist on {model.name}")
    if gpus.mig_pending and not model.mig:
        problems.append(f"a MIG mode change pending on {model.name}, which has no MIG")
    for gpu, gen, width in gpus.link_down:
        if gen > model.pcie_gen or width > 16:
            problems.append(f"GPU{gpu} trained at Gen{gen} x{width}: {model.name} has at most Gen{model.pcie_gen} x16")
    if gpus.nvswitches and not model.nvlinks:
        problems.append(f"NVSwitches with {model.name}, which has no NVLink")
    if gpus.nvlink_down and not model.nvlinks:
        problems.append(f"NVLinks down on {model.name}, which has no NVLink")
    if gpus.nvlink_bridges and (not model.nvlinks or gpus.nvswitches or model.form_factor != "PCIe"):
        problems.append(f"NVLink bridges on {model.name} ({model.form_factor}, {gpus.nvswitches} NVSwitches)")
    if any(g >= gpus.count for pair in gpus.nvlink_bridges for g in pair):
        problems.append(f"an NVLink bridge to a GPU beyond the {gpus.count} fitted")
    if gpus.vgpu is not None and (spec.platform.vm is None or model.product_brand == "GeForce" or gpus.mig):
        problems.append(f"a vGPU ({gpus.vgpu}) of {model.name} outside a VM guest, on a GeForce card or with MIG in the guest")
    if not model.ecc and gpus.ecc:
        problems.append(f"ECC on {model.name}, which has none")
    if problems:
        raise ImpossibleHost(f"{spec.name}: " + "; ".join(problems))


def build(spec: HostSpec) -> Built:
    check_possible(spec)
    tree = Tree(spec.hostname, notes=spec.summary)
    ktuple = kn.kernel_tuple(spec.os.kernel)
    tree_layout = write_cpus(tree, spec.cpu, ktuple, spec.os.memory_kib)
    placed = _placed(spec)
    built = Built(spec, tree, placed, tree_layout)
    built.fabric_ready = spec.driver.fabricmanager in (None, "active") or spec.gpus.nvswitches == 0
    built.fabric_ready = built.fabric_ready and (not built.rack_tray or spec.gpus.rack_fabric)
    irq = 140
    for function in placed.topology.functions():
        if function.role in ("gpu", "nic", "nvswitch", "nvme"):
            function.irq = irq
            irq += 17
    write_topology(tree, placed.topology)
    kind, cloud = (spec.nics.kind if spec.nics else "cx7"), spec.platform.cloud
    spark = spec.topology == "spark"  # DGX OS: rdma-core's names by PCI address, not mlx5_N
    built.rdma_names = [ib_name(kind, k, f, cloud=cloud, by_pci=spark) for k, f in enumerate(placed.nics)]
    _server_processes(built)
    add_server_rows(built)
    _gpu_states(built)
    built.gpu_states_all = _all_states(built)
    if spec.driver.userspace and spec.driver.userspace != spec.driver.version:
        built.nvml_error = "LIB_RM_VERSION_MISMATCH"
    _driver_files(built)
    nv.write_nvml(built)
    _nvidia_smi(built)
    write_rdma(built)
    _platform(built)
    _kernel(built)
    for fault in spec.faults:
        fault.apply(built)
    return built


def _all_states(built: Built) -> list[nv.GpuState]:
    """Every physical GPU (the container sees /proc/driver/nvidia for all of them), in bus order."""
    by_minor = {g.minor: g for g in built.gpu_states}
    out = []
    physical = sorted(built.placed.gpus, key=lambda f: f.bdf)
    for p, function in enumerate(physical):
        if p in by_minor:
            out.append(by_minor[p])
            continue
        exp = function.express
        assert exp is not None
        template = built.gpu_states[0] if built.gpu_states else None
        assert template is not None
        out.append(
            replace(
                template,
                index=-1,
                bdf=function.bdf,
                uuid=nv.uuid(built.spec.hostname, "gpu", p),
                minor=p,
                processes=(),
                used_mib=1,
            )
        )
    return out


def _nvidia_smi(built: Built) -> None:
    tree = built.tree
    if built.nvml_error == "LIB_RM_VERSION_MISMATCH":
        user = built.spec.driver.userspace or built.spec.driver.version
        text = f"Failed to initialize NVML: Driver/library version mismatch\nNVML library version: {user.rsplit('.', 1)[0]}\n"
        for argv in (
            ("nvidia-smi",),
            ("nvidia-smi", "-L"),
            ("nvidia-smi", "-q"),
            ("nvidia-smi", "topo", "-m"),
            ("nvidia-smi", "nvlink", "-s"),
        ):
            tree.command(argv, text, exit_code=18)
        return
    if built.nvml_error is not None:
        return
    tree.command(("nvidia-smi",), nv.smi_summary(built))
    tree.command(("nvidia-smi", "-L"), nv.smi_list(built))
    tree.command(("nvidia-smi", "-q"), nv.smi_query(built))
    tree.command(("nvidia-smi", "topo", "-m"), nv.topo_matrix(built))
    tree.command(("nvidia-smi", "nvlink", "-s"), nv.nvlink_status(built))
    if built.model.mig:
        tree.command(
            ("nvidia-smi", "mig", "-lgi"), nv.smi_mig_lgi(built), exit_code=0 if any(g.mig for g in built.gpu_states) else 6
        )


def _platform(built: Built) -> None:
    tree, spec = built.tree, built.spec
    p = spec.platform
    vm = p.vm
    if built.guest:
        pf.write_dmi(tree, pf.guest_dmi(p.cloud, p.instance_type) | dict(p.dmi))
        tree.directory("/sys/hypervisor")
    else:
        pf.write_dmi(tree, dict(p.dmi) | {"chassis_type": "23"})
    self_pid = SELF_PID_CONTAINER if built.container else SELF_PID_HOST
    tree.link("/proc/self", str(self_pid))
    tree.link("/proc/thread-self", f"{self_pid}/task/{self_pid}")
    tree.link("/proc/mounts", "self/mounts")
    pf.write_cgroup(built)
    if built.container:
        _container_layer(built, self_pid)
    else:
        _host_layer(built, self_pid, vm)
    for proc in built.procs.values():
        write_proc(tree, proc)
    if spec.nccl_conf is not None:
        tree.file("/etc/nccl.conf", spec.nccl_conf)
    if spec.nccl_topo is not None:
        write_topology_file(built, spec.nccl_topo)
    for server in spec.processes:
        root = (
            f"/proc/{next(pid for pid, pr in built.procs.items() if pr.argv == server.argv)}/root"
            if server.in_container and not built.container
            else ""
        )
        _python_site(tree, root, server)


def _python_site(tree: Tree, root: str, server: ProcessSpec) -> None:
    site = f"{root}{server.site}"
    if server.torch is not None:
        tree.file(
            f"{site}/torch/version.py",
            "from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
            f"__version__ = '{server.torch}'\ndebug = False\ncuda: Optional[str] = {server.torch_cuda!r}\n"
            "git_version = 'e4ee3be4063b7c430974252fdf7db42273388d86'\nhip: Optional[str] = None\n",
        )
        nccl_pin = (
            f'Requires-Dist: nvidia-nccl-cu12=={server.nccl}; platform_system == "Linux" and platform_machine == "x86_64"\n'
            if server.nccl
            else ""
        )
        tree.file(
            f"{site}/torch-{server.torch}.dist-info/METADATA",
            f"Metadata-Version: 2.1\nName: torch\nVersion: {server.torch}\n"
            "Summary: Tensors and Dynamic neural networks in Python with strong GPU "
            "acceleration\n"
            "Requires-Python: >=3.8.0\nRequires-Dist: filelock\nRequires-Dist: typing-extensions>=4.8.0\n" + nccl_pin,
        )
    if server.nccl is not None:
        tree.file(
            f"{site}/nvidia_nccl_cu12-{server.nccl}.dist-info/METADATA",
            f"Metadata-Version: 2.1\nName: nvidia-nccl-cu12\nVersion: {server.nccl}\n",
        )
        tree.file(f"{site}/nvidia/nccl/lib/libnccl.so.2", b"\x7fELF\x02\x01\x01")


def _dev_nodes(built: Built) -> list[str]:
    minors = built.visible_gpu_minors if built.container else list(range(built.spec.gpus.count))
    nodes = [f"nvidia{m}" for m in minors] + ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"]
    if not built.container:
        nodes += ["nvidia-modeset"] + [f"nvidia-nvswitch{k}" for k in range(len(built.placed.nvswitches))]
        if built.placed.nvswitches:
            nodes.append("nvidia-nvswitchctl")
    return nodes


DOCKER_DAEMONS = (
    (1810, ("/usr/bin/containerd",), "containerd", "0::/system.slice/containerd.service\n"),
    (
        1902,
        ("/usr/bin/dockerd", "-H", "fd://", "--containerd=/run/containerd/containerd.sock"),
        "dockerd",
        "0::/system.slice/docker.service\n",
    ),
    (
        3100,
        (
            "/usr/bin/containerd-shim-runc-v2",
            *("-namespace", "moby", "-id", "5e8a2b9c7d1f", "-address", "/run/containerd/containerd.sock"),
        ),
        "containerd-shim",
        "0::/system.slice/containerd.service\n",
    ),
)


def _engine_daemons(spec: HostSpec) -> list[tuple[int, tuple[str, ...], str, str]]:
    """The engine's processes on a host whose servers run in containers: dockerd and its shim, or (Podman has no
    daemon) the user's pause process and the container's conmon, in the user's systemd slice (podman.py)."""
    engines = {s.engine: s.user for s in spec.processes if s.in_container}
    daemons = list(DOCKER_DAEMONS) if "docker" in engines else []
    if "containerd" in engines:
        daemons += [
            (1810, ("/usr/bin/containerd",), "containerd", "0::/system.slice/containerd.service\n"),
            (
                1850,
                (
                    "/usr/bin/kubelet",
                    "--config=/var/lib/kubelet/config.yaml",
                    "--container-runtime-endpoint=unix:///run/containerd/containerd.sock",
                ),
                "kubelet",
                "0::/system.slice/kubelet.service\n",
            ),
        ]
    if "podman" in engines:
        uid = engines["podman"]
        daemons += [
            (2410, ("catatonit", "-P"), "catatonit", f"0::{podman.user_slice(uid)}/podman-pause-4b7e1c2a.scope\n"),
            (3100, podman.conmon_argv(uid), "conmon", f"0::{podman.user_slice(uid)}/libpod-conmon-{podman.CONTAINER_ID}.scope\n"),
        ]
    return daemons


def _host_layer(built: Built, self_pid: int, vm: str | None) -> None:
    tree, spec = built.tree, built.spec
    virt = pf.DETECT_VIRT.get(spec.platform.cloud or "kvm", "kvm") if vm else "none"
    code = 0 if vm else 1
    tree.command(("systemd-detect-virt",), virt + "\n", exit_code=code)
    tree.command(("systemd-detect-virt", "--vm"), virt + "\n", exit_code=code)
    tree.command(("systemd-detect-virt", "--container"), "none\n", exit_code=1)
    topology = built.placed.topology
    tree.command(("lspci",), lspci_lines(topology))
    tree.command(("lspci", "-nn"), lspci_lines(topology, numeric=True))
    tree.command(("lspci", "-D"), lspci_lines(topology, domains=True))
    if spec.os.tuned is not None and not built.container:
        write_tuned(tree, spec.os.tuned)
    write_mps(built)
    write_cdi(built)
    k8s.write_node(built)
    tree.command(
        ("systemctl", "is-active", "irqbalance"), spec.os.irqbalance + "\n", exit_code=0 if spec.os.irqbalance == "active" else 3
    )
    tree.command(("dmesg",), kn.dmesg_text(_boot_log(built)))
    env = dict(pf.SYSTEMD_ENV) | {"BOOT_IMAGE": f"/boot/vmlinuz-{spec.os.kernel}"}
    built.procs[1] = Proc(
        1,
        ("/sbin/init", "splash") if not vm else ("/sbin/init",),
        comm="systemd",
        ppid=0,
        threads=1,
        env=env,
        cgroup="0::/init.scope\n",
        exe="/usr/lib/systemd/systemd",
        vm_kib=168000,
    )
    kthreads = [(2, "kthreadd")] + [(3 + k, name) for k, name in enumerate(KERNEL_THREADS[1:])]
    for pid, name in kthreads:
        built.procs[pid] = Proc(pid, (), comm=name, ppid=0 if pid == 2 else 2, kernel_thread=True, cgroup="0::/\n")
    daemons = [
        (812, ("/usr/lib/systemd/systemd-journald",), "systemd-journal", "0::/system.slice/systemd-journald.service\n"),
        (861, ("/usr/lib/systemd/systemd-udevd",), "systemd-udevd", "0::/system.slice/systemd-udevd.service\n"),
        (1450, ("/usr/sbin/irqbalance", "--foreground"), "irqbalance", "0::/system.slice/irqbalance.service\n"),
        (1622, ("sshd: /usr/sbin/sshd -D [listener] 0 of 10-100 startups",), "sshd", "0::/system.slice/ssh.service\n"),
        (1630, ("/usr/sbin/cron", "-f", "-P"), "cron", "0::/system.slice/cron.service\n"),
    ]
    if spec.driver.persistenced == "active":
        daemons.append(
            (
                1702,
                ("/usr/bin/nvidia-persistenced", "--user", "nvidia-persistenced", "--uvm-persistence-mode", "--verbose"),
                "nvidia-persiste",
                "0::/system.slice/nvidia-persistenced.service\n",
            )
        )
    if spec.driver.fabricmanager == "active":
        daemons.append(
            (
                1740,
                ("/usr/bin/nv-fabricmanager", "-c", "/usr/share/nvidia/nvswitch/fabricmanager.cfg"),
                "nv-fabricmanage",
                "0::/system.slice/nvidia-fabricmanager.service\n",
            )
        )
    if spec.driver.fabricmanager == "active" and built.placed.management:
        daemons.append((NVLSM_PROC, nvlsm_argv(built), "nvlsm", "0::/system.slice/nvidia-fabricmanager.service\n"))
    if spec.driver.imex == "active":
        daemons.append(
            (1766, ("/usr/bin/nvidia-imex", "-c", IMEX_CONFIG), "nvidia-imex", "0::/system.slice/nvidia-imex.service\n")
        )
    daemons += _engine_daemons(spec)
    contained = {pid: proc.uid for pid, proc in built.procs.items() if proc.mnt_ns == CONTAINER_NS}
    podman.write_host_view(built, contained)
    for pid, argv, comm, cgroup in daemons:
        built.procs[pid] = Proc(
            pid, argv, comm=comm, cgroup=cgroup, exe=argv[0] if argv[0].startswith("/") else "/usr/sbin/sshd", vm_kib=24000
        )
    built.procs[self_pid] = Proc(
        self_pid,
        ("/usr/bin/python3", "/usr/local/bin/rigaudit", "snapshot", "-o", "snap"),
        comm="rigaudit",
        ppid=48190,
        cgroup="0::/user.slice/user-0.slice/session-3.scope\n",
        limits=limits_text(memlock="8388608", nofile=(1024, 1048576)),
        mounts=pf.host_mounts(built),
        exe="/usr/bin/python3.10",
        vm_kib=98000,
        cpus=built.all_cpus,
        mems=built.all_mems,
    )
    for name in [
        *_dev_nodes(built),
        "null",
        "zero",
        "full",
        "random",
        "urandom",
        "tty",
        "console",
        "kmsg",
        "mem",
        "nvme0",
        "nvme0n1",
        "cpu_dma_latency",
        "shm",
        "hugepages",
        "mqueue",
        "pts",
        "fd",
        "stdin",
        "stdout",
        "stderr",
        "log",
        "rtc0",
        "watchdog",
        "ipmi0",
    ]:
        tree.unreadable[f"/dev/{name}"] = "NOT_RECORDED"
    if spec.driver.imex is not None:
        tree.unreadable[f"{CHANNELS}/channel0"] = "NOT_RECORDED"
    if built.rdma_names:
        for k in range(len(built.rdma_names)):
            tree.unreadable[f"/dev/infiniband/uverbs{k}"] = "NOT_RECORDED"
        tree.unreadable["/dev/infiniband/rdma_cm"] = "NOT_RECORDED"
    tree.link("/dev/fd", "/proc/self/fd")
    tree.link("/dev/stdin", "/proc/self/fd/0")
    tree.link("/proc/net", "self/net")
    tree.file(
        "/proc/devices",
        (
            "Character devices:\n  1 mem\n  4 /dev/vc/0\n"
            "  4 tty\n  5 /dev/tty\n  5 /dev/console\n"
            " 10 misc\n 13 input\n195 nvidia-frontend\n"
            "226 drm\n231 infiniband_verbs\n234 nvidia-nvlink\n"
            "235 nvidia-caps\n236 nvidia-nvswitch\n" + imex_proc_devices(built) + "510 nvidia-uvm\n"
            "\nBlock devices:\n  7 loop\n  8 sd\n259 blkext\n"
        ),
    )
    for g in built.gpu_states_all:
        irq = built.function(g.bdf).irq
        cpus = built.cpulist_of(g.bdf)
        node = built.numa_of(g.bdf)
        first_cpu = cpus.split("-")[0].split(",")[0] if cpus else "0"
        tree.attrs(
            f"/proc/irq/{irq}", {"smp_affinity_list": cpus or built.all_cpus, "effective_affinity_list": first_cpu, "node": node}
        )
    tree.file(f"/lib/modules/{spec.os.kernel}/modules.dep", _modules_dep(built))
    for old in spec.os.old_kernels:
        tree.file(f"/lib/modules/{old}/modules.dep", _modules_dep(built))


def _container_layer(built: Built, self_pid: int) -> None:
    tree, spec = built.tree, built.spec
    p = spec.platform
    write_mps(built)
    if p.container == "docker":
        tree.file("/.dockerenv", b"")
    elif p.container == "podman":
        write_podman(built, (1, self_pid, *(pid for pid in built.procs if pid > 1)))
    else:
        sa = "/var/run/secrets/kubernetes.io/serviceaccount"
        tree.link("/var/run", "../run")
        tree.attrs("/run/secrets/kubernetes.io/serviceaccount", {"namespace": p.namespace})
        tree.file(
            "/run/secrets/kubernetes.io/serviceaccount/ca.crt",
            (
                "-----BEGIN CERTIFICATE-----\nMIIC/jCCAeagAwIBAgIBADANBgkqhkiG9w0BAQsFADAVMRMwEQYDVQQDEwprdWJl\n"
                "-----END CERTIFICATE-----\n"
            ),
        )
        tree.deny("/run/secrets/kubernetes.io/serviceaccount/token", "NOT_RECORDED")
        del sa
        tree.file(
            "/etc/hosts",
            (
                "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n"
                "::1\tlocalhost ip6-localhost ip6-loopback\n"
                f"10.244.3.17\t{p.pod}\n"
            ),
        )
        tree.file(
            "/etc/resolv.conf",
            f"search {p.namespace}.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n",
        )
        tree.file("/dev/termination-log", b"")
    for program in (
        "systemd-detect-virt",
        "systemctl",
        "pct",
        "dpkg-query",
        "ibstat",
        "ibv_devinfo",
        "ofed_info",
        "modinfo",
        "lspci",
    ):
        tree.missing_program(program)
    tree.command(("dmesg",), "", exit_code=1, stderr="dmesg: read kernel buffer failed: Operation not permitted\n")
    mounts = pf.container_mounts(built)
    if 1 not in built.procs:
        built.procs[1] = Proc(
            1, ("/bin/bash",), comm="bash", ppid=0, env=_container_env(built), cgroup="0::/\n", mnt_ns=CONTAINER_NS, mounts=mounts
        )
    else:
        built.procs[1].env = _container_env(built) | built.procs[1].env
    built.procs[self_pid] = Proc(
        self_pid,
        ("/usr/bin/python3", "/usr/local/bin/rigaudit", "snapshot", "-o", "/tmp/snap"),
        comm="rigaudit",
        ppid=0,
        cgroup="0::/\n",
        env=_container_env(built),
        limits=limits_text(memlock=p.memlock, nofile=(1048576, 1048576)),
        mounts=mounts,
        mountinfo=pf.mountinfo(mounts),
        exe="/usr/bin/python3.10",
        mnt_ns=CONTAINER_NS,
        vm_kib=98000,
        cpus=built.all_cpus,
        mems=built.all_mems,
    )
    for name in [
        *_dev_nodes(built),
        "null",
        "zero",
        "full",
        "random",
        "urandom",
        "tty",
        "console",
        "core",
        "ptmx",
        "shm",
        "mqueue",
        "pts",
        "fd",
        "stdin",
        "stdout",
        "stderr",
    ]:
        tree.unreadable[f"/dev/{name}"] = "NOT_RECORDED"
    if built.rdma_names and p.container == "k8s":
        tree.unreadable["/dev/infiniband/uverbs0"] = "NOT_RECORDED"
    tree.file(
        "/proc/devices",
        "Character devices:\n  1 mem\n  4 /dev/vc/0\n"
        "  4 tty\n  5 /dev/tty\n  5 /dev/console\n"
        " 10 misc\n195 nvidia-frontend\n226 drm\n"
        "234 nvidia-nvlink\n235 nvidia-caps\n510 nvidia-uvm\n\nBlock devices:\n  7 loop\n259 blkext\n",
    )
    for g in built.gpu_states_all:
        irq = built.function(g.bdf).irq
        cpus = built.cpulist_of(g.bdf)
        tree.attrs(
            f"/proc/irq/{irq}",
            {
                "smp_affinity_list": cpus or built.all_cpus,
                "effective_affinity_list": (cpus or "0").split("-")[0].split(",")[0],
                "node": built.numa_of(g.bdf),
            },
        )


def _container_env(built: Built) -> dict[str, str]:
    p = built.spec.platform
    visible = (
        ",".join(f"GPU-{nv.uuid(built.spec.hostname, 'gpu', g)}" for g in built.visible_physical)
        if p.visible_gpus is not None
        else "all"
    )
    env = {
        "PATH": "/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOSTNAME": built.tree.hostname,
        "NVIDIA_VISIBLE_DEVICES": visible,
        "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
        "NVIDIA_REQUIRE_CUDA": "cuda>=12.4 brand=tesla,driver>=470,driver<471 brand=tesla,driver>=535,driver<536",
        "CUDA_VERSION": "12.4.1",
        "LD_LIBRARY_PATH": "/usr/local/nvidia/lib:/usr/local/nvidia/lib64",
        "HOME": "/root",
    }
    if p.container == "k8s":
        env |= {
            "KUBERNETES_SERVICE_HOST": "10.96.0.1",
            "KUBERNETES_SERVICE_PORT": "443",
            "KUBERNETES_SERVICE_PORT_HTTPS": "443",
            "KUBERNETES_PORT": "tcp://10.96.0.1:443",
            "KUBERNETES_PORT_443_TCP": "tcp://10.96.0.1:443",
            "KUBERNETES_PORT_443_TCP_PROTO": "tcp",
            "KUBERNETES_PORT_443_TCP_PORT": "443",
            "KUBERNETES_PORT_443_TCP_ADDR": "10.96.0.1",
        }
    return env


def _kernel(built: Built) -> None:
    tree, spec = built.tree, built.spec
    kn.write_kernel(tree, spec.os, arch=built.arch, boot_log=[])
    tree.file("/proc/modules", "\n".join(_modules(built)) + "\n")
    if built.container:
        for path in [
            p
            for p in tree.files
            if p.startswith(("/boot/", "/lib/modules", "/etc/default/grub", "/etc/modprobe.d", "/sys/firmware/efi/"))
        ]:
            del tree.files[path]
        tree.dirs = {d for d in tree.dirs if not d.startswith(("/sys/firmware/efi", "/var/lib/dkms"))}
        tree.links = {k: v for k, v in tree.links.items() if not k.startswith("/var/lib/dkms")}
        tree.file("/etc/os-release", kn.OS_RELEASE["ubuntu-22.04"])
        tree.attrs("/proc/sys/kernel", {"dmesg_restrict": 1})
    elif spec.os.distro.startswith("ubuntu"):
        tree.attrs("/proc/sys/kernel", {"dmesg_restrict": 1})


def write(spec: HostSpec, root: Path) -> Path:
    """Build ``spec`` and write it as a snapshot directory at ``root``."""
    return build(spec).tree.write(root)
