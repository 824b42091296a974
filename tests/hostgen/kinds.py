"""More host kinds (issue 33): hosts whose verdicts rest on premises and deliberate configurations, kept apart from
``archetypes.ALL`` so that their tests live in their own small files (tests/test_kinds_*.py) and share fixtures.

Each is a few lines over the parts of ``archetypes``; where no public source shows a detail, a comment says so.
"""

from __future__ import annotations

from dataclasses import replace

from tests.hostgen.archetypes import (
    ALL8,
    CASCADE_LAKE_VM,
    DOCKER_BM,
    GEFORCE,
    GRACE,
    HGX_H100,
    IB_ENV,
    INTEL_SNC,
    JAMMY,
    K8S_POD,
    NOBLE,
    PROXMOX_H100,
    TIB_KIB,
    XEON_6448Y,
    XEON_8462,
    sglang,
    vllm,
)
from tests.hostgen.azure import nccl_conf
from tests.hostgen.mps import PLUGIN_LOG as MPS_PLUGIN_LOG
from tests.hostgen.mps import PLUGIN_PIPE as MPS_PLUGIN_PIPE
from tests.hostgen.spec import CdiSpec, DriverSpec, GpuSpec, HostSpec, NicSpec, OsSpec, PlatformSpec, ProcessSpec

COMPAT_CUDA = "/usr/local/cuda-12.8/compat"
COMPAT_LIBCUDA = f"{COMPAT_CUDA}/libcuda.so.570.124.06"
"""cuda-compat-12-8 is built from the 570 branch (NVIDIA's CUDA compatibility guide: each cuda-compat-X-Y package is
generated from the driver that ships CUDA X.Y); vLLM's CUDA 12.8 images install it under /usr/local/cuda-12.8/compat."""
COMPAT_ENV = (
    ("LD_LIBRARY_PATH", f"{COMPAT_CUDA}:/usr/local/nvidia/lib:/usr/local/nvidia/lib64"),
    ("NVIDIA_VISIBLE_DEVICES", "all"),
    ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility"),
)


def _compat_server(model: str, gpus: tuple[int, ...], *, mib: int) -> ProcessSpec:
    return replace(
        vllm(model, gpus, mib=mib, env=COMPAT_ENV),
        compat=COMPAT_LIBCUDA,
        torch="2.7.0+cu128",
        torch_cuda="12.8",
        nccl="2.26.2",
    )


DC_FORWARD_COMPAT = replace(
    DOCKER_BM,
    name="docker-h100-forward-compat",
    summary="Docker container (NVIDIA Container Toolkit, --gpus all --ipc=host) with a CUDA 12.8 vLLM image on a "
    "bare-metal HGX H100 host that stays on the 535 LTS driver (CUDA 12.2): the image's cuda-compat-12-8 libcuda "
    "(570 branch, /usr/local/cuda-12.8/compat, on LD_LIBRARY_PATH and in ld.so.conf.d) runs CUDA 12.8 over the "
    "535 kernel module: CUDA forward compatibility on data-center GPUs",
    hostname="7a3c91e0b2d4",
    driver=DriverSpec("535.216.03", fabricmanager="active", peermem=True, cuda=12020),
    processes=(_compat_server("/models/Llama-3.1-70B-Instruct", ALL8, mib=73240),),
    expect="healthy and deliberate: forward compatibility is NVIDIA's supported way to run a newer CUDA on an older "
    "data-center driver; nothing is to be installed",
)

GEFORCE_FORWARD_COMPAT = replace(
    GEFORCE,
    name="geforce-container-forward-compat",
    summary="Docker container (--gpus all --ipc=host) on the 4x RTX 4090 workstation, whose host driver is 535 "
    "(CUDA 12.2), running the same CUDA 12.8 image with its cuda-compat libcuda on LD_LIBRARY_PATH: forward "
    "compatibility, which NVIDIA does not support on GeForce (CUDA init: CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE), so "
    "the server's process holds no GPU memory",
    hostname="3f0e8d27c6a1",
    driver=DriverSpec("535.183.01", open=False, cuda=12020),
    platform=PlatformSpec(container="docker", shm_bytes=None),
    processes=(
        replace(
            _compat_server("/models/Qwen2.5-32B-Instruct-AWQ", (0, 1, 2, 3), mib=22000),
            env=(*COMPAT_ENV, ("NCCL_P2P_DISABLE", "1")),
        ),
    ),
    expect="problem: forward compatibility on GeForce fails CUDA init; the fix drops the compat path (CUDA 12.8 then "
    "runs on the 535 driver by minor-version compatibility), it installs no libraries and no driver",
)

