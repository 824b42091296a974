"""The hosts users run, each a few declarative lines over shared parts (CPUs, OS images, servers)."""

from __future__ import annotations

from dataclasses import replace

from tests.hostgen.cpu import ACPI_IDLE_AMD, ACPI_IDLE_VM, AMD_ZEN3_FLAGS, INTEL_IDLE_ICX, CpuSpec, IdleState
from tests.hostgen.spec import DriverSpec, GpuSpec, HostSpec, MigInstance, NicSpec, OsSpec, PlatformSpec, ProcessSpec

TIB_KIB = 2113245184
"""MemTotal of a 2 TiB server (what the kernel reports after firmware reservations)."""

# -- CPUs -----------------------------------------------------------------------------------

XEON_8462 = CpuSpec(
    "intel",
    "Intel(R) Xeon(R) Platinum 8462Y+",
    2,
    32,
    base_mhz=2800,
    max_mhz=4100,
    min_mhz=800,
    cache_kb=61440,
    microcode="0x2b0005c0",
)
XEON_6448Y_SNC2 = CpuSpec(
    "intel",
    "Intel(R) Xeon(R) Gold 6448Y",
    2,
    32,
    nodes_per_socket=2,
    base_mhz=2100,
    max_mhz=4100,
    cache_kb=61440,
    microcode="0x2b0005c0",
)
XEON_6448Y = replace(XEON_6448Y_SNC2, nodes_per_socket=1)
XEON_W9_3495X = CpuSpec(
    "intel",
    "Intel(R) Xeon(R) w9-3495X",
    1,
    56,
    base_mhz=1900,
    max_mhz=4800,
    min_mhz=800,
    cache_kb=107520,
    microcode="0x2b000590",
)
"""Sapphire Rapids workstation (W790): one socket, one NUMA node, intel_pstate with HWP."""
XEON_6338 = CpuSpec(
    "intel",
    "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
    2,
    32,
    model=106,
    stepping=6,
    microcode="0xd0003d1",
    base_mhz=2000,
    max_mhz=3200,
    cache_kb=49152,
    idle_states=INTEL_IDLE_ICX,
    bugs="spectre_v1 spectre_v2 spec_store_bypass swapgs mmio_stale_data eibrs_pbrsb gds bhi",
    address_sizes="46 bits physical, 57 bits virtual",
)
EPYC_9354 = CpuSpec(
    "amd",
    "AMD EPYC 9354 32-Core Processor",
    2,
    32,
    family=25,
    model=17,
    stepping=1,
    microcode="0xa101148",
    base_mhz=3250,
    max_mhz=3800,
    min_mhz=1500,
    cache_kb=1024,
    bugs="sysret_ss_attrs spectre_v1 spectre_v2 spec_store_bypass srso",
    address_sizes="52 bits physical, 57 bits virtual",
    freq_driver="amd-pstate-epp",
    idle_driver="acpi_idle",
    idle_states=ACPI_IDLE_AMD,
    cppc=True,
    bogomips=5499.97,
)
EPYC_9454_NPS4 = replace(
    EPYC_9354,
    model_name="AMD EPYC 9454 48-Core Processor",
    cores_per_socket=48,
    nodes_per_socket=4,
    microcode="0xa101148",
    base_mhz=2750,
    max_mhz=3810,
    freq_driver="acpi-cpufreq",
    cache_kb=1024,
    bogomips=5492.15,
)
"""Genoa with NPS4 in the BIOS (four NUMA nodes per socket, eight in all): what memory-bound CPU work and
PCIe-attached GPUs servers are tuned to. On a 6.8 kernel without ``amd_pstate=`` a server's CPPC stays unused and
acpi-cpufreq drives the cores."""
EPYC_7742_NPS4 = CpuSpec(
    "amd",
    "AMD EPYC 7742 64-Core Processor",
    2,
    64,
    nodes_per_socket=4,
    family=23,
    model=49,
    stepping=0,
    microcode="0x830107a",
    base_mhz=2250,
    max_mhz=3400,
    min_mhz=1500,
    cache_kb=512,
    flags=AMD_ZEN3_FLAGS,
    bugs="sysret_ss_attrs spectre_v1 spectre_v2 spec_store_bypass retbleed smt_rsb srso",
    address_sizes="43 bits physical, 48 bits virtual",
    freq_driver="acpi-cpufreq",
    idle_driver="acpi_idle",
    idle_states=ACPI_IDLE_AMD,
    cppc=True,
    bogomips=4491.45,
)
TR_5975WX = CpuSpec(
    "amd",
    "AMD Ryzen Threadripper PRO 5975WX 32-Cores",
    1,
    32,
    family=25,
    model=8,
    stepping=2,
    microcode="0xa008205",
    base_mhz=3600,
    max_mhz=4560,
    min_mhz=1800,
    cache_kb=512,
    flags=AMD_ZEN3_FLAGS,
    bugs="sysret_ss_attrs spectre_v1 spectre_v2 spec_store_bypass srso",
    address_sizes="48 bits physical, 48 bits virtual",
    freq_driver="amd-pstate-epp",
    idle_driver="acpi_idle",
    idle_states=ACPI_IDLE_AMD,
    cppc=True,
    bogomips=7186.64,
)
EPYC_7R13_VM = CpuSpec(
    "amd",
    "AMD EPYC 7R13 Processor",
    2,
    48,
    family=25,
    model=1,
    stepping=1,
    microcode="0xa0011d5",
    base_mhz=2649,
    max_mhz=2649,
    min_mhz=2649,
    cache_kb=512,
    flags=AMD_ZEN3_FLAGS.replace(" svm", "").replace(
        (
            " npt lbrv svm_lock nrip_save tsc_scale vmcb_clean flushbyasid decodeassists "
            "pausefilter pfthreshold avic v_vmsave_vmload vgif x2avic v_spec_ctrl vnmi"
        ),
        "",
    ),
    bugs="sysret_ss_attrs null_seg spectre_v1 spectre_v2 spec_store_bypass srso",
    address_sizes="48 bits physical, 48 bits virtual",
    freq_driver=None,
    boost=None,
    idle_driver="acpi_idle",
    idle_states=ACPI_IDLE_VM,
    hypervisor=True,
    bogomips=5299.99,
)
CASCADE_LAKE_VM = CpuSpec(
    "intel",
    "Intel(R) Xeon(R) CPU @ 2.20GHz",
    1,
    12,
    model=85,
    stepping=7,
    microcode="0xffffffff",
    base_mhz=2200,
    max_mhz=2200,
    min_mhz=2200,
    cache_kb=39424,
    flags="fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss ht syscall nx "
    "pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc cpuid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid "
    "sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand hypervisor lahf_lm abm 3dnowprefetch invpcid_single ssbd ibrs "
    "ibpb stibp ibrs_enhanced fsgsbase tsc_adjust bmi1 hle avx2 smep bmi2 erms invpcid rtm mpx avx512f avx512dq rdseed adx "
    "smap clflushopt clwb avx512cd avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves arat avx512_vnni md_clear arch_capabilities",
    bugs="spectre_v1 spectre_v2 spec_store_bypass swapgs taa mmio_stale_data retbleed eibrs_pbrsb gds bhi",
    address_sizes="46 bits physical, 48 bits virtual",
    freq_driver=None,
    boost=None,
    idle_driver="haltpoll",
    idle_governor="haltpoll",
    idle_states=(IdleState("POLL", "CPUIDLE CORE POLL IDLE", 0, 0), IdleState("haltpoll", "cpuidle-haltpoll idle", 1, 1)),
    hypervisor=True,
    bogomips=4400.41,
)
XEON_6448Y_KVM = CpuSpec(
    "intel",
    "Intel(R) Xeon(R) Gold 6448Y",
    1,
    32,
    threads_per_core=1,
    microcode="0x1",
    base_mhz=2100,
    max_mhz=2100,
    min_mhz=2100,
    cache_kb=16384,
    freq_driver=None,
    boost=None,
    idle_driver="acpi_idle",
    idle_states=ACPI_IDLE_VM,
    hypervisor=True,
    bugs="spectre_v1 spectre_v2 spec_store_bypass swapgs eibrs_pbrsb bhi",
    address_sizes="46 bits physical, 57 bits virtual",
    bogomips=4200.0,
)
"""``-cpu host`` in a Proxmox VE guest: the host's model name with the hypervisor flag, one socket of 32 vCPUs,
no cpufreq (the host's governor decides), ACPI C1 only; QEMU reports microcode 0x1."""
GRACE = CpuSpec(
    "arm",
    "",
    1,
    72,
    threads_per_core=1,
    base_mhz=3447,
    max_mhz=3447,
    min_mhz=81,
    freq_driver="cppc_cpufreq",
    governor="performance",
    boost=None,
    idle_driver="acpi_idle",
    idle_states=(IdleState("WFI", "ACPI WFI", 1, 1),),
    cppc=True,
    memory_kib_per_node=(493906176,),
    extra_nodes=((1, 100663296),),
    bogomips=2000.0,
    distances=((10, 80), (80, 10)),
)

