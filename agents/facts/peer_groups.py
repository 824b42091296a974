"""Which GPUs exchange traffic: the GPUs of one server instance, grouped by the process that started them.

A tensor-parallel server's workers each hold one GPU and share one ancestor (vLLM's API server and engine core,
SGLang's launcher); GPUs of different instances never talk to each other, so a PCIe setting on the path between
them costs nothing today. The groups are unknown (None) when a GPU's process cannot be traced to a server: a
process in another PID namespace, a non-server job (a training run may use every GPU), or NVML not listing them.
"""

from __future__ import annotations

from rigaudit.agents.facts.mps import SERVER_PROGRAM as MPS_SERVER
from rigaudit.agents.facts.processes import GpuProcess, ServerScan, server_root, split_cmdline
from rigaudit.agents.facts.serving import tensor_parallel
from rigaudit.tools.hosts.probe import Probe

Groups = tuple[frozenset[int], ...]
_ACROSS_GPUS = (
    "--enable-expert-parallel",
    "--ep-size",
    "--ep",
    "--enable-dp-attention",
    "--pipeline-parallel-size",
    "--pp-size",
    "--pp",
    "-pp",
)
"""Flags with which an instance at TP 1 still moves tensors between its GPUs (expert all-to-all, pipeline stages)."""


def _exchanges(argv: tuple[str, ...]) -> bool:
    """Whether an instance's GPUs exchange tensors: tensor parallelism above 1 (or not said), or TP 1 with expert or
    pipeline parallelism across its data-parallel ranks."""
    if tensor_parallel(argv) != 1:
        return True
    return any(arg.partition("=")[0] in _ACROSS_GPUS for arg in argv)


def _mps_server(p: GpuProcess) -> bool:
    """An MPS server: it holds the GPUs for its clients (the servers), no job of its own."""
    return p.argv is not None and p.argv[:1] != () and p.argv[0].rsplit("/", 1)[-1] == MPS_SERVER


async def server_groups(probe: Probe, scan: ServerScan) -> Groups | None:
    """The NVML indices each server instance holds (one group per instance; one per GPU for an instance whose GPUs
    exchange nothing: data-parallel replicas at TP 1). An MPS server's rows are its clients' context, not an instance."""
    procs = [p for p in scan.gpu_processes if not _mps_server(p)]
    if not scan.nvml_listed or not procs:
        return None
    if any(not p.server for p in procs):
        return None
    roots = await probe.gather(*[lambda pid=p.pid: server_root(probe, pid) for p in procs])
    if None in roots:
        return None
    by_root: dict[int, set[int]] = {}
    for process, root in zip(procs, roots, strict=True):
        by_root.setdefault(root or 0, set()).add(process.gpu_index)
    argvs = await probe.gather(*[lambda r=r: probe.read(f"/proc/{r}/cmdline") for r in by_root])
    groups: list[frozenset[int]] = []
    for indices, raw in zip(by_root.values(), argvs, strict=True):
        if not _exchanges(split_cmdline(raw.data) or ()):
            groups += [frozenset({i}) for i in indices]
        else:
            groups.append(frozenset(indices))
    return tuple(sorted(set(groups), key=sorted))  # two replicas on one GPU (MPS, time-slicing) are one group


def together(groups: Groups | None, a: int, b: int) -> bool | None:
    """Whether GPUs ``a`` and ``b`` serve one instance (None: the groups are unknown)."""
    if groups is None:
        return None
    return any(a in g and b in g for g in groups)