RHEL94 = OsSpec(
    "rhel-9.4",
    "5.14.0-427.13.1.el9_4.x86_64",
    cmdline="crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M resume=/dev/mapper/rhel-swap rd.lvm.lv=rhel/root rhgb quiet",
    thp="always",
    swappiness=10,
    memory_kib=TIB_KIB,
    old_kernels=("5.14.0-362.24.1.el9_3.x86_64",),
    tuned="throughput-performance",
)
"""RHEL 9.4 as installed on a server: tuned active with throughput-performance (RHEL's default server profile), which
sets THP always and vm.swappiness 10; boot lines edited with grubby (BLS entries)."""

RHEL9_TUNED = replace(
    HGX_H100,
    name="rhel9-hgx-h100-tuned",
    summary="Dell PowerEdge XE9680 (HGX H100 8-GPU), 2x Xeon Platinum 8462Y+, RHEL 9.4 (5.14.0-427 el9 kernel) with "
    "tuned's throughput-performance profile active and grubby for the boot line, NVIDIA's open kernel module 550 "
    "(precompiled kmod stream, no DKMS) with fabric manager, 8x ConnectX-7 NDR with MLNX_OFED and nvidia_peermem; "
    "vLLM at TP 8",
    hostname="xe9680-h100-11",
    cpu=XEON_8462,
    os=RHEL94,
    gpus=GpuSpec("h100-sxm", 8, nvswitches=4),
    driver=DriverSpec("550.127.05", open=True, fabricmanager="active", peermem=True, dkms=False, cuda=12040),
    nics=NicSpec("cx7", 8),
    platform=PlatformSpec(
        dmi=(
            ("sys_vendor", "Dell Inc."),
            ("product_name", "PowerEdge XE9680"),
            ("board_vendor", "Dell Inc."),
            ("board_name", "0DCN1X"),
            ("bios_vendor", "Dell Inc."),
            ("bios_version", "2.1.5"),
            ("bios_date", "04/12/2024"),
        )
    ),
    processes=(vllm("/models/Llama-3.1-70B-Instruct", ALL8, mib=73240, env=IB_ENV),),
    expect="healthy: the tunables are tuned's (throughput-performance); a fix for any of them is a tuned profile",
)
"""The board_name and BIOS version of a XE9680 are not from a public source read here (placeholders of Dell's form)."""

SPR_VM = replace(
    CASCADE_LAKE_VM,
    model_name="Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz",
    sockets=2,
    cores_per_socket=52,
    model=143,
    stepping=8,
    base_mhz=2700,
    max_mhz=2700,
    min_mhz=2700,
    cache_kb=107520,
    bogomips=5399.99,
)
"""a3-highgpu-8g's 208 vCPUs of Sapphire Rapids (8481C) as GCE shows them: no cpufreq, haltpoll. The guest's CPU flags
are Cascade Lake's list here (AMX and the other Sapphire Rapids flags a real guest shows are not modelled)."""

GCP_A3 = HostSpec(
    "gcp-a3-highgpu-8g",
    "GCP a3-highgpu-8g VM guest (KVM): 8x H100 80GB with 4 NVSwitches passed through, fabric manager in the guest, "
    "208 vCPUs of Xeon 8481C, Ubuntu 22.04 (6.8 GCP kernel), driver 550; vLLM at TP 8",
    "a3-infer-0",
    SPR_VM,
    replace(JAMMY, kernel="6.8.0-1015-gcp", old_kernels=(), memory_kib=1946157056, cmdline="console=ttyS0,115200"),
    GpuSpec("h100-sxm", 8, nvswitches=4),
    DriverSpec("550.90.07", fabricmanager="active", peermem=False, cuda=12040),
    topology="flat",
    platform=PlatformSpec(vm="google", cloud="gcp", instance_type="a3-highgpu-8g"),
    processes=(vllm("/models/Llama-3.1-70B-Instruct", ALL8, mib=73240),),
    iommu=None,
    expect="healthy VM: IOMMU, ACS, BIOS and CPU frequency are the hypervisor's; NVLink P2P through the NVSwitches",
)
"""GCP documents installing the fabric manager with the driver on A3 guests; the four GPUDirect-TCPX gVNICs of
a3-highgpu-8g (and their NCCL net plugin) are not modelled: the generator gives the guest one gVNIC."""