# -- operating systems ----------------------------------------------------------------------

JAMMY = OsSpec("ubuntu-22.04", "5.15.0-125-generic", cmdline="quiet splash", old_kernels=("5.15.0-122-generic",))
NOBLE = OsSpec("ubuntu-24.04", "6.8.0-49-generic", cmdline="quiet splash", old_kernels=("6.8.0-45-generic",))

# -- servers --------------------------------------------------------------------------------


def vllm(
    model: str, gpus: tuple[int, ...], *, mib: int, port: int = 8000, env: tuple[tuple[str, str], ...] = (), **kw: object
) -> ProcessSpec:
    argv = (
        "/usr/bin/python3",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        model,
        "--tensor-parallel-size",
        str(len(gpus)),
        "--port",
        str(port),
    )
    base_env = (
        ("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
        ("HOME", "/root"),
        ("VLLM_WORKER_MULTIPROC_METHOD", "spawn"),
    )
    return ProcessSpec(argv, env=base_env + env, gpus=gpus, gpu_memory_mib=mib, **kw)  # type: ignore[arg-type]


def sglang(model: str, gpus: tuple[int, ...], *, mib: int, env: tuple[tuple[str, str], ...] = (), **kw: object) -> ProcessSpec:
    argv = (
        "/usr/bin/python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        model,
        "--tp",
        str(len(gpus)),
        "--host",
        "0.0.0.0",
        "--port",
        "30000",
    )
    return ProcessSpec(
        argv, env=(("PATH", "/usr/local/bin:/usr/bin:/bin"), ("HOME", "/root"), *env), gpus=gpus, gpu_memory_mib=mib, **kw
    )  # type: ignore[arg-type]


ALL8 = tuple(range(8))
IB_ENV = (("NCCL_IB_HCA", "mlx5"), ("NCCL_SOCKET_IFNAME", "bond0"))

# -- archetypes -----------------------------------------------------------------------------

HGX_H100 = HostSpec(
    "hgx-h100-jammy",
    "HGX H100 8-GPU (Supermicro SYS-821GE-TNHR), 2x Xeon Platinum 8462Y+, Ubuntu 22.04 (5.15), driver 550 with fabric "
    "manager, 4 NVSwitches, 8x ConnectX-7 NDR with MLNX_OFED and nvidia_peermem; vLLM at TP 8",
    "hgx-h100-01",
    XEON_8462,
    replace(JAMMY, memory_kib=TIB_KIB, cmdline="quiet splash"),
    GpuSpec("h100-sxm", 8, nvswitches=4),
    DriverSpec("550.127.05", fabricmanager="active", peermem=True, cuda=12040),
    topology="hgx",
    root_complex="intel-spr",
    nics=NicSpec("cx7", 8),
    platform=PlatformSpec(
        dmi=(
            ("sys_vendor", "Supermicro"),
            ("product_name", "SYS-821GE-TNHR"),
            ("board_vendor", "Supermicro"),
            ("board_name", "X13DEG-OAD"),
            ("bios_vendor", "American Megatrends International, LLC."),
            ("bios_version", "2.1"),
            ("bios_date", "03/14/2024"),
        )
    ),
    processes=(vllm("/models/Llama-3.1-70B-Instruct", ALL8, mib=73240, env=IB_ENV),),
    iommu=None,
    expect="healthy: NVLink through NVSwitch, fabric manager active, GPUDirect RDMA via nvidia_peermem",
)

HGX_H200 = HostSpec(
    "hgx-h200-noble",
    "HGX H200 8-GPU (GIGABYTE G593-ZD2), 2x EPYC 9354, Ubuntu 24.04 (6.8), open driver 570 with fabric manager, "
    "4 NVSwitches, 8x ConnectX-7 NDR with the inbox rdma-core (no MLNX_OFED, no nvidia_peermem: GPUDirect RDMA via "
    "dma-buf); amd_pstate=active; sglang at TP 8",
    "hgx-h200-07",
    EPYC_9354,
    replace(NOBLE, memory_kib=TIB_KIB + TIB_KIB // 2, cmdline="quiet amd_pstate=active"),
    GpuSpec("h200-sxm", 8, nvswitches=4),
    DriverSpec("570.124.06", open=True, fabricmanager="active", peermem=False, cuda=12080),
    topology="hgx",
    root_complex="amd-genoa",
    nics=NicSpec("cx7", 8, ofed=None),
    platform=PlatformSpec(
        dmi=(
            ("sys_vendor", "GIGABYTE"),
            ("product_name", "G593-ZD2-AAX1-000"),
            ("board_vendor", "GIGABYTE"),
            ("board_name", "MZD3-G40-000"),
            ("bios_vendor", "American Megatrends International, LLC."),
            ("bios_version", "R14_F37"),
            ("bios_date", "05/22/2024"),
        )
    ),
    processes=(sglang("/models/DeepSeek-V3", ALL8, mib=131072, env=IB_ENV),),
    iommu=None,
    expect="healthy: GPUDirect RDMA through dma-buf (kernel 6.8, open driver), so no nvidia_peermem is needed",
)

DGX_A100_MIG = HostSpec(
    "dgx-a100-mig",
    "DGX A100 (2x EPYC 7742, NPS4: 8 NUMA nodes), DGX OS 6 / Ubuntu 22.04 (5.15), driver 535, 6 NVSwitches, 8x "
    "ConnectX-6 HDR; GPUs 0-3 in MIG mode (two 3g.40gb each) serving eight small vLLM replicas, GPUs 4-7 whole "
    "serving sglang at TP 4",
    "dgx-a100-03",
    EPYC_7742_NPS4,
    replace(
        JAMMY,
        kernel="5.15.0-1063-nvidia",
        old_kernels=(),
        memory_kib=TIB_KIB,
        cmdline="quiet splash rd.driver.blacklist=nouveau nouveau.modeset=0",
    ),
    GpuSpec(
        "a100-sxm-80",
        8,
        nvswitches=6,
        mig=(
            (MigInstance("3g.40gb", 1), MigInstance("3g.40gb", 2)),
            (MigInstance("3g.40gb", 1), MigInstance("3g.40gb", 2)),
            (MigInstance("3g.40gb", 1), MigInstance("3g.40gb", 2)),
            (MigInstance("3g.40gb", 1), MigInstance("3g.40gb", 2)),
            None,
            None,
            None,
            None,
        ),
    ),
    DriverSpec("535.216.03", fabricmanager="active", peermem=True, cuda=12020),
    topology="hgx",
    root_complex="amd-rome",
    nics=NicSpec("cx6", 8, rate_gbps=200, ofed="MLNX_OFED_LINUX-23.10-1.1.9.0"),
    platform=PlatformSpec(
        dmi=(
            ("sys_vendor", "NVIDIA"),
            ("product_name", "DGXA100 920-23687-2530-000"),
            ("board_vendor", "NVIDIA"),
            ("board_name", "DGXA100"),
            ("bios_vendor", "American Megatrends Inc."),
            ("bios_version", "1.25"),
            ("bios_date", "08/17/2023"),
        )
    ),
    processes=(
        *tuple(
            vllm(
                "/models/Llama-3.1-8B-Instruct",
                (g,),
                mib=36000,
                port=8000 + 2 * g + k,
                env=(("CUDA_VISIBLE_DEVICES", f"MIG-{g}-{k}"),),
                mig=((g, k + 1, 0),),
            )
            for g in range(4)
            for k in range(2)
        ),
        sglang("/models/Qwen2.5-72B-Instruct", (4, 5, 6, 7), mib=72000, env=(("CUDA_VISIBLE_DEVICES", "4,5,6,7"),)),
    ),
    iommu=None,
    expect="healthy: MIG is deliberate (servers run on every instance); no P2P between MIG GPUs is expected",
)

AWS_P5 = HostSpec(
    "aws-p5-vm",
    "AWS p5.48xlarge VM guest (Nitro/KVM): 8x H100 passed through with vfio on a flat guest PCI bus, 4 NVSwitches "
    "visible, fabric manager in the guest, 32 EFA NICs, 192 vCPUs of EPYC 7R13, Ubuntu 22.04 (6.8 AWS kernel); vLLM at TP 8",
    "ip-10-0-12-34",
    EPYC_7R13_VM,
    replace(
        JAMMY,
        kernel="6.8.0-1019-aws",
        old_kernels=(),
        memory_kib=2097152000,
        efi=True,
        cmdline="console=tty1 console=ttyS0 nvme_core.io_timeout=4294967295",
    ),
    GpuSpec("h100-sxm", 8, nvswitches=4),
    DriverSpec("550.127.05", fabricmanager="active", peermem=False, cuda=12040),
    topology="flat",
    nics=NicSpec("efa", 32, link_layer="Unknown", rate_gbps=100, ofed=None),
    platform=PlatformSpec(vm="amazon", cloud="aws", instance_type="p5.48xlarge"),
    processes=(
        vllm(
            "/models/Llama-3.1-405B-Instruct-FP8", ALL8, mib=74000, env=(("FI_PROVIDER", "efa"), ("FI_EFA_USE_DEVICE_RDMA", "1"))
        ),
    ),
    iommu=None,
    expect="healthy VM: IOMMU, ACS and BIOS are the hypervisor's; NVLink P2P works inside the guest",
)

GCP_G2_L4 = HostSpec(
    "gcp-g2-2xl4-vm",
    "GCP g2-standard-24 VM guest (KVM): 2x L4 passed through on the guest's root bus (numa_node -1), 24 vCPUs of "
    "Cascade Lake, no cpufreq, haltpoll idle; Ubuntu 22.04 (6.5 GCP kernel); vLLM at TP 2",
    "g2-l4-infer-1",
    CASCADE_LAKE_VM,
    replace(JAMMY, kernel="6.5.0-1025-gcp", old_kernels=(), memory_kib=98965504, cmdline="console=ttyS0,115200"),
    GpuSpec("l4", 2),
    DriverSpec("550.90.07", cuda=12040),
    topology="flat",
    platform=PlatformSpec(vm="google", cloud="gcp", instance_type="g2-standard-24"),
    processes=(vllm("/models/Mistral-7B-Instruct-v0.3", (0, 1), mib=20480),),
    iommu=None,
    expect="healthy VM guest: P2P between the two L4s is not offered in this VM (chipset not supported); NCCL uses shared memory",
)

K8S_POD = HostSpec(
    "k8s-pod-h100",
    "Kubernetes pod (containerd, cgroup v2) on a bare-metal HGX H100 node: 4 of the 8 GPUs allocated by the NVIDIA "
    "device plugin, /dev/shm a 16 GiB emptyDir (medium Memory), CPU limit 32; vLLM at TP 4",
    "vllm-0",
    XEON_8462,
    replace(JAMMY, memory_kib=TIB_KIB),
    GpuSpec("h100-sxm", 8, nvswitches=4),
    DriverSpec("550.127.05", fabricmanager="active", peermem=True, cuda=12040),
    topology="hgx",
    nics=NicSpec("cx7", 8),
    platform=PlatformSpec(container="k8s", shm_bytes=16 * 2**30, cpu_quota=32, throttled=(120, 91234), visible_gpus=(4, 5, 6, 7)),
    processes=(vllm("/models/Llama-3.1-70B-Instruct", (4, 5, 6, 7), mib=73240),),
    iommu=None,
    expect="healthy pod: kernel, PCI and driver facts are the node's (read-only here); shm and CPU limits are adequate",
)

DOCKER_BM = HostSpec(
    "docker-h100-bm",
    "Docker container (NVIDIA Container Toolkit, --gpus all --ipc=host) on a bare-metal HGX H100 host: the audit runs "
    "inside the container; vLLM at TP 8",
    "5e8a2b9c7d1f",
    XEON_8462,
    replace(JAMMY, memory_kib=TIB_KIB),
    GpuSpec("h100-sxm", 8, nvswitches=4),
    DriverSpec("550.127.05", fabricmanager="active", peermem=True, cuda=12040),
    topology="hgx",
    nics=NicSpec("cx7", 8),
    platform=PlatformSpec(container="docker", shm_bytes=None),
    processes=(vllm("/models/Llama-3.1-70B-Instruct", ALL8, mib=73240),),
    iommu=None,
    expect="healthy container: host-level fixes belong to the Docker host, not a hypervisor",
)

DOCKER_HOST = replace(
    HGX_H100,
    name="docker-host-h100",
    summary="Bare-metal HGX H100 host that runs vLLM inside Docker (--gpus all --ipc=host): the audit runs on the host and "
    "sees the server as a process in another mount namespace",
    hostname="hgx-h100-02",
    processes=(replace(vllm("/models/Llama-3.1-70B-Instruct", ALL8, mib=73240, env=IB_ENV), in_container=True),),
    expect="healthy: the Docker host is this machine (no hypervisor); the server's files are under /proc/PID/root",
)

DOCKER_IN_VM = replace(
    GCP_G2_L4,
    name="docker-in-gcp-vm",
    summary="Docker container (--gpus all, default 64 MiB /dev/shm) inside the GCP g2-standard-24 VM with 2x L4",
    hostname="0c1d2e3f4a5b",
    platform=PlatformSpec(vm="google", cloud="gcp", instance_type="g2-standard-24", container="docker", shm_bytes=64 * 2**20),
    expect="a container in a VM: the 64 MiB /dev/shm is too small for NCCL between the two vLLM workers",
)

INTEL_SNC = HostSpec(
    "intel-snc-h100pcie",
    "2x Xeon Gold 6448Y with sub-NUMA clustering (SNC2: 2 NUMA nodes per socket), intel_pstate active, intel_idle; "
    "4x H100 PCIe on their own root ports, Ubuntu 24.04 (6.8), driver 550; vLLM at TP 4",
    "gpu-snc-01",
    XEON_6448Y_SNC2,
    replace(NOBLE, memory_kib=1056622592, cmdline="quiet"),
    GpuSpec("h100-pcie", 4),
    DriverSpec("550.127.05", cuda=12040),
    topology="direct",
    root_complex="intel-spr",
    platform=PlatformSpec(
        dmi=(
            ("sys_vendor", "Supermicro"),
            ("product_name", "SYS-421GE-TNRT"),
            ("board_vendor", "Supermicro"),
            ("board_name", "X13DEG-OA"),
            ("bios_vendor", "American Megatrends International, LLC."),
            ("bios_version", "2.0"),
            ("bios_date", "11/20/2023"),
        )
    ),
    processes=(vllm("/models/Llama-3.1-70B-Instruct", (0, 1, 2, 3), mib=73240),),
    iommu=None,
    expect="healthy; GPUs on the far socket cross UPI for P2P (SYS), which NVML reports as not supported on Intel",
)

GEFORCE = HostSpec(
    "geforce-4x4090",
    "Workstation: ASUS Pro WS WRX80E-SAGE SE, Threadripper PRO 5975WX, 4x GeForce RTX 4090 on their own root ports "
    "(no P2P: the driver reports not supported), Ubuntu 22.04 HWE (6.8), open driver 560; vLLM at TP 4",
    "ws-4090",
    TR_5975WX,
    replace(
        JAMMY,
        kernel="6.8.0-49-generic",
        old_kernels=("6.5.0-45-generic",),
        memory_kib=527996928,
        cmdline="quiet splash amd_pstate=active",
    ),
    GpuSpec("rtx4090", 4),
    DriverSpec("560.35.03", open=True, cuda=12060),
    topology="direct",
    root_complex="amd-rome",
    platform=PlatformSpec(
        dmi=(
            ("sys_vendor", "ASUS"),
            ("product_name", "System Product Name"),
            ("board_vendor", "ASUSTeK COMPUTER INC."),
            ("board_name", "Pro WS WRX80E-SAGE SE WIFI"),
            ("bios_vendor", "American Megatrends Inc."),
            ("bios_version", "1201"),
            ("bios_date", "02/22/2024"),
        )
    ),
    processes=(vllm("/models/Qwen2.5-32B-Instruct-AWQ", (0, 1, 2, 3), mib=22000, env=(("NCCL_P2P_DISABLE", "1"),)),),
    iommu=None,
    expect="healthy: no P2P on GeForce is the product, not a fault; NCCL_P2P_DISABLE=1 is harmless here",
)

L40S_SWITCH = HostSpec(
    "l40s-pex-iommu",
    "8x L40S behind two Broadcom PEX890xx switches (four per switch), 2x Xeon Gold 6338, IOMMU on in passthrough "
    "(intel_iommu=on iommu=pt) so the kernel enabled ACS redirect on the switch downstream ports; Ubuntu 22.04 (5.15), "
    "driver 550; vLLM at TP 4 on each switch",
    "l40s-node-2",
    XEON_6338,
    replace(JAMMY, memory_kib=1056622592, cmdline="quiet intel_iommu=on iommu=pt"),
    GpuSpec("l40s", 8),
    DriverSpec("550.127.05", cuda=12040),
    topology="switch",
    root_complex="intel-icx",
    platform=PlatformSpec(
        dmi=(
            ("sys_vendor", "Supermicro"),
            ("product_name", "SYS-420GP-TNR"),
            ("board_vendor", "Supermicro"),
            ("board_name", "X12DPG-OA6"),
            ("bios_vendor", "American Megatrends International, LLC."),
            ("bios_version", "1.6"),
            ("bios_date", "09/07/2023"),
        )
    ),
    processes=(
        vllm("/models/Llama-3.1-70B-Instruct-AWQ", (0, 1, 2, 3), mib=42000),
        vllm("/models/Llama-3.1-70B-Instruct-AWQ", (4, 5, 6, 7), mib=42000, port=8001),
    ),
    iommu="identity",
    acs_redirect=True,
    expect="problem: ACS redirect on the switch downstream ports sends GPU-GPU P2P through the root complex",
)

GH200 = HostSpec(
    "gh200-node",
    "Grace Hopper GH200 480GB node (aarch64, 72 Neoverse-V2 cores, LPDDR5X on NUMA node 0, the GPU's HBM as memory-only "
    "NUMA node 1 over NVLink-C2C), Ubuntu 22.04 with the 6.8 NVIDIA 64k kernel, open driver 570; vLLM on one GPU",
    "gh200-01",
    GRACE,
    replace(
        JAMMY,
        kernel="6.8.0-1013-nvidia-64k",
        old_kernels=(),
        memory_kib=493906176 + 100663296,
        cmdline="console=ttyAMA0 init_on_alloc=0 iommu.passthrough=1",
    ),
    GpuSpec("gh200", 1),
    DriverSpec("570.124.06", open=True, cuda=12080),
    topology="grace",
    nics=NicSpec("cx7", 1),
    platform=PlatformSpec(
        dmi=(
            ("sys_vendor", "Supermicro"),
            ("product_name", "ARS-111GL-NHR"),
            ("board_vendor", "Supermicro"),
            ("board_name", "G1SMH-G"),
            ("bios_vendor", "American Megatrends International, LLC."),
            ("bios_version", "1.0"),
            ("bios_date", "06/12/2024"),
        )
    ),
    processes=(
        replace(
            vllm("/models/Llama-3.1-70B-Instruct-FP8", (0,), mib=88000),
            site="/usr/local/lib/python3.10/dist-packages",
            torch="2.5.1",
            torch_cuda="12.4",
        ),
    ),
    iommu="identity",
    expect="healthy: one GPU, no P2P peers, NVLink-C2C to the CPU; cppc_cpufreq is the only frequency driver on Grace",
)

PROXMOX_H100 = HostSpec(
    "proxmox-q35-h100pcie-vm",
    "On-premises KVM guest (Proxmox VE 8, machine type pc-q35-8.1, OVMF): 2x H100 PCIe passed through with "
    "vfio (hostpci pcie=1), each behind a QEMU pcie-root-port that advertises 16 GT/s x32 while the GPUs' physical "
    "links run at 32 GT/s; 32 vCPUs (-cpu host) of a Xeon Gold 6448Y, Ubuntu 22.04 (5.15), driver 550; vLLM at TP 2",
    "llm-vm-01",
    XEON_6448Y_KVM,
    replace(JAMMY, old_kernels=(), memory_kib=263921396, cmdline="quiet"),
    GpuSpec("h100-pcie", 2),
    DriverSpec("550.127.05", cuda=12040),
    topology="q35",
    platform=PlatformSpec(
        vm="kvm",
        dmi=(
            ("product_name", "Standard PC (Q35 + ICH9, 2009)"),
            ("product_version", "pc-q35-8.1"),
            ("bios_vendor", "EFI Development Kit II / OVMF"),
            ("bios_version", "4.2023.08-4"),
            ("bios_date", "02/15/2024"),
        ),
    ),
    processes=(vllm("/models/Llama-3.1-70B-Instruct-AWQ", (0, 1), mib=73240),),
    iommu=None,
    expect="healthy VM guest: NVML's max link generation 'in this system' is the emulated root port's Gen4, not the "
    "physical slot's; the GPUs' own links run at Gen5",
)

EPYC_NPS4_L40S = HostSpec(
    "epyc-nps4-l40s",
    "Supermicro AS-4125GS-TNRT: 2x EPYC 9454 with NPS4 (8 NUMA nodes), 8x L40S each on its own Gen5 root port, one "
    "GPU per NUMA node, IOMMU passthrough (iommu=pt), 2x ConnectX-7 (RoCE) on nodes 0 and 4, Ubuntu 24.04 (6.8), "
    "driver 550; vLLM at TP 4 on each socket",
    "l40s-epyc-04",
    EPYC_9454_NPS4,
    replace(NOBLE, memory_kib=TIB_KIB + TIB_KIB // 2, cmdline="quiet iommu=pt"),
    GpuSpec("l40s", 8),
    DriverSpec("550.127.05", cuda=12040),
    topology="direct",
    root_complex="amd-genoa",
    nics=NicSpec("cx7", 2, link_layer="Ethernet", rate_gbps=200),
    platform=PlatformSpec(
        dmi=(
            ("sys_vendor", "Supermicro"),
            ("product_name", "AS -4125GS-TNRT"),
            ("board_vendor", "Supermicro"),
            ("board_name", "H13DSG-O-CPU"),
            ("bios_vendor", "American Megatrends International, LLC."),
            ("bios_version", "1.7"),
            ("bios_date", "04/18/2024"),
        )
    ),
    processes=(
        vllm("/models/Llama-3.1-70B-Instruct-AWQ", (0, 1, 2, 3), mib=42000),
        vllm("/models/Llama-3.1-70B-Instruct-AWQ", (4, 5, 6, 7), mib=42000, port=8001),
    ),
    iommu="identity",
    expect="healthy except the CPU frequency driver: GPUs peer over PCIe through the root complexes (AMD supports P2P "
    "between root ports); each TP group stays on its socket",
)

H100_NVL_PAIRS = HostSpec(
    "h100nvl-bridged-pairs",
    "Dell PowerEdge R760xa: 2x Xeon Gold 6448Y, 4x H100 NVL on their own Gen5 root ports (two per socket), each "
    "socket's two joined by three NVLink bridges (NV12), no NVSwitch, no fabric manager; 2x ConnectX-7 (RoCE), one per "
    "socket; Ubuntu 22.04 (5.15), driver 550; a vLLM server at TP 2 on each bridged pair",
    "r760xa-nvl-03",
    XEON_6448Y,
    replace(JAMMY, memory_kib=1056622592, cmdline="quiet"),
    GpuSpec("h100-nvl", 4, nvlink_bridges=((0, 1), (2, 3))),
    DriverSpec("550.127.05", cuda=12040),
    topology="direct",
    root_complex="intel-spr",
    nics=NicSpec("cx7", 2, link_layer="Ethernet", rate_gbps=200),
    platform=PlatformSpec(
        dmi=(
            ("sys_vendor", "Dell Inc."),
            ("product_name", "PowerEdge R760xa"),
            ("board_vendor", "Dell Inc."),
            ("board_name", "0J6W6D"),
            ("bios_vendor", "Dell Inc."),
            ("bios_version", "2.2.7"),
            ("bios_date", "06/14/2024"),
        )
    ),
    processes=(
        vllm("/models/Llama-3.1-70B-Instruct-FP8", (0, 1), mib=86000),
        vllm("/models/Llama-3.1-70B-Instruct-FP8", (2, 3), mib=86000, port=8001),
    ),
    iommu=None,
    expect="healthy: each TP 2 group peers over its NVLink bridge; the pairs across the sockets are refused P2P over "
    "UPI (Intel), which no server uses",
)

RTX6000_ADA_WS = HostSpec(
    "ws-rtx6000ada",
    "Workstation: Supermicro SYS-551A-T (W790), Xeon w9-3495X, 4x RTX 6000 Ada Generation on their own Gen4 root ports "
    "(no NVLink; the driver reports P2P not supported between them), ECC off (the board's default), Ubuntu 24.04 (6.8), "
    "driver 550; vLLM at TP 4",
    "ws-ada-01",
    XEON_W9_3495X,
    replace(NOBLE, memory_kib=527996928, cmdline="quiet splash"),
    GpuSpec("rtx6000ada", 4, ecc=False),
    DriverSpec("550.127.05", cuda=12040),
    topology="direct",
    root_complex="intel-spr",
    platform=PlatformSpec(
        dmi=(
            ("sys_vendor", "Supermicro"),
            ("product_name", "SYS-551A-T"),
            ("board_vendor", "Supermicro"),
            ("board_name", "X13SWA-TF"),
            ("bios_vendor", "American Megatrends International, LLC."),
            ("bios_version", "2.1"),
            ("bios_date", "04/02/2024"),
        )
    ),
    processes=(vllm("/models/Llama-3.1-70B-Instruct-AWQ", (0, 1, 2, 3), mib=42000),),
    iommu=None,
    expect="healthy: the driver refuses PCIe P2P between these boards (NVML: GPU not supported), so NCCL uses shared "
    "memory; nothing on the host can change that",
)

VGPU_GUEST = HostSpec(
    "kvm-vgpu-h100-guest",
    "On-premises KVM guest (RHEL 9.4 host, libvirt q35, NVIDIA vGPU 17.4: Virtual GPU Manager 550.127.06) with two "
    "H100-80C vGPUs (C-series, each the whole framebuffer of an H100 PCIe, time-sliced) as mediated devices behind "
    "QEMU pcie-root-ports; guest driver 550.127.05, licensed by a DLS (NVIDIA Virtual Compute Server); 32 vCPUs, "
    "Ubuntu 22.04 (5.15); vLLM at TP 2",
    "llm-vgpu-02",
    XEON_6448Y_KVM,
    replace(JAMMY, old_kernels=(), memory_kib=263921396, cmdline="quiet"),
    GpuSpec("h100-pcie", 2, vgpu="80C"),
    DriverSpec("550.127.05", cuda=12040, vgpu_manager="550.127.06"),
    topology="q35",
    platform=PlatformSpec(
        vm="kvm",
        dmi=(
            ("sys_vendor", "Red Hat"),
            ("product_name", "KVM"),
            ("product_version", "RHEL-9.4.0 PC (Q35 + ICH9, 2009)"),
            ("bios_vendor", "EFI Development Kit II / OVMF"),
            ("bios_version", "edk2-20231122-12.el9"),
            ("bios_date", "02/06/2024"),
        ),
    ),
    processes=(vllm("/models/Llama-3.1-70B-Instruct-AWQ", (0, 1), mib=73240),),
    iommu=None,
    expect="a vGPU guest: the physical GPUs' power, sensors and PCIe link are the hypervisor's (NVML: not supported); "
    "no P2P between vGPUs over PCIe, so TP 2 goes through host memory",
)

ALL: dict[str, HostSpec] = {
    spec.name: spec
    for spec in (
        HGX_H100,
        HGX_H200,
        DGX_A100_MIG,
        AWS_P5,
        GCP_G2_L4,
        K8S_POD,
        DOCKER_BM,
        DOCKER_HOST,
        DOCKER_IN_VM,
        INTEL_SNC,
        GEFORCE,
        L40S_SWITCH,
        GH200,
        PROXMOX_H100,
        EPYC_NPS4_L40S,
        H100_NVL_PAIRS,
        RTX6000_ADA_WS,
        VGPU_GUEST,
    )
}


def _upgraded() -> HostSpec:
    from tests.hostgen.faults import driver_upgraded_without_reboot

    spec = driver_upgraded_without_reboot(HGX_H100)
    return replace(
        spec,
        name="hgx-h100-upgraded-no-reboot",
        hostname="hgx-h100-05",
        summary="HGX H100 host (as hgx-h100-jammy) whose driver packages went from 550.127.05 to 550.144.03 by unattended "
        "upgrades, without a reboot: the 550.127.05 module is still loaded, NVML and nvidia-smi fail with a version "
        "mismatch, the upgraded fabric manager refuses to start",
        expect=(
            "problem: reboot pending after a driver upgrade (loaded module != user space); fabric manager down as a consequence"
        ),
    )


UPGRADED = _upgraded()
ALL[UPGRADED.name] = UPGRADED
