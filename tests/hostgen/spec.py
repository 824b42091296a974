"""The declarative description of a host: what an archetype is made of. Frozen: faults return changed copies."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tests.hostgen.cpu import CpuSpec

if TYPE_CHECKING:
    from tests.hostgen.build import Built


@dataclass(frozen=True)
class OsSpec:
    distro: str
    """``ubuntu-22.04``, ``ubuntu-24.04``, ``rhel-9.4``, ``debian-12``."""
    kernel: str
    """``uname -r``: ``5.15.0-105-generic``."""
    cmdline: str = ""
    """The boot line after ``BOOT_IMAGE=... root=...`` (iommu, amd_pstate...)."""
    thp: str = "madvise"
    thp_defrag: str = "madvise"
    numa_balancing: int = 0
    swappiness: int = 60
    zone_reclaim: int = 0
    memory_kib: int = 2113245184
    swap_kib: int = 0
    secure_boot: bool = False
    efi: bool = True
    old_kernels: tuple[str, ...] = ()
    """Other kernels installed under /lib/modules and /boot."""
    irqbalance: str = "active"
    tuned: str | None = None
    """TuneD's active profile (``throughput-performance``), its service active; None: tuned not installed."""


@dataclass(frozen=True)
class MigInstance:
    profile: str
    """``3g.40gb``."""
    gi: int
    ci: int = 0


@dataclass(frozen=True)
class DriverSpec:
    version: str = "550.127.05"
    open: bool = False
    """The open kernel module (``NVIDIA UNIX Open Kernel Module``)."""
    userspace: str | None = None
    """Installed user-space version when it differs from the loaded module (upgrade without reboot)."""
    persistence: bool = True
    persistenced: str = "active"
    persistenced_args: str = "--user nvidia-persistenced --verbose"
    """The options nvidia-persistenced's unit starts it with. Which distributions' packaged units add
    ``--no-persistence-mode`` is not shown by a public source read here: faults.persistence_by_unit sets it."""
    fabricmanager: str | None = None
    """``systemctl is-active nvidia-fabricmanager``: ``active``, ``failed``...; None: not installed."""
    fabricmanager_version: str | None = None
    peermem: bool = False
    """nvidia_peermem loaded."""
    dkms: bool = True
    cuda: int = 12040
    """nvmlSystemGetCudaDriverVersion (12040 = CUDA 12.4)."""
    vgpu_license: str = "licensed"
    """A vGPU guest's licence (``licensed``, ``unlicensed``): nvidia-gridd's state, ``nvidia-smi -q``'s License
    Status."""
    vgpu_manager: str | None = None
    """The host's NVIDIA Virtual GPU Manager version a vGPU guest reports (``550.127.06``)."""
    imex: str | None = None
    """``systemctl is-active nvidia-imex`` on a multi-node NVLink compute tray (``active``, ``failed``); None: IMEX
    not installed."""
    cc: str | None = None
    """Confidential computing (Hopper and later, in a CVM guest): ``on`` (CC mode); None: off
    (:mod:`tests.hostgen.confcompute`)."""
    cc_ready: bool = True
    """The CVM set the GPUs' CC ready state (after attesting them); CUDA refuses work until it does."""
    cc_devtools: bool = False
    """The GPUs' CC mode is ``devtools`` (profiling and debugging allowed; not a production CC mode)."""
    mps: bool = False
    """NVIDIA MPS: ``nvidia-cuda-mps-control -d`` started by a unit (``nvidia-mps.service``, default pipe directory
    /tmp/nvidia-mps), the servers its clients (:mod:`tests.hostgen.mps`)."""