GKE_A3_POD = replace(
    GCP_A3,
    name="gke-a3-pod",
    summary="GKE pod (containerd, cgroup v2) on an a3-highgpu-8g node (Container-Optimized OS, driver installed by GKE): "
    "all 8 H100 allocated by the device plugin, /dev/shm a 64 GiB emptyDir (medium Memory), CPU limit 200; vLLM at TP 8",
    hostname="vllm-a3-0",
    os=replace(GCP_A3.os, kernel="6.1.100+"),
    platform=PlatformSpec(
        vm="google",
        cloud="gcp",
        instance_type="a3-highgpu-8g",
        container="k8s",
        shm_bytes=64 * 2**30,
        cpu_quota=200,
        throttled=(35, 412345),
        visible_gpus=ALL8,
    ),
    expect="healthy pod: the node's kernel, driver and fabric manager are GKE's; nothing in the pod can change them",
)
"""COS's kernel release (``6.1.100+``) is of the form COS prints; the node's OS files are not what the pod sees (it
sees the image's Ubuntu), which is what the generator writes."""

AZURE_ND_H100_V5 = HostSpec(
    "azure-nd-h100-v5",
    "Azure Standard_ND96isr_H100_v5 guest (Hyper-V): 8x H100 80GB and 4 NVSwitches passed through (vPCI), fabric "
    "manager in the guest as Azure documents for ND-series, 8x ConnectX-7 NDR InfiniBand, 96 vCPUs of Xeon 8480C, "
    "Ubuntu 22.04 (5.15 Azure kernel, the Azure HPC image with MLNX_OFED), driver 535; vLLM at TP 8",
    "nd-h100-v5-0",
    replace(SPR_VM, model_name="Intel(R) Xeon(R) Platinum 8480C", cores_per_socket=48, threads_per_core=1),
    replace(JAMMY, kernel="5.15.0-1073-azure", old_kernels=(), memory_kib=1900 * 1024 * 1024, cmdline="console=ttyS0"),
    GpuSpec("h100-sxm", 8, nvswitches=4),
    DriverSpec("535.183.06", fabricmanager="active", peermem=True, cuda=12020),
    topology="hyperv",
    nics=NicSpec("cx7", 8),
    platform=PlatformSpec(vm="microsoft", cloud="azure", instance_type="Standard_ND96isr_H100_v5"),
    processes=(
        replace(vllm("/models/Llama-3.1-405B-Instruct-FP8", ALL8, mib=74000, env=IB_ENV), torch="2.4.0+cu121", torch_cuda="12.1"),
    ),
    iommu=None,
    nccl_conf=nccl_conf("ndv5"),
    nccl_topo="ndv5",
    expect="healthy VM: a Hyper-V guest; host-level fixes (BIOS, IOMMU, a GPU reset) are Azure's; NCCL loads Azure's "
    "ndv5 topology file through /etc/nccl.conf, as the Azure HPC image sets it",
)
"""Hyper-V's vPCI puts each passed-through device alone in its own PCI domain under its VMBus device: the GPUs at
0001, 0002, 0003, 0008 (NUMA node 0) and 0009, 000a, 000b, 000c (node 1), each ConnectX-7 InfiniBand VF (15b3:101e, no
PF in the guest) at 0101-0108 beside its GPU, as Azure's NCCL topology file for the size names them
(Azure/azhpc-images topology/ndv5-topo.xml); the VFs are ``mlx5_ib0``.. as on Azure's HPC images. The synthetic NIC
and disks are VMBus devices, not PCI. Not shown by a public source read here: the NVSwitches' domains (0201-0204
stand in), the accelerated-networking VF (left out), the VFs' link registers (gen 5 x16 stand in). The CPUs' idle
driver is the generator's VM default."""

XEON_8570 = replace(
    XEON_8462,
    model_name="INTEL(R) XEON(R) PLATINUM 8570",
    cores_per_socket=56,
    model=207,
    stepping=2,
    microcode="0x21000283",
    base_mhz=2100,
    max_mhz=4000,
    cache_kb=307200,
)
"""Emerald Rapids (5th Gen Xeon Scalable, family 6 model 207; its CPUID brand string is in capitals): 56 cores at
2.1 GHz (4.0 GHz turbo), 300 MB L3, on the Eagle Stream platform of Sapphire Rapids (same root ports, intel_idle's SPR
table, intel_pstate with HWP). The microcode revision is of Intel's form for the part, not read off a host."""

