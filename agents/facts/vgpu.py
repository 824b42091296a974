"""NVIDIA vGPUs in a guest: which facts of the physical GPU the guest cannot see.

A vGPU is presented to the guest like a passed-through GPU, but the properties of the physical board do not apply to
it (NVIDIA Virtual GPU Software Management SDK User Guide, "Managing vGPUs from a guest VM"): NVML answers
NOT_SUPPORTED (or an emulated value) for its temperatures, power, PCIe link, clock event reasons, row remapping and MIG,
and its BAR1 is the window the vGPU manager gives it. Those are read on the hypervisor (``nvidia-smi -q`` there,
which names the vGPU's VM), so a rule says so instead of judging the emulation or blaming the board.
"""

from __future__ import annotations

from rigaudit.agents.facts.gpu_models import short_name
from rigaudit.agents.facts.gpus import Gpu, GpuInventory
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import NvmlResult
from rigaudit.tools.hosts.probe import Probe


def all_vgpus(gpus: tuple[Gpu, ...] | list[Gpu]) -> bool:
    """Every GPU NVML gives this machine is an NVIDIA vGPU."""
    known = [g for g in gpus if g.index is not None]
    return bool(known) and all(g.vgpu for g in known)


def hypervisor_side(gpus: GpuInventory | tuple[Gpu, ...] | list[Gpu], what: str) -> str | None:
    """Why ``what`` (of the physical GPUs) cannot be judged here, or None when not every GPU is a vGPU."""
    listed = gpus.gpus if isinstance(gpus, GpuInventory) else tuple(gpus)
    if not all_vgpus(listed):
        return None
    names = ", ".join(sorted({short_name(g.name) for g in listed if g.vgpu}))
    return (
        f"these GPUs are NVIDIA vGPUs ({names}, NVML virtualization mode VGPU): {what} belong to the physical GPU, "
        "which the hypervisor holds (NVML here answers NOT_SUPPORTED or an emulated value); read them on the "
        "hypervisor (nvidia-smi -q there)"
    )


LICENSE_FN = "nvmlDeviceGetGridLicensableFeatures_v4"
EXPIRY_VALID = 2
"""NVML_GRID_LICENSE_EXPIRY_VALID."""


class VgpuLicense(Record):
    gpu: Gpu
    read: NvmlResult

    @property
    def features(self) -> list[dict[str, object]]:
        value = self.read.value if self.read.ok else None
        raw = value.get("gridLicensableFeatures") if isinstance(value, dict) else None
        count = value.get("licensableFeaturesCount") if isinstance(value, dict) else None
        listed = [f for f in raw if isinstance(f, dict)] if isinstance(raw, list) else []
        return listed[: count if isinstance(count, int) and 0 <= count <= len(listed) else len(listed)]

    @property
    def licensed(self) -> bool | None:
        """Whether an enabled feature holds a licence (None: NVML gave no usable answer)."""
        enabled = [f for f in self.features if f.get("featureEnabled")]
        if not enabled:
            return None
        return any(isinstance(f.get("featureState"), int) and f.get("featureState") != 0 for f in enabled)

    def product(self) -> str:
        names = {str(f.get("productName"))[:64] for f in self.features if f.get("featureEnabled") and f.get("productName")}
        return ", ".join(sorted(names)) or "the vGPU's licensed product"

    def expiry(self) -> str | None:
        for feature in self.features:
            when = feature.get("licenseExpiry")
            if isinstance(when, dict) and when.get("status") == EXPIRY_VALID:
                parts = [when.get(k) for k in ("year", "month", "day")]
                if all(isinstance(p, int) for p in parts):
                    return "-".join(f"{p:02d}" for p in parts)
        return None


async def collect_licenses(probe: Probe, gpus: tuple[Gpu, ...]) -> tuple[VgpuLicense, ...]:
    """NVML's licensable features of each vGPU (none read on a machine without vGPUs)."""
    vgpus = [g for g in gpus if g.vgpu and g.index is not None]
    reads = await probe.gather(*[lambda g=g: probe.nvml(LICENSE_FN, g.index or 0) for g in vgpus])
    return tuple(VgpuLicense(g, r) for g, r in zip(vgpus, reads, strict=True))
