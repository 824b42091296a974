"""One NVML call made for every GPU, with its evidence refs, and the words for when it failed."""

from __future__ import annotations

from rigaudit.agents.facts.gpus import Gpu, GpuInventory
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.hosts.base import NvmlResult
from rigaudit.tools.hosts.probe import Probe, nvml_ref


class GpuReads(Record):
    """``fn(index, *extra)`` for each NVML GPU index."""

    fn: str
    extra: tuple[int, ...]
    results: dict[int, NvmlResult] = field(default_factory=dict)

    def ref(self, index: int) -> str:
        return nvml_ref(self.fn, (index, *self.extra))

    @property
    def refs(self) -> tuple[str, ...]:
        return tuple(self.ref(i) for i in self.results)

    def value(self, index: int) -> object:
        result = self.results.get(index)
        return result.value if result is not None and result.ok else None

    def failed(self) -> dict[int, str]:
        """GPU index -> NVML error name, for the GPUs whose call failed."""
        return {i: r.error or "" for i, r in self.results.items() if not r.ok}


async def read_per_gpu(probe: Probe, inventory: GpuInventory, fn: str, *extra: int) -> GpuReads:
    indices = inventory.nvml_indices
    results = await probe.gather(*[lambda i=i: probe.nvml(fn, i, *extra) for i in indices])
    return GpuReads(fn, tuple(extra), dict(zip(indices, results, strict=True)))


NVML_ERRORS = {
    "LIB_RM_VERSION_MISMATCH": "the driver's user-space libraries and the loaded kernel module differ: a driver upgrade "
    "waits for a reboot (see driver.library_mismatch)",
    "DRIVER_NOT_LOADED": "the NVIDIA kernel module is not loaded",
    "LIBRARY_NOT_FOUND": "libnvidia-ml.so.1 is not installed here (no driver, or not passed into this container)",
    "NO_PERMISSION": "this user may not open the GPU device nodes",
    "GPU_IS_LOST": "a GPU has fallen off the bus",
}
"""What the NVML init errors mean for the audit."""


def nvml_error_text(error: str | None) -> str:
    """``LIB_RM_VERSION_MISMATCH (the driver's user-space libraries ...)``."""
    name = error or "unknown error"
    words = NVML_ERRORS.get(name)
    return f"{name} ({words})" if words else name


def nvml_unusable(inventory: GpuInventory) -> str | None:
    """Why no per-GPU NVML fact can be had, or None when NVML answers for at least one GPU."""
    if not inventory.nvml_ok:
        return f"NVML unavailable: {nvml_error_text(inventory.nvml_error)}"
    if not inventory.nvml_indices:
        if inventory.confined:
            return (
                f"NVML reports no GPU: this runs in {inventory.confined}, whose device cgroup opens only the GPUs the "
                f"step was given, none of the node's {inventory.elsewhere or len(inventory.gpus)} on the PCI bus; audit "
                "the node from the host (ssh, slurmd's HealthCheckProgram) or in a step given its GPUs (srun --gres=gpu:N)"
            )
        return "NVML reports no GPU"
    return None


def label(inventory: GpuInventory, index: int) -> str:
    gpu: Gpu | None = inventory.by_index(index)
    return gpu.label if gpu is not None else f"GPU{index}"


def labels(inventory: GpuInventory, indices: list[int] | tuple[int, ...]) -> list[str]:
    return [label(inventory, index) for index in indices]


def failure_text(reads: GpuReads, inventory: GpuInventory) -> str:
    """``nvmlDeviceGetMigMode: NOT_SUPPORTED on GPU0 (0000:03:00.0), ...`` (errors grouped)."""
    by_error: dict[str, list[int]] = {}
    for index, error in reads.failed().items():
        by_error.setdefault(error, []).append(index)
    parts = []
    for error, indices in by_error.items():
        shown = "not recorded in this snapshot" if error == "NOT_RECORDED" else error
        parts.append(f"{shown} on {', '.join(labels(inventory, indices))}")
    return f"{reads.fn}: " + "; ".join(parts)