B200_IB_ENV = (("NCCL_IB_HCA", "=" + ",".join(f"mlx5_{k}" for k in range(8))), ("NCCL_SOCKET_IFNAME", "bond0"))
"""The data NICs by exact name: NCCL reads a bare ``mlx5`` as a prefix, which takes in the baseboard's NVLink
management ports mlx5_8-11 too (nccl.env)."""

HGX_B200 = HostSpec(
    "hgx-b200-noble",
    "HGX B200 8-GPU (Supermicro SYS-A21GE-NBRT), 2x Xeon Platinum 8570, Ubuntu 24.04 (6.8), NVIDIA's open kernel module "
    "570 (Blackwell requires it), two NVLink 5 switch chips with the fabric manager and NVLink Subnet Manager (NVLSM), "
    "8x ConnectX-7 NDR with the inbox rdma-core (GPUDirect RDMA through dma-buf); intel_pstate with HWP; sglang at TP 8",
    "hgx-b200-02",
    XEON_8570,
    replace(NOBLE, memory_kib=2 * TIB_KIB, cmdline="quiet"),
    GpuSpec("b200", 8, nvswitches=2),
    DriverSpec("570.133.20", open=True, fabricmanager="active", fabricmanager_version="570.133.20", cuda=12080),
    topology="hgx",
    root_complex="intel-spr",
    nics=NicSpec("cx7", 8, ofed=None),
    platform=PlatformSpec(dmi=(("sys_vendor", "Supermicro"), ("product_name", "SYS-A21GE-NBRT"), ("board_vendor", "Supermicro"))),
    processes=(
        replace(
            sglang("/models/DeepSeek-V3", ALL8, mib=165000, env=B200_IB_ENV),
            torch="2.7.0+cu128",
            torch_cuda="12.8",
            nccl="2.26.2",
        ),
    ),
    iommu=None,
    expect="healthy: NVLink 5 through the switch chips, fabric manager (with NVLSM) active, GPU fabric state completed",
)
"""The fabric manager of 4th-generation NVSwitch systems works with NVLSM (NVIDIA's Fabric Manager user guide, release
2.3: 'What is NVLink Subnet Manager?'). How the switch chips show on the host as PCI functions is not shown by a public
source read here: they are left off the PCI tree, and the fabric is what NVML reports (nvmlDeviceGetGpuFabricInfo).
The baseboard's ConnectX bridge, through which NVLSM drives them, is on the tree: four more mlx5 devices (mlx5_8-11)
whose VPD says SMDL=SW_MNG, ib_umad loaded, and the start script's journal as it picks mlx5_10 (topo._nvlink_bridge).
The SYS-A21GE-NBRT is Supermicro's 10U HGX B200 system for two 5th/4th Gen Xeon Scalable CPUs (Supermicro's naming:
``SYS-`` for its Intel systems, ``AS -`` for its AMD ones); its board name and BIOS strings are not from a public
source read here and are left out of its DMI."""

GRACE_MEM_KIB = 493906176
GB200_HBM_KIB = 193986560
GRACE_X2 = replace(
    GRACE,
    sockets=2,
    memory_kib_per_node=(GRACE_MEM_KIB, GRACE_MEM_KIB),
    extra_nodes=((2, GB200_HBM_KIB), (10, GB200_HBM_KIB), (18, GB200_HBM_KIB), (26, GB200_HBM_KIB)),
    distances=(
        (10, 40, 80, 80, 120, 120),
        (40, 10, 120, 120, 80, 80),
        (80, 120, 10, 120, 120, 120),
        (80, 120, 120, 10, 120, 120),
        (120, 80, 120, 120, 10, 120),
        (120, 80, 120, 120, 120, 10),
    ),
)
"""The two Grace CPUs of a GB200 NVL72 compute tray (2x 72 Neoverse V2 cores, CPUs 0-71 and 72-143, LPDDR5X on
nodes 0 and 1) and each GPU's HBM as a memory-only NUMA node (2, 10, 18, 26: a public ``nvidia-smi topo -m`` of a tray
shows NUMA affinity ``0,2-17`` and ``1,18-33``). The empty nodes the driver keeps for each GPU's MIG instances (3-9,
11-17...) are left out; the distances are stand-ins (no tray's ``numactl -H`` read here)."""

