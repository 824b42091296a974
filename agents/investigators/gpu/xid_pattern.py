"""gpu.xid's pattern of the GPU: one application-fault Xid from many processes on one GPU, and on no other.

An application fault (Xid 13, 31, 43...) is the faulting process's: NVIDIA's resolution is to restart it. The same
fault from several unrelated processes on one GPU while its siblings log none is the GPU's: NVIDIA's investigatory
step for Xid 13 is to run DCGM diagnostics first, and debug the application only if the hardware passes.
"""

from __future__ import annotations

from rigaudit.agents.facts.gpus import Gpu
from rigaudit.agents.facts.platform import Platform, fix_where
from rigaudit.agents.investigators.gpu.xid_after import XidEvent, app_fault, line_pid
from rigaudit.tools.core.record import Record
from rigaudit.tools.schema.finding import CommandAction, Fix

PROCESSES = 3
"""Distinct processes faulting on one GPU (and none on the others) that make the pattern the GPU's."""


class GpuPattern(Record):
    bdf: str
    codes: tuple[int, ...]
    pids: int
    """Distinct ``pid=`` of its application-fault lines."""


def gpu_pattern(events: list[XidEvent], gpus: int) -> GpuPattern | None:
    """The GPU whose application faults came from :data:`PROCESSES` or more processes while the other GPUs logged
    none (None: no such GPU, or a host of one GPU, where there is no sibling to compare with)."""
    by_gpu: dict[str, set[int]] = {}
    codes: dict[str, set[int]] = {}
    for e in events:
        if app_fault(e.xid):
            by_gpu.setdefault(e.bdf, set())
            codes.setdefault(e.bdf, set()).add(e.xid)
            if (pid := line_pid(e.line)) is not None:
                by_gpu[e.bdf].add(pid)
    if gpus < 2 or len(by_gpu) != 1:
        return None
    bdf, pids = next(iter(by_gpu.items()))
    return GpuPattern(bdf, tuple(sorted(codes[bdf])), len(pids)) if len(pids) >= PROCESSES else None


def pattern_text(pattern: GpuPattern, by_bdf: dict[str, Gpu]) -> str:
    where = by_bdf[pattern.bdf].label if pattern.bdf in by_bdf else f"GPU {pattern.bdf}"
    codes = ", ".join(f"Xid {c}" for c in pattern.codes)
    return f"{codes} from {pattern.pids} different processes on {where} and on no other GPU: the GPU's pattern"


EXPLANATION = (
    "An application fault is one process's bug, but the same fault from several different processes on one GPU, "
    "while the kernel log holds none on the host's other GPUs, points at that GPU (where the others ran the same "
    "work: the log does not say what they ran): NVIDIA's next step "
    "for Xid 13 is to run DCGM diagnostics, and to debug the application only if the hardware passes "
    "(docs.nvidia.com/deploy/xid-errors). Until then every job placed on it can fail the same way."
)


def pattern_fix(pattern: GpuPattern, by_bdf: dict[str, Gpu], platform: Platform) -> Fix:
    gpu = by_bdf.get(pattern.bdf)
    where = gpu.label if gpu is not None else f"GPU {pattern.bdf}"
    index = f" -i {gpu.index}" if gpu is not None and gpu.index is not None else ""
    return Fix(
        kind="hardware",
        where=fix_where(platform, "hardware"),
        summary=f"Drain {where} and run DCGM diagnostics on it (dcgmi diag -r 3{index}); if it fails, report it",
        actions=(
            CommandAction(description=f"stop scheduling work on {where}; run dcgmi diag -r 3{index}"),
            CommandAction(description="if the diagnostics fail: collect nvidia-bug-report.sh and report it to NVIDIA support"),
            CommandAction(description="if they pass: debug the applications that faulted (the same code on one GPU)"),
        ),
        risk="low",
        verify=f"dcgmi diag -r 3{index} passes, and no new Xid on {where} after a load run",
        revert="none",
        persist="none",
    )
