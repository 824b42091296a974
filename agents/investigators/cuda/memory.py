"""cuda.memory_in_use: GPU memory held by processes that are not the server."""

from __future__ import annotations

from collections.abc import Sequence

from rigaudit.agents.check import Check
from rigaudit.agents.facts.nvml_reads import failure_text, label, labels, nvml_unusable
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.facts.processes import GpuProcess
from rigaudit.agents.investigators.cuda import premises
from rigaudit.agents.investigators.cuda.facts import LITTLE_USED, CudaFacts, gib_text
from rigaudit.agents.investigators.cuda.leftover import LEFTOVER_WHY, NO_PROCESS_WHY, left_over
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix, Severity


def _memory_used(f: CudaFacts) -> dict[int, tuple[int, int]]:
    out = {}
    for index in f.memory.results:
        value = f.memory.value(index)
        if isinstance(value, dict) and isinstance(value.get("used"), int) and isinstance(value.get("total"), int):
            out[index] = (value["used"], value["total"])
    return out


def _proc_text(p: GpuProcess) -> str:
    from rigaudit.tools.redact import redact_text  # imported when a process is quoted, not at every start

    cmd = redact_text(" ".join(p.argv))[:80] if p.argv else "command unknown"
    used = f" {gib_text(p.used_bytes)}" if p.used_bytes is not None else ""
    return f"pid {p.pid} ({cmd}){used} on GPU{p.gpu_index}"


MEMORY_IN_USE_CHECK = Check(
    "cuda.memory_in_use",
    "GPU memory in use",
    reads="NVML memory info and compute processes, `/proc/PID/cmdline`, `/proc/PID/cgroup`, `/proc/PID/status` (PPid)",
    problem="memory held by processes that are not the inference server; a process no server marker names that runs in "
    "a container or holds more than half its GPU's memory may be a server rigaudit does not know: unknown (is it a "
    "server?), never a fix that stops it; the node's fault, seen from a host: a process left over from a job (parent pid "
    "1, no service unit, no server: medium beside a server, high on an idle node) or memory in use that no listed "
    "process holds (a context nothing owns; high on an idle node)",
    fix="stop them",
    kinds=("restart",),
    premises=(premises.SERVERS, premises.NVML),
    layer="workload",
)


def _others_problem(
    f: CudaFacts,
    others: list[GpuProcess],
    refs: tuple[str, ...],
    maybe: list[GpuProcess],
    *,
    severity: Severity = "medium",
    note: str = "",
) -> Finding:
    """Processes that are not the server hold GPU memory (``maybe``: others, shaped like servers, left unjudged)."""
    pids = sorted({p.pid for p in others})
    fix = Fix(
        kind="restart",
        where=layer_where(f.platform, "workload"),
        summary="Stop the processes that hold GPU memory but are not the inference server: pid " + ", ".join(map(str, pids)),
        actions=tuple(
            CommandAction(description=f"stop pid {pid} once you know it is not needed", argv=("kill", str(pid))) for pid in pids
        ),
        risk="medium",
        verify="nvidia-smi --query-compute-apps=pid,used_memory --format=csv lists only the server's processes",
        revert="start the stopped programs again if they were needed",
        persist="disable whatever starts them (their systemd unit, cron job or container)",
    )
    unjudged = f"; not judged, shaped like a server: {'; '.join(_proc_text(p) for p in maybe[:4])}" if maybe else ""
    return MEMORY_IN_USE_CHECK.problem_at(
        severity,
        "; ".join(_proc_text(p) for p in others) + (f" ({note})" if note else "") + unjudged,
        "only the inference server holds GPU memory",
        "Memory held by other processes is memory the server cannot use for the KV cache: its start-up memory "
        "fraction check fails or it allocates fewer KV blocks (less concurrency, more preemption). Leftover "
        "processes from a crashed server, notebooks and monitoring tools that create a CUDA context are the usual "
        "culprits.",
        fix,
        subjects=labels(f.inventory, sorted({p.gpu_index for p in others})),
        evidence=refs,
    )


MAYBE_SERVER_SHARE = 0.5
"""A process holding more than this share of its GPU's memory is sized like a server (its KV cache), not a tool."""


def _maybe_server(p: GpuProcess, used: dict[int, tuple[int, int]]) -> str | None:
    """Why ``p``, which no server marker names, may still be an inference server: it runs in a container, or it holds
    more than half of its GPU's memory; None when neither."""
    reasons = [f"runs in {p.container or 'another mount namespace'}"] if p.contained else []
    total = used.get(p.gpu_index, (0, 0))[1]
    if p.used_bytes is not None and total and p.used_bytes > MAYBE_SERVER_SHARE * total:
        reasons.append(f"holds {100 * p.used_bytes // total}% of GPU{p.gpu_index}'s memory")
    return " and ".join(reasons) or None