GB200_TRAY = HostSpec(
    "gb200-nvl72-tray",
    "GB200 NVL72 compute tray: 2 Grace CPUs (aarch64, 2x 72 Neoverse V2) and 4 Blackwell GPUs (NVIDIA GB200, 189471 "
    "MiB), NVLink 5 to the rack's NVLink switch trays (no NVSwitch on the tray, no fabric manager: the switch trays' "
    "NVOS runs it), IMEX (nvidia-imex with the rack's 18 trays in its nodes config, channel0 created), Ubuntu 24.04 "
    "with the 6.8 NVIDIA 64k kernel, open driver 580, 4x ConnectX-7 with the inbox rdma-core; sglang at TP 4",
    "gb200-r07-t03",
    GRACE_X2,
    replace(
        NOBLE,
        kernel="6.8.0-1025-nvidia-64k",
        old_kernels=(),
        memory_kib=2 * GRACE_MEM_KIB + 4 * GB200_HBM_KIB,
        cmdline="console=ttyAMA0 init_on_alloc=0 iommu.passthrough=1",
    ),
    GpuSpec("gb200", 4),
    DriverSpec("580.126.09", open=True, cuda=13000, imex="active"),
    topology="grace-nvl",
    nics=NicSpec("cx7", 4, ofed=None),
    processes=(
        replace(
            sglang("/models/Llama-3.1-405B-Instruct-FP8", (0, 1, 2, 3), mib=172000, env=IB_ENV),
            site="/usr/local/lib/python3.12/dist-packages",
            torch="2.8.0+cu128",
            torch_cuda="12.8",
            nccl="2.27.3",
        ),
    ),
    iommu="identity",
    expect="healthy: NVLink 5 to the rack's switch trays with the fabric completed (NVML: the rack's cluster UUID and "
    "clique), no local fabric manager by design, IMEX active with its nodes config and channel",
)
"""What is from public sources: NVML's name, memory and power limit and the GPUs' PCI domains (a GB200 tray's public
``nvidia-smi``), NV18 between the tray's GPUs and the CPU/NUMA affinity (its ``nvidia-smi topo -m``), the fabric manager
and NVLSM on the switch trays' NVOS (NVIDIA's multi-node NVLink user guide), IMEX's service, files and log lines
(tests/hostgen/imex.py). Not shown by a public source read here, so stand-ins or left out: the tray's DMI (generator
defaults), the NICs' and NVMe's PCI domains, the GPUs' PCI ids, VBIOS and thresholds (catalog.py), the cluster UUID and
clique id, the BlueField-3 DPUs of a real tray (left out), and the NVLink switch trays' own state (not on this host;
rules judge it by NVML's fabric state)."""


def _replica(gpu: int, k: int) -> ProcessSpec:
    server = vllm("/models/Llama-3.1-8B-Instruct", (gpu,), mib=36000, port=8000 + 2 * gpu + k)
    return replace(server, argv=(*server.argv, "--gpu-memory-utilization", "0.45"))


MPS_H100 = replace(
    INTEL_SNC,
    name="mps-h100pcie-replicas",
    summary="Supermicro SYS-421GE-TNRT, 2x Xeon Gold 6448Y, 4x H100 PCIe, Ubuntu 24.04 (6.8), driver 550; NVIDIA MPS "
    "run by a unit (nvidia-cuda-mps-control -d, default pipe directory, EXCLUSIVE_PROCESS set by the unit) so that two "
    "vLLM replicas of an 8B model share each GPU (--gpu-memory-utilization 0.45), each an MPS client",
    hostname="gpu-mps-01",
    cpu=XEON_6448Y,
    gpus=GpuSpec("h100-pcie", 4, compute_mode=3),
    driver=DriverSpec("550.127.05", cuda=12040, mps=True),
    processes=tuple(_replica(g, k) for g in range(4) for k in range(2)),
    expect="healthy and deliberate: MPS with EXCLUSIVE_PROCESS is NVIDIA's documented way to share a GPU between "
    "processes; the MPS server's own context is not a foreign process",
)
"""MPS as NVIDIA's MPS guide runs it (tests/hostgen/mps.py); the SYS-421GE-TNRT's DMI is the intel-snc-h100pcie
archetype's. The replicas run as root like the other archetypes' servers (the MPS server is then root's too)."""

