"""What a GPU model can do, from its NVML name: PCIe peer-to-peer, NVLink, MIG.

NVIDIA enables PCIe peer-to-peer on data-center and professional (RTX/Quadro) GPUs only. GeForce cards have none
over PCIe (since the RTX 30 series; the RTX 3090 and TITAN RTX peer only across an NVLink bridge, the RTX 40 and
50 series not at all): on them NCCL stages GPU-to-GPU traffic through host memory whatever the IOMMU, ACS or
NCCL settings say. MIG exists on A100, A30, H100, H200, H20, B200, GB200 and the RTX PRO 6000 Blackwell.
"""

from __future__ import annotations

import re
from typing import Literal

ProductLine = Literal["datacenter", "workstation", "geforce", "unknown"]
P2pSupport = Literal["yes", "nvlink_bridge", "no", "unknown"]

_DATACENTER = r"\b([ABHLTV]\d{1,3}[A-Z]?|GB?\d{3}|B\d{3}|H\d{2,3}|GH\d{3}|A\d{2}|L\d{1,2}S?|T4|P\d{2,3}|K\d{2})\b"
_WORKSTATION = r"\bRTX (A\d{4}|\d{4} Ada|PRO \d{4}|\d{4})\b|\bQuadro\b|\bTITAN V\b|\bRTX PRO\b"
_BRIDGE_ONLY = r"GeForce RTX 3090|TITAN RTX|GeForce RTX 2080 Ti|GeForce RTX 2080\b"
_MIG = r"\b(A100|A30|H100|H200|H20|H800|A800|B200|B300|GB200|GB300|GH200|RTX PRO 6000)\b"


_UNIFIED_MEMORY = r"\bGB10\b"
"""GPUs of a system-on-chip that share the system's memory: DGX Spark's GB10 (NVML answers NOT_SUPPORTED for its
framebuffer, BAR1 and power limits; nvidia-smi prints "Memory-Usage: Not Supported" and the cap as N/A). Such a GPU
has no GPUDirect RDMA either: :data:`NO_GPUDIRECT_RDMA`."""

NO_GPUDIRECT_RDMA = "https://forums.developer.nvidia.com/t/dgx-spark-gpudirect-rdma/348787"
"""NVIDIA's answer on DGX Spark: memory that cudaMalloc returns for the iGPU's contexts cannot be accessed coherently
by the CPU or by PCIe devices, so GPUDirect RDMA is not supported and nvidia-peermem, dma-buf and GDRCopy do not work;
RDMA applications register host buffers (cudaHostAlloc) with the NIC instead (NCCL: "GPU Direct RDMA Disabled")."""


def unified_memory(name: str) -> bool:
    """Whether a GPU of this NVML name has no memory, BAR1 or board power limit of its own (``NVIDIA GB10``)."""
    return re.search(_UNIFIED_MEMORY, name) is not None


def product_line(name: str) -> ProductLine:
    """``NVIDIA GeForce RTX 4090`` -> geforce; ``NVIDIA H200`` -> datacenter; ``NVIDIA RTX 6000 Ada Generation`` ->
    workstation."""
    text = name.replace("NVIDIA ", "").strip()
    if "GeForce" in text or re.search(r"\bTITAN (RTX|Xp?|X)\b", text):
        return "geforce"
    if re.search(_WORKSTATION, text):
        return "workstation"
    if re.search(_DATACENTER, text):
        return "datacenter"
    return "unknown"


def p2p_support(name: str) -> P2pSupport:
    """Whether the model allows CUDA peer-to-peer over PCIe (``nvlink_bridge``: only across an NVLink bridge)."""
    line = product_line(name)
    if line == "geforce":
        return "nvlink_bridge" if re.search(_BRIDGE_ONLY, name) else "no"
    if line in ("datacenter", "workstation"):
        return "yes"
    return "unknown"


def has_mig(name: str) -> bool:
    return bool(re.search(_MIG, name))


def short_name(name: str) -> str:
    return name.removeprefix("NVIDIA ").strip() or name