def _leftover_problem(
    f: CudaFacts, left: list[GpuProcess], others: list[GpuProcess], used: dict[int, tuple[int, int]], refs: tuple[str, ...]
) -> Finding:
    """Processes left over from a job hold GPU memory: the node's (high on an idle node: no job can have it)."""
    rest = [p for p in others if p not in left]
    maybe = [p for p in rest if not f.scan.servers or _maybe_server(p, used)]
    shown = left + [p for p in rest if p not in maybe]
    finding = _others_problem(
        f, shown, refs, maybe, severity="medium" if f.scan.servers else "high", note=f"{len(left)} {LEFTOVER_WHY}"
    )
    return finding.model_copy(update={"layer": "node"})


MAYBE_TELLS = (
    "its container's image (docker inspect --format '{{.Config.Image}}' of the container in its /proc/PID/cgroup), the "
    "port it listens on (ss -ltnp) or the unit or script that starts it would tell"
)


def _maybe_servers(f: CudaFacts, maybe: dict[int, str], procs: list[GpuProcess], refs: tuple[str, ...]) -> Finding:
    """Unknown: processes that may be servers rigaudit does not know (no stop fix for a production server)."""
    shown = "; ".join(f"{_proc_text(p)} ({maybe[p.pid]})" for p in procs[:4])
    pids = sorted(maybe)[:8]
    ask = f"is pid {pids[0]} a server?" if len(pids) == 1 else f"are pids {', '.join(map(str, pids))} servers?"
    return MEMORY_IN_USE_CHECK.unknown(
        f"{ask} {shown}: no inference server rigaudit knows, yet shaped like one; if it is a server, "
        f"that memory is its own, if not it holds memory the server cannot use for its KV cache: {MAYBE_TELLS}",
        evidence=refs,
    )


def _held_text(procs: list[GpuProcess]) -> str:
    return f"{len(procs)} processes hold {gib_text(sum(p.used_bytes or 0 for p in procs))} on the GPUs"


def _orphan_memory(f: CudaFacts, busy: dict[int, int], refs: tuple[str, ...]) -> Finding:
    """Seen from the host, memory in use with no compute process listed: a context nothing owns, the node's fault."""
    gpus = sorted(busy)
    fix = Fix(
        kind="restart",
        where=layer_where(f.platform, "gpu_driver"),
        summary="Reset the GPUs whose memory no process holds: " + ", ".join(label(f.inventory, i) for i in gpus),
        actions=tuple(
            CommandAction(description=f"reset GPU {i} once nothing uses it", argv=("nvidia-smi", "-r", "-i", str(i)))
            for i in gpus
        ),
        risk="medium",
        verify="nvidia-smi --query-gpu=index,memory.used --format=csv shows only the driver's reservation",
        revert="none needed",
        persist="find what leaves contexts behind (a job killed mid-allocation, a hung process); the epilog gate catches it",
    )
    finding = MEMORY_IN_USE_CHECK.problem_at(
        "medium" if f.scan.servers else "high",
        ", ".join(f"{label(f.inventory, i)} {gib_text(u)}" for i, u in busy.items()) + f" ({NO_PROCESS_WHY})",
        "no memory held beyond the driver's reservation with no process on the GPU",
        "NVML on the host lists every process that holds a context, those of containers included; memory in use "
        "with none listed belongs to nothing that can free it, and no job can have it until the GPU is reset.",
        fix,
        subjects=labels(f.inventory, gpus),
        evidence=refs,
    )
    return finding.model_copy(update={"layer": "node"})


def _no_process_finding(f: CudaFacts, used: dict[int, tuple[int, int]], refs: tuple[str, ...]) -> Finding:
    """No compute process listed: memory beyond the driver's reservation is held out of sight, else the GPUs idle."""
    busy = {i: u for i, (u, _) in used.items() if u >= LITTLE_USED}
    mig = {s.gpu.index for s in f.mig_states if s.enabled}  # its processes are listed on its instances, not here
    if busy and f.scan.nvml_listed and not f.platform.in_container and not mig & set(busy):
        return _orphan_memory(f, busy, refs)
    if busy and f.scan.nvml_listed:
        return MEMORY_IN_USE_CHECK.unknown(
            "memory in use with no compute process visible to NVML: "
            + ", ".join(f"{label(f.inventory, i)} {gib_text(u)}" for i, u in busy.items())
            + " (held from another PID namespace, e.g. a container, or by a process NVML cannot list)",
            evidence=refs,
        )
    if busy:
        return MEMORY_IN_USE_CHECK.unknown("memory in use and the compute process list is unavailable", evidence=refs)
    lo, hi = gib_text(min(u for u, _ in used.values())), gib_text(max(u for u, _ in used.values()))
    span = lo if lo == hi else f"{lo}–{hi}"
    total = max(t for _, t in used.values())
    return MEMORY_IN_USE_CHECK.ok(
        f"no compute process; {span} used of {gib_text(total)} per GPU (the driver's reservation)",
        expected="no memory held by processes other than the server",
        explanation="Idle GPUs: nothing holds memory the server could use for its KV cache.",
        evidence=refs,
    )