K8S_NODE_TIMESLICED = replace(
    MPS_H100,
    name="k8s-node-timesliced",
    summary="Kubernetes GPU node (Ubuntu 24.04, containerd, kubelet) with 4x H100 PCIe whose NVIDIA device plugin "
    "shares each GPU by time-slicing (sharing.timeSlicing, replicas 4: 16 nvidia.com/gpu advertised, devices "
    "GPU-<uuid>::<n>): eight vLLM pods of an 8B model, two per GPU, each given one replica "
    "(--gpu-memory-utilization 0.45); audited on the node",
    hostname="gpu-node-ts-01",
    gpus=GpuSpec("h100-pcie", 4),
    driver=DriverSpec("550.127.05", cuda=12040),
    processes=tuple(replace(p, in_container=True, engine="containerd") for p in MPS_H100.processes),
    time_slicing=4,
    expect="healthy and deliberate: several pods on one GPU is the device plugin's time-slicing, configured on "
    "purpose; the pods' memory fractions fit the GPU together",
)
"""The node of MPS_H100's machine with the device plugin's time-slicing in place of MPS (tests/hostgen/k8s.py): the
compute mode stays Default (time-slicing sets none); the pods' servers are root's, as the vLLM image runs."""

K8S_POD_TIMESLICED = replace(
    K8S_POD,
    name="k8s-pod-timesliced",
    summary="A pod of k8s-node-timesliced, audited inside: given one time-slicing replica of GPU 2 (NVIDIA_VISIBLE_DEVICES "
    "its UUID), vLLM of an 8B model at --gpu-memory-utilization 0.45; another pod's server holds 35 GiB of the same GPU",
    hostname="vllm-ts-5",
    cpu=XEON_6448Y,
    os=replace(K8S_NODE_TIMESLICED.os, distro="ubuntu-22.04"),
    gpus=GpuSpec("h100-pcie", 4),
    driver=DriverSpec("550.127.05", cuda=12040),
    topology="direct",
    nics=None,
    platform=PlatformSpec(
        container="k8s", shm_bytes=16 * 2**30, cpu_quota=16, throttled=(41, 388210), visible_gpus=(2,), shared_mib=36000
    ),
    processes=(MPS_H100.processes[4],),
    expect="healthy and deliberate, but not seen so from inside: the other pod's memory counts in NVML's memory info, "
    "and nothing in the pod tells that the GPU is shared on purpose",
)
"""The pod sees the node's kernel and memory (K8S_NODE_TIMESLICED's) under its image's Ubuntu 22.04. What NVML lists in a
pod of the other pods' processes on a time-sliced GPU is not shown by a public source read here: the fixture lists the
pod's own process only, as users of containers report (nvidia-smi in a container shows the memory used but not other
namespaces' processes); the memory info counts every pod's memory."""

K8S_POD_MPS = replace(
    K8S_POD_TIMESLICED,
    name="k8s-pod-mps",
    summary="A pod on a node whose NVIDIA device plugin shares each H100 PCIe by MPS (sharing.mps, replicas 2: the "
    "plugin's MPS control daemon sets EXCLUSIVE_PROCESS and passes CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY to "
    "its clients), audited inside: vLLM of an 8B model at --gpu-memory-utilization 0.45 on one replica of GPU 2, an MPS "
    "client; another pod's client holds 35 GiB of the GPU",
    hostname="vllm-mps-3",
    gpus=GpuSpec("h100-pcie", 4, compute_mode=3),
    driver=DriverSpec("550.127.05", cuda=12040, mps=True),
    processes=(
        replace(
            MPS_H100.processes[4],
            env=(
                *MPS_H100.processes[4].env,
                ("CUDA_MPS_PIPE_DIRECTORY", MPS_PLUGIN_PIPE),
                ("CUDA_MPS_LOG_DIRECTORY", MPS_PLUGIN_LOG),
            ),
        ),
    ),
    expect="healthy and deliberate: MPS run by the device plugin on the node; EXCLUSIVE_PROCESS is its mode, and "
    "nothing in the pod can or should change it",
)
"""The device plugin's MPS (k8s-device-plugin's MPS daemon: EXCLUSIVE_PROCESS, the client environment, a thread
percentage of 100/replicas and a pinned-memory limit of total/replicas set as the daemon's defaults, so not in the
client's environment); the pipe directory's path in the pod is of the form the plugin's code gives (tests/hostgen/mps.py).
What NVML in the pod lists of the node's MPS server and the other pod's client is not shown by a public source read
here: the fixture lists the pod's own server, as an MPS client."""

DOCKER_MPS_INSIDE = replace(
    K8S_POD_MPS,
    name="docker-mps-inside",
    summary="Docker container (--gpus device=2) whose entrypoint starts the MPS control daemon itself (nvidia-cuda-mps-"
    "control -d, the default pipe /tmp/nvidia-mps inside the container) before two vLLM replicas of an 8B model, both MPS "
    "clients; the GPU in EXCLUSIVE_PROCESS, set on the host; audited inside",
    hostname="3f2a9c1d7e6b",
    platform=PlatformSpec(container="docker", shm_bytes=None, visible_gpus=(2,)),
    processes=(MPS_H100.processes[4], MPS_H100.processes[5]),
    expect="healthy and deliberate: MPS run inside the container, its daemon and server in the container's /proc",
)
"""The daemon, server, pipe and logs are the MPS guide's defaults (tests/hostgen/mps.py), started by the container's
entrypoint rather than a unit; their pids are the host kind's (a container's would be smaller), a stand-in."""

