"""cuda_memory: compute mode, MIG, memory held on the GPUs, ECC mode (all from NVML)."""

from __future__ import annotations

from dataclasses import dataclass

from rigaudit.agents.facts.gpus import GpuInventory, collect_gpus
from rigaudit.agents.facts.nvml_reads import GpuReads, failure_text, label, labels, nvml_unusable, read_per_gpu
from rigaudit.agents.facts.platform import Platform, detect_platform
from rigaudit.agents.facts.processes import GpuProcess, ServerScan, find_servers
from rigaudit.agents.findings import not_applicable, ok, problem, unknown
from rigaudit.agents.investigator import CheckDoc, Investigator
from rigaudit.agents.investigators._cuda_processes import ProcessFacts, collect_processes, judge_foreign_processes, judge_mps
from rigaudit.tools.model.finding import Area, CommandAction, Finding, Fix, Where
from rigaudit.tools.probe import Probe
from rigaudit.tools.redact import redact_text

AREA: Area = "cuda_memory"
CHECKS = ("cuda.compute_mode", "cuda.mig", "cuda.memory_in_use", "cuda.ecc_mode", "cuda.foreign_processes", "cuda.mps")
COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}
LITTLE_USED = 2 * 2**30
"""Memory below this on a GPU with no process is the driver's own reservation."""


@dataclass(frozen=True)
class CudaMemoryFacts:
    inventory: GpuInventory
    platform: Platform
    compute_mode: GpuReads
    mig: GpuReads
    memory: GpuReads
    ecc: GpuReads
    scan: ServerScan
    processes: ProcessFacts


async def collect(probe: Probe) -> CudaMemoryFacts:
    inventory = await collect_gpus(probe)
    platform = await detect_platform(probe)
    compute_mode, mig, memory, ecc = await probe.gather(
        *[
            lambda fn=fn: read_per_gpu(probe, inventory, fn)
            for fn in ("nvmlDeviceGetComputeMode", "nvmlDeviceGetMigMode", "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetEccMode")
        ]
    )
    scan = await find_servers(probe)
    processes = await collect_processes(probe, inventory, platform, scan)
    return CudaMemoryFacts(inventory, platform, compute_mode, mig, memory, ecc, scan, processes)


def _gib(value: float) -> str:
    return f"{value / 2**30:.1f} GiB"


def _driver_where(platform: Platform) -> Where:
    """GPU driver settings belong to whoever runs the driver: the host of a container."""
    return "hypervisor" if platform.in_container else "host"


def _pairs(reads: GpuReads) -> dict[int, tuple[int, int]]:
    out = {}
    for index in reads.results:
        value = reads.value(index)
        if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
            out[index] = (value[0], value[1])
    return out


def _mode_pairs(inventory: GpuInventory, modes: dict[int, tuple[int, int]], indices: list[int]) -> str:
    def word(v: int) -> str:
        return "on" if v else "off"

    return "; ".join(f"{label(inventory, i)}: current {word(modes[i][0])}, pending {word(modes[i][1])}" for i in indices)


def _all_unsupported(reads: GpuReads) -> bool:
    failed = reads.failed()
    return bool(failed) and len(failed) == len(reads.results) and set(failed.values()) == {"NOT_SUPPORTED"}


def _modes_or_finding(
    f: CudaMemoryFacts, reads: GpuReads, check: str, title: str, feature: str
) -> dict[int, tuple[int, int]] | Finding:
    """(current, pending) per GPU of a mode (MIG, ECC), or the finding when it cannot be judged."""
    if why := nvml_unusable(f.inventory):
        return unknown(check, AREA, title, why)
    if _all_unsupported(reads):
        return not_applicable(check, AREA, title, f"these GPUs do not support {feature} (NOT_SUPPORTED)", evidence=reads.refs)
    modes = _pairs(reads)
    if not modes:
        return unknown(check, AREA, title, failure_text(reads, f.inventory), evidence=reads.refs)
    return modes


