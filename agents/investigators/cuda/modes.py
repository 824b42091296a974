"""cuda.compute_mode, cuda.mig, cuda.ecc_mode: the NVML modes a GPU runs in, current and pending."""

from __future__ import annotations

import re

from rigaudit.agents.check import Check
from rigaudit.agents.facts.deliberate import MIG_IN_USE, MPS_SHARING, TIME_SLICING
from rigaudit.agents.facts.gpu_address import gpu_selector, gpu_words, index_selector
from rigaudit.agents.facts.nvml_reads import failure_text, label, labels, nvml_unusable
from rigaudit.agents.facts.vgpu import hypervisor_side
from rigaudit.agents.investigators.cuda import premises
from rigaudit.agents.investigators.cuda.facts import COMPUTE_MODES, CudaFacts, driver_where, mode_pairs, modes_or_finding
from rigaudit.tools.core.record import Record
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix

COMPUTE_MODE_CHECK = Check(
    "cuda.compute_mode",
    "CUDA compute mode",
    reads="NVML compute mode; on a Kubernetes node the device plugin's time-slicing (GPU feature discovery's "
    "labels, the plugin's config)",
    problem="Prohibited (high), Exclusive (low; high on GPUs the device plugin time-slices)",
    fix="`nvidia-smi -c 0` (by a person)",
    kinds=("runtime",),
    premises=(premises.GPUS, premises.NVML),
)


def _exclusive_for_mps(f: CudaFacts, bad: dict[int, int]) -> Finding | None:
    """Exclusive_Process on every such GPU while MPS holds them: the mode the MPS guide recommends. MPS shows as the
    control daemon running here, or (in a container, whose PID namespace holds no daemon) as NVML listing the servers
    as MPS clients."""
    mps = f.processes.mps
    clients = sorted({p.pid for p in f.scan.gpu_processes if p.server and mps.client(p.pid)})
    configured = sorted(pid for pid, env in f.processes.server_env.items() if "CUDA_MPS_PIPE_DIRECTORY" in env)
    if not (mps.running or clients or configured) or set(bad.values()) != {3}:
        return None
    if mps.running:
        by = f"with the MPS control daemon running (pids {', '.join(map(str, (*mps.controls, *mps.servers)))})"
    elif clients:
        by = (
            f"with the servers MPS clients (NVML: pids {', '.join(map(str, clients[:8]))}) of a daemon outside this "
            "container (the node's: a device plugin's MPS sets this mode)"
        )
    else:
        by = (
            f"with the servers configured for MPS (CUDA_MPS_PIPE_DIRECTORY in pids {', '.join(map(str, configured[:8]))}); "
            "whether a daemon serves them is cuda.mps's verdict"
        )
    return COMPUTE_MODE_CHECK.ok(
        "; ".join(f"{label(f.inventory, i)}: Exclusive_Process" for i in bad) + f" {by}",
        expected="Default (0), or Exclusive_Process under MPS",
        explanation=f"Deliberate ({MPS_SHARING.key}): {MPS_SHARING.conditions[2]} ({MPS_SHARING.source}). Setting "
        "Default would let processes open the GPUs beside the MPS server instead of through it.",
        evidence=f.compute_mode.refs,
    )


def _exclusive_time_sliced(f: CudaFacts, bad: dict[int, int], observed: str, fix: Fix) -> Finding | None:
    """Exclusive_Process on GPUs the device plugin time-slices: one context per GPU, so the pods of every replica but
    the first cannot open their GPU. None where the GPUs are not time-sliced (or MPS holds them)."""
    sliced = f.processes.time_slicing
    exclusive = [i for i, m in bad.items() if m == 3]
    if not sliced.shared or not exclusive or f.processes.mps.running:
        return None
    return COMPUTE_MODE_CHECK.problem_at(
        "high",
        f"{observed}; {sliced.how}",
        "Default (0) on GPUs shared by time-slicing",
        f"{TIME_SLICING.what} ({TIME_SLICING.key}): {TIME_SLICING.conditions[2]}: {(sliced.replicas or 2) - 1} "
        'of each GPU\'s replicas fail CUDA initialization ("all CUDA-capable devices are busy or unavailable") '
        f"({TIME_SLICING.source}).",
        fix,
        subjects=labels(f.inventory, exclusive),
        evidence=(*f.compute_mode.refs, *sliced.refs),
    )