RHEL_L40S = replace(
    RHEL94,
    cmdline="crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M resume=/dev/mapper/rhel-swap rd.lvm.lv=rhel/root quiet",
    memory_kib=527996928,
    tuned=None,
)

PODMAN_ROOTLESS_CDI = HostSpec(
    "podman-rootless-cdi",
    "Rootless Podman 4.9 container (user svc-llm, uid 1001) on a RHEL 9.4 host with 2x L40S and 2x ConnectX-7 RoCE: "
    "GPUs through CDI (podman run --device nvidia.com/gpu=all, /etc/cdi/nvidia.yaml from nvidia-ctk cdi generate), the "
    "driver's libraries at their host paths (/usr/lib64), no nvidia-container-runtime hook; the user's limits "
    "(memlock 8 MiB), only memory and pids delegated to the user's cgroup, --shm-size 16g; vLLM at TP 2, audited inside",
    "vllm",
    XEON_6448Y,
    RHEL_L40S,
    GpuSpec("l40s", 2),
    DriverSpec("550.127.05", open=True, cuda=12040, dkms=False),
    topology="direct",
    root_complex="intel-spr",
    nics=NicSpec("cx7", 2, link_layer="Ethernet", rate_gbps=200, ofed=None),
    platform=PlatformSpec(container="podman", rootless_uid=1001, shm_bytes=16 * 2**30, memlock="8388608"),
    processes=(replace(vllm("/models/Qwen2.5-32B-Instruct-AWQ", (0, 1), mib=42000, memlock="8388608"), nofile=(524288, 524288)),),
    iommu=None,
    expect="healthy rootless container: the driver, kernel and limits are the host's and the user's; a single-node "
    "server that is given no RDMA device needs no locked-memory limit for RDMA",
)
"""The RHEL host's packages (the open module 550 as NVIDIA's precompiled kmod stream) and the RoCE NICs' addresses are
of the forms the other kinds use, not read off one host; 8 MiB is the default RLIMIT_MEMLOCK of current kernels (5.16
and later) and systemd (253 and later): whether RHEL 9's 5.14 kernel and systemd 252 give a login session that much or
64 KiB is not shown by a public source read here. nofile 524288 is systemd's default hard limit, which a rootless
container cannot exceed (fourth review, R6)."""

PODMAN_HOST = replace(
    PODMAN_ROOTLESS_CDI,
    name="podman-rootless-host",
    summary="The RHEL 9.4 host of podman-rootless-cdi, audited on the host: 2x L40S, the open driver 550 with its "
    "libraries in /usr/lib64, the NVIDIA Container Toolkit 1.17 and the CDI spec it generated "
    "(/etc/cdi/nvidia.yaml, nvidia-ctk cdi generate), vLLM at TP 2 in a rootless Podman container of user svc-llm "
    "(uid 1001: conmon and the container in the user's systemd slice, no container daemon)",
    hostname="gpu-l40s-07",
    platform=PlatformSpec(),
    processes=tuple(
        replace(p, in_container=True, engine="podman", user=1001, memlock="8388608") for p in PODMAN_ROOTLESS_CDI.processes
    ),
    cdi=CdiSpec(),
    expect="healthy: the CDI spec names the loaded driver's files and every device node; the server is another "
    "user's process in a container",
)
"""The spec is what ``nvidia-ctk cdi generate`` writes (tests/hostgen/cdi.py); the rootless container's processes are
seen from the host as uid 1001's in the user's slice (tests/hostgen/podman.py)."""

SPARK_MEM_KIB = 124780544
GB10_CPU = replace(
    GRACE,
    cores_per_socket=20,
    base_mhz=3900,
    max_mhz=3900,
    min_mhz=338,
    memory_kib_per_node=(SPARK_MEM_KIB,),
    extra_nodes=(),
    distances=(),
    bogomips=2000.0,
    arm_parts=("0xd87",) * 10 + ("0xd85",) * 10,
)
"""GB10's CPU: 10 Cortex-X925 (part 0xd85) and 10 Cortex-A725 (0xd87) cores, one NUMA node holding the whole 128 GB
LPDDR5X the GPU shares (public ``free -h``: 119Gi). Not from a public source read here: which CPU numbers are which core
type, the frequency limits, the cpufreq and cpuidle drivers (Grace's cppc_cpufreq and WFI stand in)."""