def judge_compute_mode(f: CudaMemoryFacts) -> Finding:
    check, title = "cuda.compute_mode", "CUDA compute mode"
    if why := nvml_unusable(f.inventory):
        return unknown(check, AREA, title, why)
    modes = {i: v for i in f.compute_mode.results if isinstance(v := f.compute_mode.value(i), int)}
    if not modes:
        return unknown(check, AREA, title, failure_text(f.compute_mode, f.inventory), evidence=f.compute_mode.refs)
    bad = {i: m for i, m in modes.items() if m in (1, 2, 3)}
    partial = f" ({failure_text(f.compute_mode, f.inventory)})" if f.compute_mode.failed() else ""
    if not bad:
        return ok(
            check,
            AREA,
            title,
            f"Default on {len(modes)}/{len(f.compute_mode.results)} GPUs{partial}",
            expected="Default (0)",
            evidence=f.compute_mode.refs,
        )
    prohibited = [i for i, m in bad.items() if m == 2]
    observed = "; ".join(f"{label(f.inventory, i)}: {COMPUTE_MODES[m]}" for i, m in bad.items())
    actions = tuple(
        CommandAction(description=f"set GPU{i} to the Default compute mode", argv=("nvidia-smi", "-i", str(i), "-c", "0"))
        for i in bad
    )
    fix = Fix(
        kind="runtime",
        where=_driver_where(f.platform),
        summary="Set the compute mode back to Default (nvidia-smi -c 0) on " + ", ".join(f"GPU{i}" for i in bad),
        actions=actions,
        risk="low",
        verify="nvidia-smi --query-gpu=index,compute_mode --format=csv shows Default on every GPU",
        revert="; ".join(f"nvidia-smi -i {i} -c {m}" for i, m in bad.items()),
        persist="compute mode returns to Default whenever the driver reloads: remove whatever sets it at boot "
        "(a unit or script running `nvidia-smi -c`)",
    )
    if prohibited:
        return problem(
            check,
            AREA,
            title,
            "high",
            observed,
            "Default (0) on every GPU",
            "A GPU in Prohibited compute mode accepts no CUDA context at all: a tensor-parallel server that needs it "
            'fails at start-up ("all CUDA-capable devices are busy or unavailable") or silently runs on fewer GPUs. '
            "rigaudit never changes GPU settings itself; the command below is for the operator.",
            fix,
            subjects=labels(f.inventory, list(bad)),
            evidence=f.compute_mode.refs,
        )
    return problem(
        check,
        AREA,
        title,
        "low",
        observed,
        "Default (0) on every GPU",
        "Exclusive compute mode allows one CUDA context per GPU. One TP worker per GPU still works, but any second "
        "context on that GPU (the API process touching CUDA, a health check, a profiler, a second server) fails with "
        '"busy or unavailable". Keep it only if a scheduler relies on it.',
        fix,
        subjects=labels(f.inventory, list(bad)),
        evidence=f.compute_mode.refs,
    )


def judge_mig(f: CudaMemoryFacts) -> Finding:
    check, title = "cuda.mig", "MIG mode"
    modes = _modes_or_finding(f, f.mig, check, title, "MIG")
    if isinstance(modes, Finding):
        return modes
    on = [i for i, (current, _) in modes.items() if current == 1]
    pending = [i for i, (current, nxt) in modes.items() if current != nxt]
    if not on and not pending:
        return ok(
            check,
            AREA,
            title,
            f"MIG off (current = pending) on {len(modes)}/{len(f.mig.results)} GPUs",
            expected="MIG off on every GPU used whole",
            evidence=f.mig.refs,
        )
    targets = sorted(set(on) | set(pending))
    subjects = labels(f.inventory, targets)
    observed = _mode_pairs(f.inventory, modes, targets)
    fix = Fix(
        kind="reboot",
        where=_driver_where(f.platform),
        summary="Turn MIG off and reset the GPUs (or reboot) so current and pending modes agree",
        actions=(
            *(
                CommandAction(description=f"disable MIG on GPU{i}", argv=("nvidia-smi", "-i", str(i), "-mig", "0"))
                for i in targets
            ),
            CommandAction(description="with the server stopped, reset those GPUs (nvidia-smi -r) or reboot the host"),
        ),
        risk="medium",
        verify="nvidia-smi --query-gpu=index,mig.mode.current,mig.mode.pending --format=csv shows Disabled, Disabled",
        revert="nvidia-smi -i N -mig 1, then reset the GPU",
        persist="MIG mode is stored on the GPU and survives reboots",
    )
    if on:
        return problem(
            check,
            AREA,
            title,
            "high",
            observed,
            "MIG off on GPUs used whole for tensor parallelism",
            "With MIG on, CUDA sees MIG slices (a fraction of the SMs and memory each), not whole GPUs, and there is no "
            "peer-to-peer between slices: a TP-8 server either fails to start or runs on slices with NCCL going through "
            "host memory. If slicing is intended (many small models), ignore this.",
            fix,
            subjects=subjects,
            evidence=f.mig.refs,
        )
    return problem(
        check,
        AREA,
        title,
        "medium",
        observed,
        "current MIG mode = pending MIG mode",
        "A MIG mode change is pending: it takes effect at the next GPU reset or reboot, so the GPU will change under the "
        "server at an unplanned moment. Finish it (reset) or undo it now.",
        fix,
        subjects=subjects,
        evidence=f.mig.refs,
    )


