"""numa.gpu_affinity's second half: is each server bound to its GPUs' NUMA nodes, to none, or to the other ones?

A server's near nodes are the nodes of every GPU it holds (a tensor-parallel server over both sockets has both).
It is far when the CPUs it may run on, or the memory nodes its cpuset allows, include none of them: every
host-device copy, pinned buffer and kernel launch then crosses the socket interconnect. A server allowed every CPU
is unbound (the scheduler decides); one allowed part of them, its GPUs' nodes among them, is bound near.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from rigaudit.agents.check import Check
from rigaudit.agents.facts.cpulist import cpu_ranges, parse_cpulist
from rigaudit.agents.facts.platform import fix_where
from rigaudit.agents.investigators.numa.binding import ServerBinding
from rigaudit.agents.investigators.numa.facts import NumaFacts
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import file_ref
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix

Placement = Literal["far", "near", "unbound", "unknown"]


class Judged(Record):
    binding: ServerBinding
    placement: Placement
    near: tuple[int, ...]
    """The NUMA nodes of its GPUs."""
    cpu_nodes: tuple[int, ...]
    """The nodes whose CPUs it may run on."""
    why: str


def node_text(nodes: Sequence[int]) -> str:
    """[0, 1, 2, 3] -> ``nodes 0-3``; [3] -> ``node 3``."""
    ranges = cpu_ranges(nodes).removeprefix("cpu")
    return f"node{'s' if len(set(nodes)) > 1 else ''} {ranges}"


def gpu_text(indices: Sequence[int]) -> str:
    """[0, 1, 2, 3] -> ``GPU0-3``; [0, 2] -> ``GPU0,2``."""
    return "GPU" + cpu_ranges(indices).removeprefix("cpu")


def _node_cpus(facts: NumaFacts) -> dict[int, set[int]]:
    return {n: set(parse_cpulist(t) or ()) for n, t in facts.node_cpus.items() if t}


def classify(facts: NumaFacts, b: ServerBinding) -> Judged:
    """Where one server runs and allocates against its GPUs' nodes."""
    by_index = {g.index: g for g in facts.gpus if g.index is not None}
    near = tuple(sorted({n for i in b.gpus if (g := by_index.get(i)) and (n := g.numa_node) is not None and n >= 0}))
    node_cpus = _node_cpus(facts)
    cpus = set(b.cpus or ())
    cpu_nodes = tuple(sorted(n for n, c in node_cpus.items() if c & cpus))
    every = sorted(n for n, c in node_cpus.items() if c)

    def judged(placement: Placement, why: str) -> Judged:
        return Judged(b, placement, near, cpu_nodes, why)

    if b.cpus is None or b.mems is None:
        return judged("unknown", f"its /proc/{b.pids[0]}/status (Cpus_allowed_list, Mems_allowed_list) was not read")
    if not node_cpus:
        return judged("unknown", "the NUMA nodes' CPU lists were not read")
    unbound = list(cpu_nodes) == every and cpus >= set().union(*node_cpus.values())
    if not b.gpus:
        if unbound:
            return judged("unbound", "may run on every CPU (the GPUs it holds were not read)")
        return judged("unknown", "NVML lists none of its processes and its CUDA_VISIBLE_DEVICES does not name its GPUs")
    if not near:
        return judged("unknown", f"{gpu_text(b.gpus)} report no NUMA node")
    far_cpus = not set(cpu_nodes) & set(near)
    far_mems = not set(b.mems) & set(near)
    if far_cpus or far_mems:
        parts = []
        if far_cpus:
            parts.append(f"CPUs of {node_text(cpu_nodes)} ({cpu_ranges(cpus).removeprefix('cpu')})")
        if far_mems:
            parts.append(f"memory of {node_text(b.mems)}")
        return judged("far", " and ".join(parts))
    if unbound:
        return judged("unbound", "may run on every CPU")
    return judged("near", f"bound to CPUs of {node_text(cpu_nodes)}, memory of {node_text(b.mems)}")


def _shown(j: Judged) -> str:
    b = j.binding
    gpus = f"{gpu_text(b.gpus)} ({node_text(j.near)})" if b.gpus and j.near else (gpu_text(b.gpus) if b.gpus else "its GPUs")
    return f"{b.label} drives {gpus}: {j.why}"