DGX_SPARK = HostSpec(
    "dgx-spark-gb10",
    "NVIDIA DGX Spark: GB10 superchip (20 Arm cores, a Blackwell GPU sharing the 128 GB LPDDR5X: unified memory, no "
    "framebuffer NVML can size), DGX OS 7 (Ubuntu 24.04, 6.11 NVIDIA kernel), open driver 580 (CUDA 13.0), the "
    "ConnectX-7 (2x 200G QSFP, four functions) with the inbox rdma-core; vLLM on its one GPU",
    "spark-7f3a",
    GB10_CPU,
    replace(NOBLE, kernel="6.11.0-1016-nvidia", old_kernels=(), memory_kib=SPARK_MEM_KIB, cmdline="quiet splash"),
    GpuSpec("gb10", 1),
    DriverSpec("580.95.05", open=True, cuda=13000),
    topology="spark",
    nics=NicSpec("cx7", 4, link_layer="Ethernet", rate_gbps=200, ofed=None),
    platform=PlatformSpec(dmi=(("sys_vendor", "NVIDIA"), ("product_name", "DGX Spark"))),
    processes=(
        replace(
            vllm("/models/Qwen3-30B-A3B-FP8", (0,), mib=88000),
            site="/usr/local/lib/python3.12/dist-packages",
            torch="2.9.0+cu130",
            torch_cuda="13.0",
            nccl="2.27.7",
        ),
    ),
    iommu="identity",
    expect="healthy: one GPU on unified memory (NVML sizes no framebuffer, no BAR1, no power cap: not faults), no "
    "P2P peers, no NVLink, no MIG; the ConnectX-7 is for a second Spark",
)
"""From public DGX Spark outputs: NVML's name, 0000000F:01:00.0, driver 580.95.05 with CUDA 13.0, Memory-Usage "Not
Supported", the power cap N/A, the kernel 6.11.0-1016-nvidia, the ConnectX-7's four functions. Not shown by a public
source read here, so stand-ins: the DMI strings beyond vendor and product, the kernel command line, the hostname, the
GPU's PCI ids and VBIOS (catalog.py), the NVMe, whether DGX OS runs irqbalance and nvidia-persistenced (the generator's
defaults: both)."""

CVM_H100_CC = replace(
    PROXMOX_H100,
    name="cvm-h100-cc",
    summary="Confidential VM (KVM, Intel TDX guest, Ubuntu 24.04) with 2x H100 PCIe passed through in CC mode: the open "
    "driver 550, NVML's CC state on (production) and the GPUs set ready after attestation; GPU-to-GPU traffic is "
    "encrypted and bounces through shared system memory, so NVML offers no P2P; vLLM at TP 2",
    hostname="cvm-llm-01",
    os=replace(NOBLE, old_kernels=(), memory_kib=263921396, cmdline="quiet"),
    driver=DriverSpec("550.127.05", open=True, cuda=12040, cc="on"),
    dmesg_extra=("Memory Encryption Features active: Intel TDX",),
    expect="healthy and deliberate: CC mode refuses P2P by design; the ready state is set",
)
"""NVIDIA's CC deployment guides (TDX and SEV-SNP with KVM) run the open driver in an Ubuntu guest; the CC state, the
ready state and what CC does to P2P are in tests/hostgen/confcompute.py. Stand-ins: the guest's vCPU model (the Proxmox
archetype's Sapphire Rapids; the guides use 5th-generation Xeon or EPYC 9004), its DMI, and whether the TDX guest's
boot line is worded so on this kernel."""

KINDS: dict[str, HostSpec] = {
    spec.name: spec
    for spec in (
        DC_FORWARD_COMPAT,
        GEFORCE_FORWARD_COMPAT,
        RHEL9_TUNED,
        GCP_A3,
        GKE_A3_POD,
        AZURE_ND_H100_V5,
        HGX_B200,
        GB200_TRAY,
        MPS_H100,
        K8S_NODE_TIMESLICED,
        K8S_POD_TIMESLICED,
        K8S_POD_MPS,
        DOCKER_MPS_INSIDE,
        PODMAN_ROOTLESS_CDI,
        PODMAN_HOST,
        DGX_SPARK,
        CVM_H100_CC,
    )
}