def _unified(f: CudaFacts) -> bool:
    """NVML sizes no framebuffer on any GPU (NOT_SUPPORTED): a GPU that shares the system's memory (GB10), whose
    memory held is told by the compute processes alone."""
    failed = f.memory.failed()
    return bool(failed) and len(failed) == len(f.memory.results) and set(failed.values()) == {"NOT_SUPPORTED"}


def _mps_server_for_servers(f: CudaFacts, p: GpuProcess) -> bool:
    """``p`` is the MPS server that holds the GPUs for the inference servers (their context, not another program)."""
    mps = f.processes.mps
    return p.pid in mps.servers and any(q.server and mps.client(q.pid) for q in f.scan.gpu_processes)


SHARED_TELLS = (
    "on the node, nvidia-smi lists them; its labels nvidia.com/gpu.replicas and nvidia.com/gpu.sharing-strategy (GPU "
    "feature discovery) tell whether the device plugin shares the GPU on purpose (time-slicing, MPS)"
)


def _unlisted(f: CudaFacts, used: dict[int, tuple[int, int]], procs: Sequence[GpuProcess]) -> dict[int, int]:
    """In a container: GPU index -> memory used beyond what the processes NVML lists here hold (other PID namespaces:
    another pod's on a shared GPU, or the node's); empty on a host, or where a process's memory is unread."""
    if not f.platform.in_container or any(p.used_bytes is None for p in procs):
        return {}
    listed: dict[int, int] = {}
    for p in procs:
        listed[p.gpu_index] = listed.get(p.gpu_index, 0) + (p.used_bytes or 0)
    gaps = {i: u - listed.get(i, 0) for i, (u, _) in used.items()}
    return {i: gap for i, gap in sorted(gaps.items()) if gap >= LITTLE_USED}


def judge_memory_in_use(f: CudaFacts) -> Finding:
    if why := nvml_unusable(f.inventory):
        return MEMORY_IN_USE_CHECK.unknown(why)
    used = _memory_used(f)
    proc_refs = tuple(f"nvml:nvmlDeviceGetComputeRunningProcesses({i})" for i in f.memory.results)
    refs = f.memory.refs + proc_refs
    unified = not used and _unified(f) and f.scan.nvml_listed
    if not used and not unified:
        return MEMORY_IN_USE_CHECK.unknown(failure_text(f.memory, f.inventory), evidence=refs)
    procs = f.scan.gpu_processes
    others = [p for p in procs if p.argv is not None and not p.server and not _mps_server_for_servers(f, p)]
    unidentified = [p for p in procs if p.argv is None]
    if left := [p for p in others if left_over(p, f.processes.ppids.get(p.pid), f.platform)]:
        return _leftover_problem(f, left, others, used, refs)
    if others and not f.scan.servers:  # none known: one of them may be the server (a custom one, or one not listed)
        return MEMORY_IN_USE_CHECK.unknown(
            f"{_held_text(others)} and none is an inference server rigaudit knows "
            f"({'; '.join(_proc_text(p) for p in others[:4])}): if one is your server, that memory is its own; any other "
            "holds memory the server cannot use for its KV cache",
            evidence=refs,
        )
    maybe = {p.pid: why for p in others if (why := _maybe_server(p, used))}
    if clear := [p for p in others if p.pid not in maybe]:
        return _others_problem(f, clear, refs, [p for p in others if p.pid in maybe])
    if others:
        return _maybe_servers(f, maybe, others, refs)
    if unidentified:
        return MEMORY_IN_USE_CHECK.unknown(
            f"{_held_text(unidentified)} but their command lines could not be read "
            f"(pids {', '.join(str(p.pid) for p in unidentified[:8])}: another PID namespace, or gone)",
            evidence=refs,
        )
    if procs and (gaps := _unlisted(f, used, procs)):
        return MEMORY_IN_USE_CHECK.unknown(
            "; ".join(
                f"{label(f.inventory, i)}: {gib_text(used[i][0])} used, {gib_text(gap)} of it by processes NVML does "
                "not list in this container"
                for i, gap in gaps.items()
            )
            + f" (another pod's on a GPU shared by the device plugin, or a process of the node): {SHARED_TELLS}",
            evidence=refs,
        )
    if procs:
        total = sum(p.used_bytes or 0 for p in procs)
        mps = " (with the MPS server that holds the GPUs for them)" if any(_mps_server_for_servers(f, p) for p in procs) else ""
        shared = "; NVML sizes no framebuffer (the GPU shares the system's memory)" if unified else ""
        return MEMORY_IN_USE_CHECK.ok(
            f"GPU memory held by the inference server only{mps}: {len(procs)} processes, {gib_text(total)} in all{shared}",
            expected="only the inference server holds GPU memory",
            evidence=refs,
        )
    if unified:
        return MEMORY_IN_USE_CHECK.ok(
            "no compute process on GPUs that share the system's memory (NVML sizes no framebuffer: NOT_SUPPORTED)",
            expected="no memory held by processes other than the server",
            evidence=refs,
        )
    return _no_process_finding(f, used, refs)