def _memory_used(f: CudaMemoryFacts) -> dict[int, tuple[int, int]]:
    out = {}
    for index in f.memory.results:
        value = f.memory.value(index)
        if isinstance(value, dict) and isinstance(value.get("used"), int) and isinstance(value.get("total"), int):
            out[index] = (value["used"], value["total"])
    return out


def _proc_text(p: GpuProcess) -> str:
    cmd = redact_text(" ".join(p.argv))[:80] if p.argv else "command unknown"
    used = f" {_gib(p.used_bytes)}" if p.used_bytes is not None else ""
    return f"pid {p.pid} ({cmd}){used} on GPU{p.gpu_index}"


def judge_memory_in_use(f: CudaMemoryFacts) -> Finding:
    check, title = "cuda.memory_in_use", "GPU memory in use"
    if why := nvml_unusable(f.inventory):
        return unknown(check, AREA, title, why)
    used = _memory_used(f)
    proc_refs = tuple(f"nvml:nvmlDeviceGetComputeRunningProcesses({i})" for i in f.memory.results)
    refs = f.memory.refs + proc_refs
    if not used:
        return unknown(check, AREA, title, failure_text(f.memory, f.inventory), evidence=refs)
    procs = f.scan.gpu_processes
    others = [p for p in procs if p.argv is not None and not p.server]
    unidentified = [p for p in procs if p.argv is None]
    if others:
        pids = sorted({p.pid for p in others})
        fix = Fix(
            kind="restart",
            where="container" if f.platform.in_container else "host",
            summary="Stop the processes that hold GPU memory but are not the inference server: pid " + ", ".join(map(str, pids)),
            actions=tuple(
                CommandAction(description=f"stop pid {pid} once you know it is not needed", argv=("kill", str(pid)))
                for pid in pids
            ),
            risk="medium",
            verify="nvidia-smi --query-compute-apps=pid,used_memory --format=csv lists only the server's processes",
            revert="start the stopped programs again if they were needed",
            persist="disable whatever starts them (their systemd unit, cron job or container)",
        )
        return problem(
            check,
            AREA,
            title,
            "medium",
            "; ".join(_proc_text(p) for p in others),
            "only the inference server holds GPU memory",
            "Memory held by other processes is memory the server cannot use for the KV cache: its start-up memory "
            "fraction check fails or it allocates fewer KV blocks (less concurrency, more preemption). Leftover "
            "processes from a crashed server, notebooks and monitoring tools that create a CUDA context are the usual "
            "culprits.",
            fix,
            subjects=labels(f.inventory, sorted({p.gpu_index for p in others})),
            evidence=refs,
        )
    if unidentified:
        held = sum(p.used_bytes or 0 for p in unidentified)
        return unknown(
            check,
            AREA,
            title,
            f"{len(unidentified)} processes hold {_gib(held)} on the GPUs but their command lines could not be read "
            f"(pids {', '.join(str(p.pid) for p in unidentified[:8])}: another PID namespace, or gone)",
            evidence=refs,
        )
    if procs:
        total = sum(p.used_bytes or 0 for p in procs)
        return ok(
            check,
            AREA,
            title,
            f"GPU memory held by the inference server only: {len(procs)} processes, {_gib(total)} in all",
            expected="only the inference server holds GPU memory",
            evidence=refs,
        )
    busy = {i: u for i, (u, _) in used.items() if u >= LITTLE_USED}
    if busy and f.scan.nvml_listed:
        return unknown(
            check,
            AREA,
            title,
            "memory in use with no compute process visible to NVML: "
            + ", ".join(f"{label(f.inventory, i)} {_gib(u)}" for i, u in busy.items())
            + " (held from another PID namespace, e.g. a container, or by a process NVML cannot list)",
            evidence=refs,
        )
    if busy:
        return unknown(check, AREA, title, "memory in use and the compute process list is unavailable", evidence=refs)
    lo, hi = _gib(min(u for u, _ in used.values())), _gib(max(u for u, _ in used.values()))
    span = lo if lo == hi else f"{lo}–{hi}"
    total = max(t for _, t in used.values())
    return ok(
        check,
        AREA,
        title,
        f"no compute process; {span} used of {_gib(total)} per GPU (the driver's reservation)",
        expected="no memory held by processes other than the server",
        explanation="Idle GPUs: nothing holds memory the server could use for its KV cache.",
        evidence=refs,
    )


