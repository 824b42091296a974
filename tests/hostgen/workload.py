"""Faults of a workload, not of the node it runs on (``rigaudit check`` lists them and never drains for them).

``torch_newer_than_driver``: the servers' image carries a torch built for a CUDA the driver does not support
(``faults.cpu_throttled`` is another workload fault: the CPU quota of the container the audit runs in).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from tests.hostgen.spec import Fault, HostSpec

if TYPE_CHECKING:
    from tests.hostgen.build import Built


def torch_newer_than_driver(spec: HostSpec, torch: str = "2.9.0+cu130", cuda: str = "13.0") -> HostSpec:
    """The servers' image carries a torch built for a CUDA newer than the driver supports: cuInit fails, the servers
    hold no GPU memory, the GPUs idle. The node is healthy for every image built for its driver."""
    procs = tuple(replace(p, torch=torch, torch_cuda=cuda) for p in spec.processes)

    def apply(built: Built) -> None:
        for i in range(len(built.gpu_states)):
            total = built.tree.nvml_result("nvmlDeviceGetMemoryInfo", i)["total"]
            built.tree.call("nvmlDeviceGetComputeRunningProcesses", (i,), [])
            built.tree.call("nvmlDeviceGetMemoryInfo", (i,), {"total": total, "free": total - 2**29, "used": 2**29})
            built.tree.call("nvmlDeviceGetUtilizationRates", (i,), {"gpu": 0, "memory": 0})

    summary = f"the servers' torch {torch} (CUDA {cuda})"
    return replace(
        spec,
        name=f"{spec.name}+torch-{torch}",
        summary=f"{spec.summary}; FAULT: {summary}",
        processes=procs,
        faults=(*spec.faults, Fault(f"torch-{torch}", summary, apply)),
    )


__all__ = ["torch_newer_than_driver"]
