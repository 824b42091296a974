"""Faults of a workload, not of the node it runs on (``rigaudit check`` lists them and never drains for them), and
faults inside those same checks whose cause lives on the node (it drains for them).

The workload's: ``torch_newer_than_driver``, the servers' image carries a torch built for a CUDA the driver does not
support (``faults.cpu_throttled`` is another: the CPU quota of the container the audit runs in; ``faults.server_env``
a server's own NCCL override); ``gpu_process(..., ppid=<its job's step>)``, a job that runs holds memory.
The node's: ``node_nccl_conf``, a host ``/etc/nccl.conf`` every job inherits; ``gpu_process`` with ``ppid=1``, a dead
job's leftover process; ``memory_held_no_process``, memory in use that no process NVML lists holds
(``faults.mps_daemon_not_serving`` is another: the device plugin's MPS daemon down).
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


def node_nccl_conf(spec: HostSpec, text: str = "NCCL_P2P_DISABLE=1\nNCCL_IB_DISABLE=1\n") -> HostSpec:
    """A host ``/etc/nccl.conf`` that turns transports off: NCCL reads it for every process on the host."""
    return replace(spec, name=f"{spec.name}+nccl-conf", summary=f"{spec.summary}; FAULT: /etc/nccl.conf {text!r}", nccl_conf=text)


def gpu_process(
    spec: HostSpec, gpu: int = 3, gib: int = 70, *, pid: int = 4242, ppid: int = 1, cgroup: str = "job_77/step_0"
) -> HostSpec:
    """A ``python3`` (uid 1000) that is no server holds ``gib`` GiB on ``gpu``, in Slurm's ``cgroup`` (under
    ``slurmstepd.scope``): with ``ppid=1`` its step is gone (a dead job's leftover), else its step daemon runs."""

    def apply(built: Built) -> None:
        t = built.tree
        rows = list(t.nvml_result("nvmlDeviceGetComputeRunningProcesses", gpu) or [])
        t.call("nvmlDeviceGetComputeRunningProcesses", (gpu,), [*rows, {"pid": pid, "usedGpuMemory": gib * 2**30}])
        memory = t.nvml_result("nvmlDeviceGetMemoryInfo", gpu)
        used = memory["used"] + gib * 2**30
        t.call("nvmlDeviceGetMemoryInfo", (gpu,), {"total": memory["total"], "free": memory["total"] - used, "used": used})
        t.file(f"/proc/{pid}/cmdline", b"python3\0train.py\0")
        t.file(f"/proc/{pid}/comm", "python3\n")
        status = f"Name:\tpython3\nState:\tS (sleeping)\nPid:\t{pid}\nPPid:\t{ppid}\nUid:\t1000\t1000\t1000\t1000\n"
        t.file(f"/proc/{pid}/status", status)
        t.file(f"/proc/{pid}/cgroup", f"0::/system.slice/slurmstepd.scope/{cgroup}/user/task_0\n")

    summary = f"pid {pid} (ppid {ppid}, {cgroup}) holds {gib} GiB on GPU{gpu}"
    name = f"gpu-process-{pid}-ppid{ppid}"
    return replace(
        spec,
        name=f"{spec.name}+{name}",
        summary=f"{spec.summary}; FAULT: {summary}",
        faults=(*spec.faults, Fault(name, summary, apply)),
    )


def memory_held_no_process(spec: HostSpec, gpu: int = 3, gib: int = 70) -> HostSpec:
    """``gib`` GiB in use on ``gpu`` and NVML lists no process there: a context nothing owns."""

    def apply(built: Built) -> None:
        t = built.tree
        total = t.nvml_result("nvmlDeviceGetMemoryInfo", gpu)["total"]
        t.call("nvmlDeviceGetComputeRunningProcesses", (gpu,), [])
        t.call("nvmlDeviceGetMemoryInfo", (gpu,), {"total": total, "free": total - gib * 2**30, "used": gib * 2**30})

    summary = f"{gib} GiB held on GPU{gpu}, no process listed"
    return replace(
        spec,
        name=f"{spec.name}+orphan-memory",
        summary=f"{spec.summary}; FAULT: {summary}",
        faults=(*spec.faults, Fault("orphan-memory", summary, apply)),
    )


__all__ = ["gpu_process", "memory_held_no_process", "node_nccl_conf", "torch_newer_than_driver"]
