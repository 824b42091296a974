"""Device models as the hardware and NVIDIA's tools name them: PCI ids, NVML names, memory, BAR1, power, NVLink.

Figures are those the devices report (``nvidia-smi -q``, NVML, ``lspci -nn``), not marketing numbers: an
"80GB" H100 reports 81559 MiB, a 141 GB H200 143771 MiB.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1 << 20
GIB = 1 << 30

# nvmlDeviceArchitecture_t
ARCH_AMPERE, ARCH_ADA, ARCH_HOPPER, ARCH_BLACKWELL = 7, 8, 9, 10


@dataclass(frozen=True)
class GpuModel:
    key: str
    name: str
    """nvmlDeviceGetName, exactly."""
    device_id: int
    subsystem: tuple[int, int]
    arch: int
    arch_name: str
    compute_capability: tuple[int, int]
    memory_mib: int
    bar1_bytes: int
    power_default_mw: int
    power_max_mw: int
    pcie_gen: int
    nvlinks: int
    """NVLink ports NVML reports (0 for PCIe-only cards)."""
    nvlink_version: int
    vbios: str
    slowdown_c: int
    shutdown_c: int
    gpu_max_c: int
    mem_max_c: int | None
    ecc: bool
    mig: bool
    p2p: bool
    """PCIe peer-to-peer supported by the driver for this board."""
    clocks_max: tuple[int, int, int]
    """(graphics, SM, memory) MHz maxima."""
    idle_watts: int
    hbm: bool
    bar0_64bit: bool
    """Hopper exposes its register BAR as 64-bit prefetchable (BARs 0/2/4); older GPUs as 32-bit (0/1/3)."""
    vga: bool = False
    audio_function: int | None = None
    """Device id of the HDMI audio function at .1 (GeForce)."""
    product_brand: str = "NVIDIA"
    board_part: str = ""
    form_factor: str = "SXM"
    mig_profiles: tuple[tuple[str, int, int], ...] = ()
    """(profile, memory MiB, slices) a GPU instance of this model can take."""
    unified_memory: bool = False
    """The GPU of a system-on-chip whose memory is the system's (GB10): NVML answers no framebuffer, BAR1 or power
    limit query (NOT_SUPPORTED; nvidia-smi prints ``Not Supported`` for Memory-Usage and ``N/A`` for the cap)."""


GPUS: dict[str, GpuModel] = {
    m.key: m
    for m in (
        GpuModel(
            "h100-sxm",
            "NVIDIA H100 80GB HBM3",
            0x2330,
            (0x10DE, 0x16C1),
            ARCH_HOPPER,
            "Hopper",
            (9, 0),
            81559,
            128 * GIB,
            700000,
            700000,
            5,
            18,
            4,
            "96.00.99.00.01",
            87,
            92,
            87,
            95,
            True,
            True,
            True,
            (1980, 1980, 2619),
            72,
            True,
            True,
            board_part="692-2G520-0200-000",
            mig_profiles=(("1g.10gb", 9856, 1), ("2g.20gb", 20096, 2), ("3g.40gb", 40320, 3), ("7g.80gb", 80896, 7)),
        ),
        GpuModel(
            "h200-sxm",
            "NVIDIA H200",
            0x2335,
            (0x10DE, 0x18BF),
            ARCH_HOPPER,
            "Hopper",
            (9, 0),
            143771,
            256 * GIB,
            700000,
            700000,
            5,
            18,
            4,
            "96.00.A5.00.1A",
            89,
            94,
            87,
            95,
            True,
            True,
            True,
            (1980, 1980, 3201),
            77,
            True,
            True,
            board_part="692-2G520-0280-000",
            mig_profiles=(("1g.18gb", 16384, 1), ("2g.35gb", 32768, 2), ("3g.71gb", 71168, 3), ("7g.141gb", 143360, 7)),
        ),
        GpuModel(
            "a100-sxm-80",
            "NVIDIA A100-SXM4-80GB",
            0x20B2,
            (0x10DE, 0x1463),
            ARCH_AMPERE,
            "Ampere",
            (8, 0),
            81920,
            128 * GIB,
            400000,
            400000,
            4,
            12,
            3,
            "92.00.45.00.03",
            90,
            92,
            85,
            95,
            True,
            True,
            True,
            (1410, 1410, 1593),
            62,
            True,
            False,
            board_part="692-2G506-0212-002",
            mig_profiles=(
                ("1g.10gb", 9728, 1),
                ("2g.20gb", 19968, 2),
                ("3g.40gb", 40192, 3),
                ("4g.40gb", 40192, 4),
                ("7g.80gb", 80896, 7),
            ),
        ),
        GpuModel(
            "l40s",
            "NVIDIA L40S",
            0x26B9,
            (0x10DE, 0x1851),
            ARCH_ADA,
            "Ada Lovelace",
            (8, 9),
            46068,
            64 * GIB,
            350000,
            350000,
            4,
            0,
            0,
            "95.02.66.00.02",
            88,
            93,
            87,
            None,
            True,
            False,
            True,
            (2520, 2520, 9001),
            34,
            False,
            False,
            form_factor="PCIe",
            board_part="900-2G133-0080-000",
        ),
        GpuModel(
            "l4",
            "NVIDIA L4",
            0x27B8,
            (0x10DE, 0x16CA),
            ARCH_ADA,
            "Ada Lovelace",
            (8, 9),
            23034,
            32 * GIB,
            72000,
            72000,
            4,
            0,
            0,
            "95.04.29.00.06",
            90,
            96,
            87,
            None,
            True,
            False,
            True,
            (2040, 2040, 6251),
            16,
            False,
            False,
            form_factor="PCIe",
            board_part="900-2G193-0000-001",
        ),
        GpuModel(
            "a10g",
            "NVIDIA A10G",
            0x2237,
            (0x10DE, 0x152F),
            ARCH_AMPERE,
            "Ampere",
            (8, 6),
            23028,
            32 * GIB,
            300000,
            300000,
            4,
            0,
            0,
            "94.02.75.00.01",
            92,
            98,
            88,
            None,
            True,
            False,
            True,
            (1710, 1710, 6251),
            25,
            False,
            False,
            form_factor="PCIe",
            board_part="900-2G133-0020-000",
        ),
        GpuModel(
            "rtx4090",
            "NVIDIA GeForce RTX 4090",
            0x2684,
            (0x1043, 0x889A),
            ARCH_ADA,
            "Ada Lovelace",
            (8, 9),
            24564,
            32 * GIB,
            450000,
            600000,
            4,
            0,
            0,
            "95.02.3C.40.E1",
            87,
            92,
            90,
            None,
            False,
            False,
            False,
            (3105, 3105, 10501),
            21,
            False,
            False,
            vga=True,
            audio_function=0x22BA,
            product_brand="GeForce",
            form_factor="PCIe",
        ),
        GpuModel(
            "h100-pcie",
            "NVIDIA H100 PCIe",
            0x2331,
            (0x10DE, 0x1626),
            ARCH_HOPPER,
            "Hopper",
            (9, 0),
            81559,
            128 * GIB,
            350000,
            350000,
            5,
            0,
            0,
            "96.00.30.00.01",
            85,
            90,
            87,
            95,
            True,
            True,
            True,
            (1755, 1755, 1593),
            48,
            True,
            True,
            form_factor="PCIe",
            board_part="900-21010-0000-000",
        ),
        GpuModel(
            "h100-nvl",
            "NVIDIA H100 NVL",
            0x2321,
            (0x10DE, 0x1839),
            ARCH_HOPPER,
            "Hopper",
            (9, 0),
            95830,
            128 * GIB,
            400000,
            400000,
            5,
            12,
            4,
            "96.00.A8.00.02",
            87,
            92,
            87,
            95,
            True,
            True,
            True,
            (1785, 1785, 2619),
            61,
            True,
            True,
            form_factor="PCIe",
            board_part="900-21010-0020-000",
            mig_profiles=(("1g.12gb", 10880, 1), ("2g.24gb", 22784, 2), ("3g.47gb", 46592, 3), ("7g.94gb", 93696, 7)),
        ),
        GpuModel(
            "rtx6000ada",
            "NVIDIA RTX 6000 Ada Generation",
            0x26B1,
            (0x10DE, 0x16A1),
            ARCH_ADA,
            "Ada Lovelace",
            (8, 9),
            49140,
            64 * GIB,
            300000,
            300000,
            4,
            0,
            0,
            "95.02.5D.00.01",
            91,
            96,
            88,
            None,
            True,
            False,
            False,
            (2505, 2505, 10001),
            24,
            False,
            False,
            vga=True,
            audio_function=0x22BA,
            product_brand="NVIDIA RTX",
            form_factor="PCIe",
            board_part="900-5G133-2250-000",
        ),
        GpuModel(
            "gh200",
            "NVIDIA GH200 480GB",
            0x2342,
            (0x10DE, 0x16EB),
            ARCH_HOPPER,
            "Hopper",
            (9, 0),
            97871,
            128 * GIB,
            900000,
            900000,
            5,
            18,
            4,
            "96.00.74.00.11",
            88,
            93,
            87,
            95,
            True,
            True,
            True,
            (1980, 1980, 2619),
            90,
            True,
            True,
            board_part="699-2G530-0200-000",
        ),
        GpuModel(
            # HGX B200 (SXM): the PCI id 10de:2901, NVML's name, 180 GB of HBM3e (nvidia-smi: 183359 MiB), 1000 W, 18
            # NVLink 5 ports. Not from a public source read here, so stand-ins of the family's form: the subsystem id,
            # the VBIOS, BAR1, the thermal thresholds, clock maxima, the board part and the MIG profiles' sizes.
            "b200",
            "NVIDIA B200",
            0x2901,
            (0x10DE, 0x1999),
            ARCH_BLACKWELL,
            "Blackwell",
            (10, 0),
            183359,
            256 * GIB,
            1000000,
            1000000,
            5,
            18,
            5,
            "97.00.6B.00.01",
            87,
            92,
            87,
            95,
            True,
            True,
            True,
            (1965, 1965, 3996),
            140,
            True,
            True,
            board_part="692-2G525-0220-000",
            mig_profiles=(("1g.23gb", 23040, 1), ("2g.45gb", 46080, 2), ("3g.90gb", 92160, 3), ("7g.180gb", 183040, 7)),
        ),
        GpuModel(
            # GB200 (a Blackwell GPU of a Grace Blackwell superchip, NVL72 compute tray): NVML's name "NVIDIA GB200",
            # 189471 MiB, a 1200 W limit and NV18 to its tray's peers, as a public nvidia-smi of a GB200 tray (driver
            # 580.126.09) prints them. Not from a public source read here, so stand-ins of the family's form: the PCI
            # device and subsystem ids, the VBIOS, BAR1, the thermal thresholds, clock maxima and the board part. The MIG
            # profiles are the three of NVIDIA/gpu-operator PR 1303's `nvidia-smi mig -lgip` on GB200 read here.
            "gb200",
            "NVIDIA GB200",
            0x2941,
            (0x10DE, 0x2046),
            ARCH_BLACKWELL,
            "Blackwell",
            (10, 0),
            189471,
            256 * GIB,
            1200000,
            1200000,
            5,
            18,
            5,
            "97.00.82.00.0F",
            87,
            92,
            87,
            95,
            True,
            True,
            True,
            (1965, 1965, 3996),
            155,
            True,
            True,
            board_part="699-2G548-0201-000",
            mig_profiles=(("1g.24gb", 20480, 1), ("1g.47gb", 46592, 1), ("2g.47gb", 46592, 2)),
        ),
        GpuModel(
            # GB10 (DGX Spark): NVML's name "NVIDIA GB10", compute capability 12.1, one GPU on PCI domain 000F
            # (nvidia-smi: 0000000F:01:00.0), memory the system's 128 GB LPDDR5X (nvidia-smi: "Memory-Usage: Not
            # Supported", power cap "N/A"), no MIG, no ECC reporting, no NVLink ports, as public DGX Spark nvidia-smi
            # outputs (driver 580.95.05) print them. Not from a public source read here, so stand-ins: the PCI device
            # and subsystem ids, the VBIOS, the thermal thresholds, clock maxima and the idle power; memory_mib is the
            # system's memory as a stand-in for tools that print a size.
            "gb10",
            "NVIDIA GB10",
            0x2E12,
            (0x10DE, 0x2008),
            ARCH_BLACKWELL,
            "Blackwell",
            (12, 1),
            122570,
            256 * 1 << 20,
            140000,
            140000,
            5,
            0,
            0,
            "9A.0B.19.00.01",
            87,
            92,
            87,
            None,
            False,
            False,
            False,
            (2418, 2418, 4266),
            11,
            False,
            True,
            board_part="N/A",
            form_factor="SoC",
            unified_memory=True,
        ),
    )
}


@dataclass(frozen=True)
class PciModel:
    """Any other PCI function: bridges, NICs, NVSwitches, storage."""

    vendor: int
    device: int
    class_code: int
    name: str
    """lspci's vendor and device words."""
    revision: int = 0
    subsystem: tuple[int, int] = (0, 0)
    driver: str | None = None