@dataclass(frozen=True)
class GpuSpec:
    model: str
    count: int
    nvswitches: int = 0
    """NVSwitch chips on the baseboard (visible as PCI bridges, class 0x0680)."""
    mig: tuple[tuple[MigInstance, ...] | None, ...] = ()
    """Per GPU: None (MIG off) or the instances configured (MIG on)."""
    mig_pending: tuple[int, ...] = ()
    """GPUs whose pending MIG mode differs from the current one (changed, reset pending)."""
    ecc: bool | None = None
    """None: the model's default."""
    power_limit_w: tuple[int, ...] = ()
    """Enforced limit per GPU (W) when lowered; empty: the default."""
    p2p: str | None = None
    """Override of the P2P status code name for every pair: ``OK``, ``NOT_SUPPORTED``, ``CHIPSET_NOT_SUPPORTED``..."""
    nvlink_down: tuple[tuple[int, int], ...] = ()
    """(gpu, link) pairs whose NVLink is inactive."""
    temperature_c: int = 34
    clocks_event_reasons: int = 0x1
    """nvmlDeviceGetCurrentClocksEventReasons (0x1 idle)."""
    xids: tuple[tuple[int, int, str], ...] = ()
    """Kernel-log Xid lines: (gpu, xid, text)."""
    max_read_request: int = 4096
    bar1_small: bool = False
    link_down: tuple[tuple[int, int, int], ...] = ()
    """(gpu, gen, width) GPUs whose link trained below its capability."""
    remapped_pending: tuple[int, ...] = ()
    vbios_odd: tuple[int, ...] = ()
    """GPUs flashed with another VBIOS than their siblings."""
    nvlink_bridges: tuple[tuple[int, int], ...] = ()
    """GPU pairs (bus order) joined by NVLink bridges (H100 NVL, A100 PCIe, RTX A6000): NVLink within a pair, PCIe
    across pairs."""
    rack_fabric: bool = True
    """On a multi-node NVLink rack's compute tray (topology ``grace-nvl``): the switch trays completed the GPUs'
    fabric registration."""
    compute_mode: int = 0
    """nvmlComputeMode_t of every GPU: 0 Default, 2 Prohibited, 3 Exclusive_Process (what NVIDIA's MPS guide
    recommends under MPS)."""
    vgpu: str | None = None
    """NVIDIA vGPU profile each GPU of a guest is (``80C``: a C-series vGPU with the whole framebuffer of an H100
    PCIe): the guest's NVML name is ``NVIDIA H100-80C`` and physical properties are the hypervisor's."""


@dataclass(frozen=True)
class NicSpec:
    kind: str = "cx7"
    """``cx7``, ``cx6``, ``efa``."""
    count: int = 8
    link_layer: str = "InfiniBand"
    rate_gbps: int = 400
    ofed: str | None = "MLNX_OFED_LINUX-23.10-2.1.3.1"
    """MLNX_OFED version installed (None: the distribution's inbox rdma-core)."""


@dataclass(frozen=True)
class ProcessSpec:
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    gpus: tuple[int, ...] = ()
    """GPUs it holds (NVML compute processes)."""
    gpu_memory_mib: int = 0
    user: int = 0
    threads: int = 64
    cgroup: str | None = None
    """Overrides the platform's cgroup line."""
    memlock: str = "unlimited"
    nofile: tuple[int, int] = (1048576, 1048576)
    nproc: int = 8255462
    """RLIMIT_NPROC, soft and hard (the kernel's default on a large host)."""
    mig: tuple[tuple[int, int, int], ...] = ()
    """(gpu, gi, ci) MIG instances it runs on."""
    python: str = "/usr/bin/python3"
    site: str = "/usr/local/lib/python3.10/dist-packages"
    in_container: bool = False
    """Runs in a Docker container on this host (seen from the host: another mount namespace, a docker cgroup)."""
    labels: tuple[tuple[str, str], ...] = ()
    """Labels of that container (``com.docker.compose.project``...), as ``docker inspect`` shows them."""
    compat: str | None = None
    """The CUDA forward-compatibility libcuda it maps instead of the host driver's
    (``/usr/local/cuda-12.8/compat/libcuda.so.570.124.06``: the cuda-compat-12-8 package of the image)."""
    torch: str | None = "2.4.0+cu124"
    torch_cuda: str | None = "12.4"
    nccl: str | None = "2.20.5"
    engine: str = "docker"
    """The engine of the container it runs in (``in_container``): ``docker``, ``podman`` (rootless when ``user``
    is not 0: conmon under the user's systemd, the user's cgroup slice), or ``containerd`` (a Kubernetes pod on this
    node: :mod:`tests.hostgen.k8s`)."""


@dataclass(frozen=True)
class CdiSpec:
    """The host's CDI spec for its GPUs, as ``nvidia-ctk cdi generate`` writes it (:mod:`tests.hostgen.cdi`)."""

    path: str = "/etc/cdi/nvidia.yaml"
    """Where it is: ``/etc/cdi/nvidia.yaml`` (generated by hand) or ``/var/run/cdi/nvidia.yaml`` (nvidia-cdi-refresh)."""
    driver: str | None = None
    """The driver version it was generated for (None: the loaded one)."""
    uvm: bool = True
    """It lists /dev/nvidia-uvm and /dev/nvidia-uvm-tools (False: generated before nvidia_uvm was loaded)."""
    refresh: bool = False
    """NVIDIA Container Toolkit 1.18's ``nvidia-cdi-refresh`` path and service units are installed and enabled."""
    refresh_disabled: bool = False
    """The units are installed but the path unit is disabled (``systemctl disable nvidia-cdi-refresh.path``)."""
    toolkit: str = "1.17.8"