def _fix(facts: NumaFacts, far: Sequence[Judged]) -> Fix:
    node_cpus = _node_cpus(facts)
    units = [b.unit for b in facts.bindings if b.unit]
    actions: list[CommandAction] = []
    for j in far:
        b = j.binding
        nodes = cpu_ranges(j.near).removeprefix("cpu")
        cpus = cpu_ranges(set().union(*(node_cpus.get(n, set()) for n in j.near))).removeprefix("cpu")
        if b.container:
            actions.append(
                CommandAction(
                    description=f"{b.label}: give its container the CPUs and memory of its GPUs' {node_text(j.near)} "
                    f"(docker run/update --cpuset-cpus={cpus} --cpuset-mems={nodes}; in Kubernetes, the kubelet's "
                    "CPU manager static policy with the topology manager's single-numa-node or restricted policy)"
                )
            )
        elif (unit := b.unit) is not None and units.count(unit) == 1:
            actions.append(
                CommandAction(
                    description=f"{b.label}: in a drop-in of {unit} (systemctl edit {unit}) set [Service] "
                    f"CPUAffinity={cpus} NUMAPolicy=bind NUMAMask={nodes}, remove an AllowedCPUs=/AllowedMemoryNodes= "
                    f"naming other nodes, then systemctl restart {unit}"
                )
            )
        else:
            actions.append(
                CommandAction(
                    description=f"{b.label}: restart it bound to its GPUs' {node_text(j.near)}"
                    + (f" (in {b.unit}'s ExecStart=, which starts several servers)" if b.unit else ""),
                    argv=("numactl", f"--cpunodebind={nodes}", f"--membind={nodes}", "<server command>"),
                )
            )
    contained = any(j.binding.container for j in far)
    return Fix(
        kind="restart",
        where="container_config" if contained else fix_where(facts.platform, "workload"),
        summary="Bind each server to its GPUs' NUMA nodes (CPUs and memory), then restart it",
        actions=tuple(actions),
        risk="low",
        verify="grep -E 'Cpus_allowed_list|Mems_allowed_list' /proc/PID/status of each server's workers names the CPUs "
        "and nodes of its GPUs (nvidia-smi topo -m: NUMA Affinity); numactl --show inside it",
        revert="remove the binding and restart the server",
        persist="the unit's drop-in, the container's options or the launch script persist",
    )


def judge_binding(check: Check, facts: NumaFacts, placement: str, refs: tuple[str, ...]) -> Finding:
    """``check``'s verdict on a host whose GPUs know their nodes: each server against its GPUs' nodes."""
    judged = [classify(facts, b) for b in facts.bindings]
    refs = refs + tuple(file_ref(f"/proc/{p}/status") for j in judged for p in j.binding.pids)
    located = (
        "Each GPU is reported on the NUMA node of the CPU socket / root complex it hangs off; each server's workers "
        "(CPU threads and host memory) belong on its GPUs' nodes to keep host-device copies and launches local."
    )
    far = [j for j in judged if j.placement == "far"]
    if far:
        shown = "; ".join(_shown(j) for j in far)
        explanation = (
            f"{located} Here {len(far)} server{'s are' if len(far) > 1 else ' is'} bound to other nodes than "
            f"{'their' if len(far) > 1 else 'its'} GPUs': {shown}. Every host-device copy, pinned (cudaHostAlloc) buffer and "
            "kernel launch of those workers crosses the socket interconnect (xGMI, UPI), and memory on the far node "
            "is reached through it too: lower host-device bandwidth, higher launch latency and time to first token. "
            "NVIDIA's tooling binds each GPU's process to the GPU's NUMA Affinity (nvidia-smi topo -m). A numactl "
            "--membind policy does not show in Mems_allowed_list; the CPUs alone already place the workers far."
        )
        return check.problem_at(
            "medium",
            shown,
            "each server on its GPUs' NUMA nodes (or unbound)",
            explanation,
            _fix(facts, far),
            subjects=tuple(j.binding.label for j in far),
            evidence=refs,
        )
    unknown = [j for j in judged if j.placement == "unknown"]
    if unknown and len(unknown) == len(judged):
        why = f"{placement}; the servers' binding was not read: {'; '.join(_shown(j) for j in unknown)}"
        return check.unknown(why, evidence=refs)
    lines = [_shown(j) for j in judged]
    none = f" No inference server holds a GPU (searched {facts.scan.searched}), so no binding is judged."
    said = f" Servers: {'; '.join(lines)}." if lines else none
    if any(j.placement == "unbound" for j in judged):
        said += (
            " An unbound server lets the scheduler place its threads and memory on any node; binding it to its GPUs' "
            "nodes (numactl --cpunodebind=N --membind=N) keeps them local."
        )
    return check.ok(placement, explanation=located + said, subjects=(g.label for g in facts.gpus), evidence=refs)