PCI: dict[str, PciModel] = {
    "nvswitch-h100": PciModel(
        0x10DE, 0x22A3, 0x068000, "Bridge: NVIDIA Corporation GH100 [H100 NVSwitch]", 0xA1, (0x10DE, 0x1796), "nvidia-nvswitch"
    ),
    "nvswitch-a100": PciModel(
        0x10DE, 0x1AF1, 0x068000, "Bridge: NVIDIA Corporation GA100 [A100 NVSwitch]", 0xA1, (0x10DE, 0x1635), "nvidia-nvswitch"
    ),
    "cx7": PciModel(
        0x15B3,
        0x1021,
        0x020700,
        "Infiniband controller: Mellanox Technologies MT2910 Family [ConnectX-7]",
        0x00,
        (0x15B3, 0x0041),
        "mlx5_core",
    ),
    "cx7-vf": PciModel(
        0x15B3,
        0x101E,
        0x020700,
        "Infiniband controller: Mellanox Technologies ConnectX Family mlx5Gen Virtual Function",
        0x00,
        (0x15B3, 0x0041),
        "mlx5_core",
    ),
    "cx6": PciModel(
        0x15B3,
        0x101B,
        0x020700,
        "Infiniband controller: Mellanox Technologies MT28908 Family [ConnectX-6]",
        0x00,
        (0x15B3, 0x0006),
        "mlx5_core",
    ),
    "cx6dx-eth": PciModel(
        0x15B3,
        0x101D,
        0x020000,
        "Ethernet controller: Mellanox Technologies MT2892 Family [ConnectX-6 Dx]",
        0x00,
        (0x15B3, 0x0016),
        "mlx5_core",
    ),
    "efa": PciModel(
        0x1D0F,
        0xEFA2,
        0x020000,
        "Ethernet controller: Amazon.com, Inc. Elastic Fabric Adapter (EFA)",
        0x00,
        (0x0000, 0x0000),
        "efa",
    ),
    "ena": PciModel(
        0x1D0F,
        0xEC20,
        0x020000,
        "Ethernet controller: Amazon.com, Inc. Elastic Network Adapter (ENA)",
        0x00,
        (0x0000, 0x0000),
        "ena",
    ),
    "nvme-aws": PciModel(
        0x1D0F,
        0xCD01,
        0x010802,
        "Non-Volatile memory controller: Amazon.com, Inc. NVMe SSD Controller",
        0x00,
        (0x1D0F, 0xCD01),
        "nvme",
    ),
    "nvme-samsung": PciModel(
        0x144D,
        0xA824,
        0x010802,
        "Non-Volatile memory controller: Samsung Electronics Co Ltd NVMe SSD Controller PM173X",
        0x00,
        (0x144D, 0xA80A),
        "nvme",
    ),
    "nvme-kioxia": PciModel(
        0x1E0F, 0x0007, 0x010802, "Non-Volatile memory controller: KIOXIA Corporation NVMe SSD", 0x01, (0x1E0F, 0x0001), "nvme"
    ),
    "pex-gen5": PciModel(
        0x1000, 0xC030, 0x060400, "PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch", 0xB0, (0x1000, 0x0000), "pcieport"
    ),
    "pex-gen4": PciModel(
        0x1000, 0xC010, 0x060400, "PCI bridge: Broadcom / LSI PEX880xx PCIe Gen 4 Switch", 0xB0, (0x1000, 0x0000), "pcieport"
    ),
    "intel-spr-rp": PciModel(
        0x8086, 0x352A, 0x060400, "PCI bridge: Intel Corporation Device 352a", 0x04, (0x8086, 0x0000), "pcieport"
    ),
    "intel-spr-host": PciModel(
        0x8086, 0x09A2, 0x088000, "System peripheral: Intel Corporation Ice Lake Memory Map/VT-d", 0x20, (0x8086, 0x0000), None
    ),
    "intel-icx-rp": PciModel(
        0x8086,
        0x347A,
        0x060400,
        "PCI bridge: Intel Corporation Ice Lake Xeon PCIe Root Port A",
        0x04,
        (0x8086, 0x0000),
        "pcieport",
    ),
    "intel-clx-rp": PciModel(
        0x8086,
        0x2030,
        0x060400,
        "PCI bridge: Intel Corporation Sky Lake-E PCI Express Root Port A",
        0x07,
        (0x8086, 0x0000),
        "pcieport",
    ),
    "amd-genoa-rp": PciModel(
        0x1022,
        0x14AB,
        0x060400,
        "PCI bridge: Advanced Micro Devices, Inc. [AMD] Genoa/Bergamo/Siena PCIe GPP Bridge",
        0x00,
        (0x1022, 0x14AB),
        "pcieport",
    ),
    "amd-genoa-host": PciModel(
        0x1022,
        0x14A4,
        0x060000,
        "Host bridge: Advanced Micro Devices, Inc. [AMD] Genoa/Bergamo/Siena Root Complex",
        0x00,
        (0x1022, 0x14A4),
        None,
    ),
    "amd-rome-rp": PciModel(
        0x1022,
        0x1483,
        0x060400,
        "PCI bridge: Advanced Micro Devices, Inc. [AMD] Starship/Matisse GPP Bridge",
        0x00,
        (0x1022, 0x1453),
        "pcieport",
    ),
    "amd-rome-host": PciModel(
        0x1022,
        0x1480,
        0x060000,
        "Host bridge: Advanced Micro Devices, Inc. [AMD] Starship/Matisse Root Complex",
        0x00,
        (0x1022, 0x1480),
        None,
    ),
    "qemu-host": PciModel(
        0x8086,
        0x29C0,
        0x060000,
        "Host bridge: Intel Corporation 82G33/G31/P35/P31 Express DRAM Controller",
        0x00,
        (0x1AF4, 0x1100),
        None,
    ),
    "qemu-rp": PciModel(
        0x1B36, 0x000C, 0x060400, "PCI bridge: Red Hat, Inc. QEMU PCIe Root port", 0x00, (0x1B36, 0x0000), "pcieport"
    ),
    "qemu-lpc": PciModel(
        0x8086, 0x2918, 0x060100, "ISA bridge: Intel Corporation 82801IB (ICH9) LPC Interface Controller", 0x02, (0x1AF4, 0x1100)
    ),
    "qemu-i440fx": PciModel(
        0x8086, 0x1237, 0x060000, "Host bridge: Intel Corporation 440FX - 82441FX PMC [Natoma]", 0x02, (0x1AF4, 0x1100), None
    ),
    "qemu-isa": PciModel(
        0x8086,
        0x7000,
        0x060100,
        "ISA bridge: Intel Corporation 82371SB PIIX3 ISA [Natoma/Triton II]",
        0x00,
        (0x1AF4, 0x1100),
        None,
    ),
    "virtio-net": PciModel(
        0x1AF4, 0x1000, 0x020000, "Ethernet controller: Red Hat, Inc. Virtio network device", 0x00, (0x1AF4, 0x0001), "virtio-pci"
    ),
    "virtio-blk": PciModel(
        0x1AF4,
        0x1001,
        0x010000,
        "SCSI storage controller: Red Hat, Inc. Virtio block device",
        0x00,
        (0x1AF4, 0x0002),
        "virtio-pci",
    ),
    "virtio-scsi": PciModel(
        0x1AF4, 0x1004, 0x010000, "SCSI storage controller: Red Hat, Inc. Virtio SCSI", 0x00, (0x1AF4, 0x0008), "virtio-pci"
    ),
    "gvnic": PciModel(
        0x1AE0,
        0x0042,
        0x020000,
        "Ethernet controller: Google, Inc. Compute Engine Virtual Ethernet [gVNIC]",
        0x00,
        (0x1AE0, 0x0058),
        "gve",
    ),
    "grace-rp": PciModel(
        0x10DE, 0x22B2, 0x060400, "PCI bridge: NVIDIA Corporation Device 22b2", 0x00, (0x10DE, 0x0000), "pcieport"
    ),
    "aspeed-vga": PciModel(
        0x1A03,
        0x2000,
        0x030000,
        "VGA compatible controller: ASPEED Technology, Inc. ASPEED Graphics Family",
        0x52,
        (0x1A03, 0x2000),
        "ast",
    ),
    "aspeed-bridge": PciModel(
        0x1A03, 0x1150, 0x060400, "PCI bridge: ASPEED Technology, Inc. AST1150 PCI-to-PCI Bridge", 0x06, (0x1A03, 0x1150), None
    ),
    "intel-x710": PciModel(
        0x8086,
        0x1572,
        0x020000,
        "Ethernet controller: Intel Corporation Ethernet Controller X710 for 10GbE SFP+",
        0x02,
        (0x8086, 0x0000),
        "i40e",
    ),
    "intel-i210": PciModel(
        0x8086,
        0x1533,
        0x020000,
        "Ethernet controller: Intel Corporation I210 Gigabit Network Connection",
        0x03,
        (0x8086, 0x0001),
        "igb",
    ),
    "nv-audio": PciModel(
        0x10DE,
        0x22BA,
        0x040300,
        "Audio device: NVIDIA Corporation AD102 High Definition Audio Controller",
        0xA1,
        (0x1043, 0x889A),
        "snd_hda_intel",
    ),
}