def judge_ecc_mode(f: CudaMemoryFacts) -> Finding:
    check, title = "cuda.ecc_mode", "ECC mode"
    modes = _modes_or_finding(f, f.ecc, check, title, "ECC")
    if isinstance(modes, Finding):
        return modes
    pending = [i for i, (cur, nxt) in modes.items() if cur != nxt]
    if pending:
        observed = _mode_pairs(f.inventory, modes, pending)
        fix = Fix(
            kind="reboot",
            where=_driver_where(f.platform),
            summary="Reboot (or reset the GPUs with the server stopped) so the pending ECC mode takes effect",
            actions=(CommandAction(description="stop the server, then reboot the host (or nvidia-smi -r -i N per GPU)"),),
            risk="medium",
            verify="nvidia-smi --query-gpu=index,ecc.mode.current,ecc.mode.pending --format=csv: current = pending",
            revert="nvidia-smi -i N -e <previous 0|1>, then reboot",
            persist="ECC mode is stored on the GPU",
        )
        return problem(
            check,
            AREA,
            title,
            "medium",
            observed,
            "current ECC mode = pending ECC mode",
            "An ECC change is waiting for a reset: until then the GPU runs in the old mode, and at the next reboot its "
            "usable memory and behaviour change under the server (ECC costs a few percent of capacity and bandwidth on "
            "some memories). Mixed modes inside one TP group also make the GPUs' free memory differ.",
            fix,
            subjects=labels(f.inventory, pending),
            evidence=f.ecc.refs,
        )
    states = {cur for cur, _ in modes.values()}
    if len(states) > 1:
        off = [i for i, (cur, _) in modes.items() if cur == 0]
        fix = Fix(
            kind="reboot",
            where=_driver_where(f.platform),
            summary="Use one ECC mode on all GPUs of the TP group",
            actions=tuple(
                CommandAction(description=f"enable ECC on GPU{i}", argv=("nvidia-smi", "-i", str(i), "-e", "1")) for i in off
            ),
            verify="nvidia-smi --query-gpu=index,ecc.mode.current --format=csv shows one mode after the reboot",
            revert="nvidia-smi -i N -e 0, then reboot",
            persist="ECC mode is stored on the GPU",
        )
        return problem(
            check,
            AREA,
            title,
            "low",
            f"ECC off on {', '.join(labels(f.inventory, off))}; on elsewhere",
            "one ECC mode on every GPU",
            "GPUs of one tensor-parallel group with different ECC modes have different usable memory; the server sizes "
            "its KV cache by the smallest.",
            fix,
            subjects=labels(f.inventory, off),
            evidence=f.ecc.refs,
        )
    mode = "on" if states == {1} else "off"
    return ok(
        check,
        AREA,
        title,
        f"ECC {mode} (current = pending) on {len(modes)}/{len(f.ecc.results)} GPUs",
        expected="current = pending",
        evidence=f.ecc.refs,
    )


def judge(f: CudaMemoryFacts) -> list[Finding]:
    return [
        judge_compute_mode(f),
        judge_mig(f),
        judge_memory_in_use(f),
        judge_ecc_mode(f),
        judge_foreign_processes(f.processes),
        judge_mps(f.processes),
    ]


DOCS = {
    "cuda.compute_mode": CheckDoc(
        "CUDA compute mode",
        "NVML compute mode",
        "Prohibited (high), Exclusive (low)",
        "`nvidia-smi -c 0` (by a person)",
        ("runtime",),
    ),
    "cuda.mig": CheckDoc(
        "MIG mode",
        "NVML MIG mode (current, pending)",
        "MIG on where whole GPUs are used; current ≠ pending",
        "`nvidia-smi -mig 0`, GPU reset or reboot",
        ("reboot",),
    ),
    "cuda.memory_in_use": CheckDoc(
        "GPU memory in use",
        "NVML memory info and compute processes, `/proc/PID/cmdline`",
        "memory held by processes that are not the inference server",
        "stop them",
        ("restart",),
    ),
    "cuda.ecc_mode": CheckDoc(
        "ECC mode", "NVML ECC mode (current, pending)", "current ≠ pending", "reboot or GPU reset", ("reboot",)
    ),
    "cuda.foreign_processes": CheckDoc(
        "Other users' processes on the serving GPUs",
        "NVML compute processes per GPU, `/proc/PID/status` Uid of each and of the server",
        "a process of another user than the server's on a GPU the server uses (high when it is another server)",
        "stop them; reserve the GPUs (scheduler, device permissions)",
        ("restart",),
    ),
    "cuda.mps": CheckDoc(
        "CUDA MPS daemon",
        "`/proc/*/comm` (nvidia-cuda-mps-*), `/tmp/nvidia-mps`, the server's CUDA_MPS_* environment",
        "an MPS daemon the server is not configured for (low), or MPS thread/memory limits on the server (medium)",
        "stop the MPS control daemon; unset CUDA_MPS_* limits",
        ("restart",),
    ),
}


INVESTIGATOR = Investigator(
    area=AREA, title="CUDA compute mode, MIG, memory and ECC mode", checks=CHECKS, collect=collect, judge=judge, docs=DOCS
)
