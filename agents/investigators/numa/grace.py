"""GPUs joined to a Grace CPU by NVLink-C2C (GH200, GB200, GB300): not PCIe-attached to the CPU, so no PCIe switch
sits between them and the CPU's NICs.

Known by NVML's name, or where NVML names no GPU (the driver refused them) by the PCI device id sysfs gives; the ids
are those of NVIDIA's open-gpu-kernel-modules README ("Compatible GPUs").
"""

from __future__ import annotations

import re

from rigaudit.agents.facts.gpus import Gpu

GRACE_NAMES = r"\bG[HB]\d{3}\b"
"""GH200, GB200, GB300 in NVML's name."""
GRACE_DEVICE_IDS = frozenset({"0x2342", "0x2348", "0x2941", "0x31c2", "0x31c3"})
"""GH200 120GB/480GB, GH200 144G HBM3e, GB200, GB300 (two ids)."""


def grace_coupled(gpu: Gpu) -> bool:
    """Whether the GPU reaches its CPU over NVLink-C2C rather than PCIe."""
    return bool(re.search(GRACE_NAMES, gpu.name)) or (gpu.device_id or "").lower() in GRACE_DEVICE_IDS