def judge_compute_mode(f: CudaFacts) -> Finding:
    if why := nvml_unusable(f.inventory):
        return COMPUTE_MODE_CHECK.unknown(why)
    modes = {i: v for i in f.compute_mode.results if isinstance(v := f.compute_mode.value(i), int)}
    if not modes:
        return COMPUTE_MODE_CHECK.unknown(failure_text(f.compute_mode, f.inventory), evidence=f.compute_mode.refs)
    bad = {i: m for i, m in modes.items() if m in (1, 2, 3)}
    partial = f" ({failure_text(f.compute_mode, f.inventory)})" if f.compute_mode.failed() else ""
    if not bad:
        return COMPUTE_MODE_CHECK.ok(
            f"Default on {len(modes)}/{len(f.compute_mode.results)} GPUs{partial}",
            expected="Default (0)",
            evidence=f.compute_mode.refs,
        )
    if (deliberate := _exclusive_for_mps(f, bad)) is not None:
        return deliberate
    prohibited = [i for i, m in bad.items() if m == 2]
    observed = "; ".join(f"{label(f.inventory, i)}: {COMPUTE_MODES[m]}" for i, m in bad.items())
    where = driver_where(f.platform)
    arg = {i: index_selector(f.inventory, i, where) for i in bad}
    actions = tuple(
        CommandAction(description=f"set GPU{i} to the Default compute mode", argv=("nvidia-smi", "-i", arg[i], "-c", "0"))
        for i in bad
    )
    fix = Fix(
        kind="runtime",
        where=where,
        summary="Set the compute mode back to Default (nvidia-smi -c 0) on " + ", ".join(f"GPU{i}" for i in bad),
        actions=actions,
        risk="low",
        verify="nvidia-smi --query-gpu=index,compute_mode --format=csv shows Default on every GPU",
        revert="; ".join(f"nvidia-smi -i {arg[i]} -c {m}" for i, m in bad.items()),
        persist="compute mode returns to Default whenever the driver reloads: remove whatever sets it at boot "
        "(a unit or script running `nvidia-smi -c`)",
    )
    if prohibited:
        return COMPUTE_MODE_CHECK.problem_at(
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
    if (sliced := _exclusive_time_sliced(f, bad, observed, fix)) is not None:
        return sliced
    return COMPUTE_MODE_CHECK.problem_at(
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


MIG_CHECK = Check(
    "cuda.mig",
    "MIG mode",
    reads="NVML MIG mode (current, pending)",
    problem="MIG on where whole GPUs are used; current ≠ pending",
    fix="`nvidia-smi -mig 0`, GPU reset or reboot",
    kinds=("reboot",),
    premises=(premises.GPU_CONFIG, premises.SERVERS, premises.NVML),
)


def _mig_off_fix(f: CudaFacts, targets: list[int]) -> Fix:
    where = driver_where(f.platform)
    gpus = [g for g in f.inventory.gpus if g.index in targets]
    return Fix(
        kind="reboot",
        where=where,
        summary="Turn MIG off and reset the GPUs (or reboot) so current and pending modes agree",
        actions=(
            *(
                CommandAction(
                    description=f"disable MIG on {gpu_words(g, where)}",
                    argv=("nvidia-smi", "-i", arg, "-mig", "0") if (arg := gpu_selector(g, where)) else (),
                )
                for g in gpus
            ),
            CommandAction(description="with the server stopped, reset those GPUs (nvidia-smi -r) or reboot the host"),
        ),
        risk="medium",
        verify="nvidia-smi --query-gpu=index,mig.mode.current,mig.mode.pending --format=csv shows Disabled, Disabled",
        revert="nvidia-smi -i N -mig 1, then reset the GPU and recreate the instances",
        persist="MIG mode is stored on the GPU and survives reboots",
    )


class _MigUse(Record):
    """The GPUs with MIG on, split by what exists and runs on them."""

    empty: list[int]
    """No instance listed and no process on one."""
    sliced: list[int]
    used: list[int]
    """Sliced GPUs a process or a server's MIG devices use."""
    observed: str


def _mig_use(f: CudaFacts, modes: dict[int, tuple[int, int]], on: list[int], targets: list[int]) -> _MigUse:
    """How the MIG-on GPUs are partitioned and used, and the observed text naming their instances."""
    observed = mode_pairs(f.inventory, modes, targets)
    states = {s.gpu.index: s for s in f.mig_states if s.gpu.index is not None}
    # No instance listed and no process on one: a GPU NVML shows processes on is partitioned and in use, whatever the
    # listing says (a container sees neither the driver's capabilities tree nor other tenants' instances).
    empty = [i for i in on if i in states and states[i].instances == () and not states[i].processes]
    sliced = [i for i in on if i not in empty]
    used = [i for i in sliced if i in states and states[i].in_use] or (sliced if f.server_mig_devices else [])
    counts = {i: len(states[i].instances or ()) for i in sliced if i in states}
    if counts:
        observed += "; GPU instances: " + ", ".join(f"{label(f.inventory, i)} {n}" for i, n in counts.items())
    return _MigUse(empty, sliced, used, observed)


def _no_instance_problem(f: CudaFacts, use: _MigUse, refs: tuple[str, ...]) -> Finding:
    fix = _mig_off_fix(f, use.empty).model_copy(
        update={
            "summary": "Create the GPU and compute instances the servers need (nvidia-smi mig -cgi PROFILES -C), or turn MIG off"
        }
    )
    return MIG_CHECK.problem_at(
        "high",
        use.observed + "; no GPU instance created on " + ", ".join(labels(f.inventory, use.empty)),
        "MIG off, or MIG on with the instances the servers run on",
        "MIG is on but no GPU instance exists on these GPUs: CUDA sees no device there, so no server can run on them at all.",
        fix,
        subjects=labels(f.inventory, use.empty),
        evidence=refs,
    )


def _sliced_under_tp_problem(f: CudaFacts, use: _MigUse, refs: tuple[str, ...]) -> Finding:
    return MIG_CHECK.problem_at(
        "high",
        use.observed + f"; a server runs tensor parallelism {f.tp} on whole GPUs",
        "MIG off on GPUs used whole for tensor parallelism",
        "With MIG on, CUDA sees MIG slices (a fraction of the SMs and memory each), not whole GPUs, and there is no "
        f"peer-to-peer between slices: the server asking for tensor parallelism {f.tp} either fails to start or "
        "runs on slices with NCCL going through host memory.",
        _mig_off_fix(f, use.sliced),
        subjects=labels(f.inventory, use.sliced),
        evidence=refs,
    )


def _idle_slices_finding(f: CudaFacts, use: _MigUse, refs: tuple[str, ...]) -> Finding:
    """Sliced GPUs nothing runs on: unknown with no server in sight, else a problem beside whole-GPU servers."""
    names = ", ".join(labels(f.inventory, use.sliced))
    if not f.scan.servers:
        return MIG_CHECK.unknown(
            f"{use.observed}; nothing runs on them and no server is visible: whether MIG is intended on {names} cannot "
            "be told here (a process on its instances, or a server given MIG devices, would tell)",
            evidence=refs,
        )
    return MIG_CHECK.problem_at(
        "medium",
        use.observed + "; nothing runs on them while the servers use whole GPUs",
        "MIG off on GPUs no MIG workload uses",
        f"MIG is on on {names} with nothing running on their instances, while the servers here use whole GPUs: "
        "these GPUs sit idle (a whole-GPU server cannot use a MIG-enabled GPU). If slicing is planned, ignore this.",
        _mig_off_fix(f, use.sliced),
        subjects=labels(f.inventory, use.sliced),
        evidence=refs,
    )


def _mig_in_use_ok(f: CudaFacts, use: _MigUse, refs: tuple[str, ...]) -> Finding:
    who = (
        f"processes run on the MIG instances of {', '.join(labels(f.inventory, use.used))}"
        if use.used and not f.server_mig_devices
        else f"the servers are given MIG devices ({', '.join(f.server_mig_devices[:4])})"
        if f.server_mig_devices
        else "no process runs on them now"
    )
    return MIG_CHECK.ok(
        f"{use.observed}; {who}",
        expected="MIG as the servers use it",
        explanation="MIG partitions each GPU into isolated slices on purpose (several small models or tenants per "
        "GPU): a deliberate configuration, not a fault. It would be one only for a server that needs whole GPUs "
        f"for tensor parallelism, and none asks for that here ({MIG_IN_USE.source}).",
        evidence=refs,
    )


def _mig_pending_problem(f: CudaFacts, use: _MigUse, targets: list[int], refs: tuple[str, ...]) -> Finding:
    return MIG_CHECK.problem_at(
        "medium",
        use.observed,
        "current MIG mode = pending MIG mode",
        "A MIG mode change is pending: it takes effect at the next GPU reset or reboot, so the GPU will change under the "
        "server at an unplanned moment. Finish it (reset) or undo it now.",
        _mig_off_fix(f, targets),
        subjects=labels(f.inventory, targets),
        evidence=refs,
    )


def judge_mig(f: CudaFacts) -> Finding:
    readable = any(isinstance(f.mig.value(i), list) for i in f.mig.results)
    if not readable and (why := hypervisor_side(f.inventory, "MIG mode and instances")):
        return MIG_CHECK.not_applicable(f"{why}: a guest holds a whole vGPU or a MIG-backed one, set up there")
    modes = modes_or_finding(f, f.mig, MIG_CHECK, "MIG")
    if isinstance(modes, Finding):
        return modes
    on = [i for i, (current, _) in modes.items() if current == 1]
    pending = [i for i, (current, nxt) in modes.items() if current != nxt]
    if not on and not pending:
        return MIG_CHECK.ok(
            f"MIG off (current = pending) on {len(modes)}/{len(f.mig.results)} GPUs",
            expected="MIG off on every GPU used whole",
            evidence=f.mig.refs,
        )
    targets = sorted(set(on) | set(pending))
    use = _mig_use(f, modes, on, targets)
    refs = (*f.mig.refs, *(r for s in f.mig_states for r in s.refs))
    whole_gpu_server = f.tp is not None and f.tp > 1 and not f.server_mig_devices
    if use.empty:
        return _no_instance_problem(f, use, refs)
    if use.sliced and whole_gpu_server and not use.used:
        return _sliced_under_tp_problem(f, use, refs)
    if use.sliced and not pending:
        # With none of them used every sliced GPU is idle.
        if not f.server_mig_devices and not use.used:
            return _idle_slices_finding(f, use, refs)
        return _mig_in_use_ok(f, use, refs)
    return _mig_pending_problem(f, use, targets, refs)


HBM_GPUS = r"\b(?:A100|A800|A30|H100|H200|H800|H20|GH200|B100|B200|B300|GB200|GB300)\b"
"""Data-center GPUs with HBM, whose ECC is on as shipped: with it off, memory errors go undetected."""
ECC_SOURCE = "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html"

ECC_MODE_CHECK = Check(
    "cuda.ecc_mode",
    "ECC mode",
    reads="NVML ECC mode (current, pending), the GPU model",
    problem="current ≠ pending; ECC off on a data-center HBM GPU (memory errors undetected)",
    fix="reboot or GPU reset; `nvidia-smi -e 1` then a reboot where ECC is off on an HBM GPU",
    kinds=("reboot",),
    premises=(premises.GPUS, premises.NVML),
)


def _ecc_pending_problem(f: CudaFacts, modes: dict[int, tuple[int, int]], pending: list[int]) -> Finding:
    fix = Fix(
        kind="reboot",
        where=driver_where(f.platform),
        summary="Reboot (or reset the GPUs with the server stopped) so the pending ECC mode takes effect",
        actions=(CommandAction(description="stop the server, then reboot the host (or nvidia-smi -r -i N per GPU)"),),
        risk="medium",
        verify="nvidia-smi --query-gpu=index,ecc.mode.current,ecc.mode.pending --format=csv: current = pending",
        revert="nvidia-smi -i N -e <previous 0|1>, then reboot",
        persist="ECC mode is stored on the GPU",
    )
    return ECC_MODE_CHECK.problem_at(
        "medium",
        mode_pairs(f.inventory, modes, pending),
        "current ECC mode = pending ECC mode",
        "An ECC change is waiting for a reset: until then the GPU runs in the old mode, and at the next reboot its "
        "usable memory and behaviour change under the server (ECC costs a few percent of capacity and bandwidth on "
        "some memories). Mixed modes inside one TP group also make the GPUs' free memory differ.",
        fix,
        subjects=labels(f.inventory, pending),
        evidence=f.ecc.refs,
    )


def _ecc_off_problem(f: CudaFacts, off: list[int]) -> Finding:
    where = driver_where(f.platform)
    fix = Fix(
        kind="reboot",
        where=where,
        summary="Turn ECC back on (the data-center default), then reboot with the server stopped",
        actions=tuple(
            CommandAction(
                description=f"enable ECC on GPU{i}",
                argv=("nvidia-smi", "-i", index_selector(f.inventory, i, where), "-e", "1"),
            )
            for i in off
        ),
        risk="medium",
        verify="after the reboot: nvidia-smi --query-gpu=index,ecc.mode.current --format=csv: Enabled on every GPU",
        revert="nvidia-smi -i N -e 0, then reboot",
        persist="ECC mode is stored on the GPU",
    )
    return ECC_MODE_CHECK.problem_at(
        "medium",
        f"ECC off on {len(off)} data-center HBM GPU(s): {', '.join(labels(f.inventory, off))}",
        "ECC on (as these GPUs ship)",
        "With ECC off the GPU detects no memory error: no Xid 48/63/94/95, no row remapping, no containment, so a "
        "flipped bit becomes a silent wrong answer, and gpu.ecc_errors has nothing to count. On HBM the ECC costs no "
        f"capacity; NVIDIA's memory error management relies on it ({ECC_SOURCE}).",
        fix,
        subjects=labels(f.inventory, off),
        evidence=f.ecc.refs,
    )


def _ecc_mixed_problem(f: CudaFacts, modes: dict[int, tuple[int, int]]) -> Finding:
    off = [i for i, (cur, _) in modes.items() if cur == 0]
    fix = Fix(
        kind="reboot",
        where=driver_where(f.platform),
        summary="Use one ECC mode on all GPUs of the TP group",
        actions=tuple(
            CommandAction(
                description=f"enable ECC on GPU{i}",
                argv=("nvidia-smi", "-i", index_selector(f.inventory, i, driver_where(f.platform)), "-e", "1"),
            )
            for i in off
        ),
        verify="nvidia-smi --query-gpu=index,ecc.mode.current --format=csv shows one mode after the reboot",
        revert="nvidia-smi -i N -e 0, then reboot",
        persist="ECC mode is stored on the GPU",
    )
    return ECC_MODE_CHECK.problem_at(
        "low",
        f"ECC off on {', '.join(labels(f.inventory, off))}; on elsewhere",
        "one ECC mode on every GPU",
        "GPUs of one tensor-parallel group with different ECC modes have different usable memory; the server sizes "
        "its KV cache by the smallest.",
        fix,
        subjects=labels(f.inventory, off),
        evidence=f.ecc.refs,
    )


def judge_ecc_mode(f: CudaFacts) -> Finding:
    modes = modes_or_finding(f, f.ecc, ECC_MODE_CHECK, "ECC")
    if isinstance(modes, Finding):
        return modes
    if pending := [i for i, (cur, nxt) in modes.items() if cur != nxt]:
        return _ecc_pending_problem(f, modes, pending)
    states = {cur for cur, _ in modes.values()}
    if len(states) > 1:
        return _ecc_mixed_problem(f, modes)
    mode = "on" if states == {1} else "off"
    hbm = [i for i in modes if (g := f.inventory.by_index(i)) is not None and re.search(HBM_GPUS, g.name or "")]
    if mode == "off" and hbm:
        return _ecc_off_problem(f, hbm)
    return ECC_MODE_CHECK.ok(
        f"ECC {mode} (current = pending) on {len(modes)}/{len(f.ecc.results)} GPUs",
        expected="current = pending",
        evidence=f.ecc.refs,
    )
