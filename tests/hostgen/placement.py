"""NUMA placement faults: servers bound to other nodes than their GPUs', memory tiering with and without a slow tier.

Kept apart from :mod:`tests.hostgen.faults`. Each helper returns a changed copy of a description; the binding is
what ``/proc/PID/status`` shows after ``numactl --cpunodebind=N`` (``Cpus_allowed_list``) under a cpuset that
allows node N's memory (``Mems_allowed_list``: ``docker run --cpuset-mems``, a unit's ``AllowedMemoryNodes=``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from tests.hostgen.cpu import cpulist, layout
from tests.hostgen.procs import write_proc
from tests.hostgen.spec import Fault, HostSpec

if TYPE_CHECKING:
    from tests.hostgen.build import Built

TIERS = "/sys/devices/virtual/memory_tiering"
DRAM_TIER = 4
"""The tier of DRAM nodes: the kernel's MEMTIER_ADISTANCE_DRAM is 4 chunks of abstract distance."""
SLOW_TIER = 9
"""A lower tier (a CXL Type 3 expander placed by its HMAT/CDAT performance; the number depends on the device)."""


def _with(spec: HostSpec, suffix: str, summary: str, apply: Fault | None = None, **changes: object) -> HostSpec:
    faults = (*spec.faults, apply) if apply is not None else spec.faults
    return replace(spec, name=f"{spec.name}+{suffix}", summary=f"{spec.summary}; FAULT: {summary}", faults=faults, **changes)  # type: ignore[arg-type]


def node_cpus(built: Built, nodes: list[int]) -> str:
    """The CPUs of ``nodes`` as the kernel prints Cpus_allowed_list."""
    return cpulist(sorted(cpu for n in nodes for cpu in layout(built.spec.cpu).cpus_of_node(n)))


def _server_pids(built: Built, server: int) -> list[int]:
    """The main process of the ``server``-th serving process and its workers."""
    argv = built.spec.processes[server].argv
    mains = [pid for pid, p in built.procs.items() if p.argv == argv]
    return sorted(pid for pid, p in built.procs.items() if pid in mains or p.ppid in mains)


def bound_to(spec: HostSpec, nodes_by_server: dict[int, list[int]]) -> HostSpec:
    """Server ``k`` (its main process and workers) bound to the CPUs and memory of ``nodes_by_server[k]``."""

    def apply(built: Built) -> None:
        for server, nodes in nodes_by_server.items():
            for pid in _server_pids(built, server):
                proc = built.procs[pid]
                proc.cpus, proc.mems = node_cpus(built, nodes), cpulist(nodes)
                write_proc(built.tree, proc)

    shown = "; ".join(f"server {k} on nodes {cpulist(v)}" for k, v in nodes_by_server.items())
    return _with(spec, "bound-" + "-".join(cpulist(v) for v in nodes_by_server.values()), shown, Fault("bound", shown, apply))


def memory_tiers(spec: HostSpec, *, balancing: int = 2, cxl_kib: int | None = None) -> HostSpec:
    """``kernel.numa_balancing=balancing`` and the kernel's memory tiers (6.1+): the DRAM nodes in one tier, and with
    ``cxl_kib`` a CPU-less CXL memory node of that size in a lower one."""
    cpu = spec.cpu
    dram = list(range(cpu.nodes))
    cxl = max([*dram, *(n for n, _ in cpu.extra_nodes)]) + 1
    extra = (*cpu.extra_nodes, (cxl, cxl_kib)) if cxl_kib else cpu.extra_nodes

    def apply(built: Built) -> None:
        built.tree.attrs(f"{TIERS}/memory_tier{DRAM_TIER}", {"nodelist": cpulist(dram) + "\n"})
        if cxl_kib:
            built.tree.attrs(f"{TIERS}/memory_tier{SLOW_TIER}", {"nodelist": f"{cxl}\n"})

    summary = f"kernel.numa_balancing={balancing}" + (f", CXL memory node {cxl} in a lower tier" if cxl_kib else "")
    return _with(
        spec,
        f"tiering-{balancing}" + ("-cxl" if cxl_kib else ""),
        summary,
        Fault("memory-tiers", summary, apply),
        os=replace(spec.os, numa_balancing=balancing),
        cpu=replace(cpu, extra_nodes=extra),
    )