@dataclass(frozen=True)
class PlatformSpec:
    """The layers: bare metal, a VM guest, a container (docker / containerd-k8s), or a container in a VM."""

    vm: str | None = None
    """``kvm``, ``amazon``, ``google``: the hypervisor of the VM the audit runs in (or the container's VM)."""
    cloud: str | None = None
    """``aws``, ``gcp``: whose DMI the VM shows."""
    instance_type: str = ""
    container: str | None = None
    """``docker``, ``podman`` (GPUs through CDI) or ``k8s`` (containerd)."""
    shm_bytes: int | None = None
    """/dev/shm size inside the container (None: --ipc=host, the host's)."""
    cpu_quota: float | None = None
    """CPUs of CFS quota for the container (cpu.max); None: max."""
    throttled: tuple[int, int] = (0, 0)
    """(nr_throttled, nr_periods) in the container's cpu.stat."""
    memlock: str = "unlimited"
    pod: str = "vllm-0"
    namespace: str = "inference"
    dmi: tuple[tuple[str, str], ...] = ()
    """DMI (sys_vendor, product_name, board_name, bios_version...): the machine's; in a VM guest, what the
    hypervisor's firmware writes over the defaults of its kind."""
    vm_root_port: tuple[int, int] = (4, 32)
    """A q35 guest's emulated root ports: (generation, width) QEMU advertises (x-speed 16 GT/s, x-width 32 since
    machine type 4.0; 2.5 GT/s x1 before); (0, 0): no root port, the GPUs on the root bus (pcie.0)."""
    rootless_uid: int | None = None
    """A rootless Podman container (``container="podman"``): the uid of the host user it runs as
    (:mod:`tests.hostgen.podman`)."""
    visible_gpus: tuple[int, ...] | None = None
    """Physical GPUs (in bus order) the container was given; None: all of them."""
    shared_mib: int = 0
    """Memory other pods hold on each GPU given to this container (a GPU the device plugin time-slices): counted in
    NVML's memory info, absent from the container's process list."""


Tweak = Callable[["Built"], None]


@dataclass(frozen=True)
class Fault:
    """A named change applied to the built host (its tree, with the topology known)."""

    name: str
    summary: str
    apply: Tweak


@dataclass(frozen=True)
class HostSpec:
    name: str
    summary: str
    hostname: str
    cpu: CpuSpec
    os: OsSpec
    gpus: GpuSpec
    driver: DriverSpec = field(default_factory=DriverSpec)
    topology: str = "direct"
    """``hgx`` (a PCIe switch per GPU, NIC beside it), ``direct`` (a root port per GPU), ``switch`` (GPUs in
    fours behind PEX switches), ``flat`` (a VM: devices on the root bus), ``hyperv`` (a Hyper-V guest: each device in
    its own vPCI domain, InfiniBand NICs as SR-IOV VFs), ``q35`` (a KVM guest: each GPU behind a QEMU pcie-root-port),
    ``grace`` (GH200), ``grace-nvl`` (a GB200 NVL72 compute tray: two Grace, four GPUs, NVLink to the rack's switch
    trays)."""
    root_complex: str = "intel-spr"
    nics: NicSpec | None = None
    platform: PlatformSpec = field(default_factory=PlatformSpec)
    processes: tuple[ProcessSpec, ...] = ()
    iommu: str | None = "identity"
    """IOMMU group type on the host (None: no IOMMU, no groups)."""
    acs_redirect: bool = False
    """Kernel enabled ACS redirect on switch downstream ports (an IOMMU driver asked for ACS)."""
    faults: tuple[Fault, ...] = ()
    nccl_conf: str | None = None
    nccl_topo: str | None = None
    """The NCCL topology file an Azure HPC image ships for its ND size (``ndv5``: /opt/microsoft/ndv5-topo.xml and
    its /opt/microsoft/ndv5/topo.xml link; :mod:`tests.hostgen.azure`); None: none."""
    dmesg_extra: tuple[str, ...] = ()
    time_slicing: int | None = None
    """A Kubernetes node whose device plugin shares each GPU by time-slicing: the replicas per GPU
    (:mod:`tests.hostgen.k8s`); None: none."""
    cdi: CdiSpec | None = None
    """The host's CDI spec (a host whose containers get their GPUs by CDI); None: none."""
    expect: str = ""
    """What an expert would say of this host: problems they would report, in words."""
