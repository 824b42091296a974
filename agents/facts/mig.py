"""MIG as it is configured and used: mode (current, pending), the GPU instances created, and who runs on them.

MIG on with GPU instances that the serving processes run on is a deliberate partitioning, not a fault. The driver
lists each GPU instance as ``/proc/driver/nvidia/capabilities/gpuN/mig/giK`` (N: the GPU's device minor), and NVML
names the MIG instance each compute process runs on (``gpuInstanceId``); servers address MIG devices as ``MIG-<uuid>``
in ``CUDA_VISIBLE_DEVICES`` / ``NVIDIA_VISIBLE_DEVICES``.
"""

from __future__ import annotations

import re

from rigaudit.agents.facts.gpus import Gpu, GpuInventory
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, dir_ref, nvml_ref

CAPS = "/proc/driver/nvidia/capabilities"
_NO_INSTANCE = 0xFFFFFFFF


class GpuMig(Record):
    gpu: Gpu
    current: int | None
    pending: int | None
    instances: tuple[int, ...] | None
    """GPU instance ids under the driver's capabilities tree; None when it could not be listed."""
    processes: int
    """Compute processes NVML lists on a MIG instance of this GPU."""
    refs: tuple[str, ...]

    @property
    def enabled(self) -> bool:
        return self.current == 1

    @property
    def in_use(self) -> bool | None:
        """Processes run on its MIG instances (None: cannot tell)."""
        if self.processes:
            return True
        return None if self.instances is None else False


def parse_minor(information: str | None) -> int | None:
    match = re.search(r"^Device Minor:\s*(\d+)", information or "", re.MULTILINE)
    return int(match.group(1)) if match else None


def _mig_processes(value: object) -> int:
    """Compute processes on a MIG-enabled GPU: they all run on its instances (NVML lists them on the parent device,
    with the instance's ids where the library passes them on)."""
    if not isinstance(value, list):
        return 0
    return sum(1 for item in value if isinstance(item, dict) and item.get("gpuInstanceId", 0) not in (_NO_INSTANCE, -1))


async def _nvml_instances(probe: Probe, index: int, refs: list[str]) -> tuple[int, ...] | None:
    """MIG devices NVML enumerates on the GPU (each a GPU/compute instance pair), or None when it cannot say."""
    top = await probe.nvml("nvmlDeviceGetMaxMigDeviceCount", index)
    if not top.ok or not isinstance(top.value, int) or not 0 <= top.value <= 16:
        return None
    refs.append(nvml_ref("nvmlDeviceGetMaxMigDeviceCount", (index,)))
    found = await probe.gather(
        *[lambda j=j: probe.nvml("nvmlDeviceGetMigDeviceHandleByIndex", index, j) for j in range(top.value)]
    )
    refs += [nvml_ref("nvmlDeviceGetMigDeviceHandleByIndex", (index, j)) for j in range(top.value)]
    if any(r.error not in (None, "NOT_FOUND", "INVALID_ARGUMENT") for r in found):
        return None
    return tuple(j for j, r in enumerate(found) if r.ok)


async def _gpu_mig(probe: Probe, gpu: Gpu) -> GpuMig:
    index = gpu.index
    refs: list[str] = []
    current = pending = None
    processes = 0
    if index is not None:
        mode, procs = await probe.gather(
            lambda: probe.nvml("nvmlDeviceGetMigMode", index),
            lambda: probe.nvml("nvmlDeviceGetComputeRunningProcesses", index),
        )
        refs += [nvml_ref("nvmlDeviceGetMigMode", (index,)), nvml_ref("nvmlDeviceGetComputeRunningProcesses", (index,))]
        if mode.ok and isinstance(mode.value, list) and len(mode.value) == 2:
            current, pending = (v if isinstance(v, int) else None for v in mode.value)
        processes = _mig_processes(procs.value) if procs.ok else 0
    instances: tuple[int, ...] | None = None
    if current == 1 and index is not None:
        instances = await _nvml_instances(probe, index, refs)
    if current == 1 and instances is None:
        minor = parse_minor(await probe.text(f"/proc/driver/nvidia/gpus/{gpu.bdf}/information"))
        if minor is not None:
            listing = await probe.list_dir(f"{CAPS}/gpu{minor}/mig")
            refs.append(dir_ref(f"{CAPS}/gpu{minor}/mig"))
            if listing.entries is not None:
                instances = tuple(sorted(int(m.group(1)) for e in listing.entries if (m := re.fullmatch(r"gi(\d+)", e))))
            elif listing.error == "ENOENT":
                instances = ()
    return GpuMig(gpu, current, pending, instances, processes, tuple(refs))


async def collect_mig(probe: Probe, inventory: GpuInventory) -> tuple[GpuMig, ...]:
    return tuple(await probe.gather(*[lambda g=g: _gpu_mig(probe, g) for g in inventory.gpus if g.index is not None]))


def mig_devices(env: dict[str, str] | None) -> tuple[str, ...]:
    """``MIG-...`` devices a process is given in CUDA_VISIBLE_DEVICES or NVIDIA_VISIBLE_DEVICES."""
    found: list[str] = []
    for key in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"):
        found += [d.strip() for d in (env or {}).get(key, "").split(",") if d.strip().startswith("MIG-")]
    return tuple(dict.fromkeys(found))
