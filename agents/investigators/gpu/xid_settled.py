"""gpu.xid's settled Xids: those whose resolution what followed them shows done (:mod:`.xid_after` says when)."""

from __future__ import annotations

from rigaudit.agents.facts.gpus import Gpu
from rigaudit.agents.facts.platform import fix_where
from rigaudit.agents.facts.xid_catalog import RECOVERY_ACTIONS, lookup, recovery_code
from rigaudit.agents.investigators.gpu.facts import GpuHealthFacts
from rigaudit.agents.investigators.gpu.memory import MEMORY_XIDS, MemoryEvent, memory_event
from rigaudit.agents.investigators.gpu.xid_after import XidEvent, app_fault, line_name, line_pid, recovery_now
from rigaudit.tools.core.record import Record
from rigaudit.tools.schema.finding import CommandAction, Fix, Severity

GUIDE = "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/error-recovery-and-response-flags.html"


class Settled(Record):
    event: XidEvent
    why: str
    """What shows its resolution done (``recovery action back to None at 71890.2 s (Xid 154)...``)."""


def xids_by_bdf(events: list[XidEvent]) -> dict[str, frozenset[int]]:
    out: dict[str, set[int]] = {}
    for e in events:
        out.setdefault(e.bdf, set()).add(e.xid)
    return {b: frozenset(codes) for b, codes in out.items()}


def gpu_memory_event(f: GpuHealthFacts, index: int, xids: frozenset[int]) -> MemoryEvent | None:
    """The memory event of GPU ``index`` as NVML and its memory Xids show it (:func:`memory_event`)."""
    remap = f.remapped.value(index)
    uncorrected = f.volatile_uncorrected.value(index)
    pages = f.retired_pending.value(index)
    return memory_event(
        xids & MEMORY_XIDS,
        remap if isinstance(remap, list) else None,
        uncorrected if isinstance(uncorrected, int) else None,
        pages if isinstance(pages, int) else None,
    )


def action_name(code: int) -> str:
    named = RECOVERY_ACTIONS.get(code)
    return f"0x{code:x} ({named[0]})" if named else f"0x{code:x}"


def current_actions(f: GpuHealthFacts, events: list[XidEvent]) -> dict[str, tuple[int, str]]:
    """Each GPU's recovery action now, with where it was read: NVML's field where it answered, else the GPU's last
    Xid 154 line (a later line replaces an earlier one: the action is a state, not a tally)."""
    out: dict[str, tuple[int, str]] = {}
    for e in events:
        if e.xid == 154 and (code := recovery_code(e.line)) is not None:
            out[e.bdf] = (code, f"its last Xid 154, {e.when}")
    reads = f.recovery
    for gpu in f.inventory.gpus:
        if reads is not None and gpu.index is not None and gpu.index in reads.results:
            now = recovery_now(reads.value(gpu.index))
            if now is not None:
                out[gpu.bdf] = (now, "NVML's recovery action field now")
    return out


def _remap_note(f: GpuHealthFacts, gpu: Gpu | None) -> str:
    rows = f.remapped.value(gpu.index) if gpu is not None and gpu.index is not None else None
    if not isinstance(rows, list) or len(rows) != 4 or rows[2] or rows[3] or not (rows[0] or rows[1]):
        return ""
    return f"; row remap applied ({rows[1]} uncorrectable, {rows[0]} correctable rows remapped, none pending)"


def _cleared(
    f: GpuHealthFacts,
    e: XidEvent,
    events: list[XidEvent],
    current: dict[str, tuple[int, str]],
    by_bdf: dict[str, Gpu],
) -> str | None:
    """Why ``e``'s GPU is dealt with since ``e`` (its recovery action None after an Xid 154 that followed it, no
    memory event pending), or None."""
    now = current.get(e.bdf)
    gpu = by_bdf.get(e.bdf)
    if now is None or now[0] != 0:
        return None
    if gpu is not None and gpu.index is not None:
        logged = frozenset(x.xid for x in events if x.bdf == e.bdf)
        if gpu_memory_event(f, gpu.index, logged) is not None:
            return None  # a remap pending or an uncorrectable count: no reset since
    if e.xid == 154:
        return f"recovery action None now ({now[1]})" + _remap_note(f, gpu)
    later = [x for x in events if x.bdf == e.bdf and x.xid == 154 and x.order > e.order and recovery_code(x.line) is not None]
    if not later:
        return None  # the driver linked no recovery action to it: the log alone cannot say it was dealt with
    asked = next((x for x in later if recovery_code(x.line)), None)
    back = next((x for x in later if recovery_code(x.line) == 0 and asked is not None and x.order > asked.order), None)
    parts = [f"Xid 154 {asked.when} asked for {action_name(recovery_code(asked.line) or 0)}"] if asked else []
    if back is not None:
        parts.append(f"recovery action back to None {back.when} (the GPU was reset)")
    parts.append(f"None now ({now[1]})")
    return ", ".join(parts) + _remap_note(f, gpu)


def _exited(f: GpuHealthFacts, e: XidEvent) -> tuple[str | None, str | None]:
    """An application fault's process: (why it is settled: exited, or None; a note on it where it still runs)."""
    pid, name = line_pid(e.line), line_name(e.line)
    seen = f.xid_processes.get(pid) if pid is not None else None
    if pid is None or seen is None:
        return None, None
    who = f"pid {pid}" + (f" ({name})" if name else "")
    if seen.state == "exited":
        why = f"{who} has exited, so the process that hit it is stopped (NVIDIA's resolution: restart it); "
        return why + "no serving process is that pid", None
    if seen.state == "running" and name and seen.comm and seen.comm[:15] != name[:15]:
        return f"{who} has exited (pid {pid} is now {seen.comm}, another process)", None
    if seen.state == "running" and seen.started is not None and (at := e.at) is not None and seen.started > at:
        return f"{who} has exited (pid {pid} is now another process, started at {seen.started:g} s, after the Xid)", None
    if seen.state == "running":
        return None, f"{who} still runs" + (f": it is the serving process {seen.server}" if seen.server else ", no server")
    return None, f"{who}: whether it still runs is unknown ({seen.why})"


def settle(f: GpuHealthFacts, events: list[XidEvent]) -> tuple[list[XidEvent], list[Settled], dict[int, list[str]]]:
    """The Xids still open, those settled (with why), and notes on open application faults' processes, by code."""
    current = current_actions(f, events)
    by_bdf = {g.bdf: g for g in f.inventory.gpus}
    still: list[XidEvent] = []
    settled: list[Settled] = []
    notes: dict[int, list[str]] = {}
    for e in events:
        why = _cleared(f, e, events, current, by_bdf)
        if why is None and app_fault(e.xid):
            why, note = _exited(f, e)
            if note:
                notes.setdefault(e.xid, []).append(note)
        if why:
            settled.append(Settled(e, why))
        else:
            still.append(e)
    return still, settled, notes


def repeated(settled: list[Settled]) -> dict[tuple[int, str], int]:
    """(code, GPU) -> times, for a GPU-level Xid settled more than once on one GPU: it came back after its reset."""
    counts: dict[tuple[int, str], int] = {}
    for s in settled:
        if s.event.xid != 154 and not app_fault(s.event.xid):
            counts[(s.event.xid, s.event.bdf)] = counts.get((s.event.xid, s.event.bdf), 0) + 1
    return {key: n for key, n in counts.items() if n > 1}


def settled_severity(settled: list[Settled]) -> Severity:
    """Low: dealt with, watch for a repeat. Repeated on the same GPU after its reset: high where the Xid is one
    NVIDIA's catalog grades high or critical (memory, the GPU's hardware: a reset each time does not make the GPU
    sound, and the gate drains it), medium otherwise."""
    again = repeated(settled)
    if not again:
        return "low"
    hardware = any((entry := lookup(code)) is not None and entry.severity in ("critical", "high") for code, _ in again)
    return "high" if hardware else "medium"


def settled_text(settled: list[Settled], by_bdf: dict[str, Gpu]) -> list[str]:
    """One part per code and GPU: ``Xid 95 (...) on GPU3 (...) at 71234.5 s ×1: dealt with since: ...``."""
    groups: dict[tuple[int, str], list[Settled]] = {}
    for s in settled:
        groups.setdefault((s.event.xid, s.event.bdf), []).append(s)
    parts = []
    for (code, bdf), items in groups.items():
        entry = lookup(code)
        meaning = entry.text if entry else "not in NVIDIA's Xid catalog"
        where = by_bdf[bdf].label if bdf in by_bdf else f"GPU {bdf}"
        again = ", repeated after a reset (" + ", ".join(i.event.when for i in items[1:]) + ")" if repeated(items) else ""
        parts.append(
            f"Xid {code} ({meaning}) on {where} {items[0].event.when} ×{len(items)}{again}: dealt with since: {items[-1].why}"
        )
    return parts


SETTLED_EXPLANATION = (
    "The kernel log holds every message since boot, so an Xid stays there after the GPU has been dealt with; what "
    "followed it decides. NVIDIA's recovery action None means no recovery action is needed: the GPU can be used again "
    f"by starting a new GPU process ({GUIDE}); a row remap no longer pending was applied at a reset; an application "
    "fault whose process has exited has had its resolution (the process that hit it is stopped), and the servers, "
    "other processes, are unaffected. Watch for a repeat: the same Xid again on the same GPU after its reset (medium "
    "here) points at the hardware."
)


def settled_fix(f: GpuHealthFacts, settled: list[Settled], investigate: list[str]) -> Fix:
    """Nothing to do now; what to do if it repeats."""
    codes = ", ".join(dict.fromkeys(str(s.event.xid) for s in settled))
    apps = all(app_fault(s.event.xid) for s in settled)
    where = fix_where(f.platform, "workload" if apps else "hardware")
    actions = [CommandAction(description="nothing to do now; after the next load run, look for a repeat (dmesg | grep -i xid)")]
    actions += [
        CommandAction(description=f"if it repeats: {item}")
        for item in dict.fromkeys(investigate)
        if item and not item.startswith("none")
    ]
    actions.append(
        CommandAction(description="if it repeats: collect nvidia-bug-report.sh and run DCGM diagnostics (dcgmi diag -r 3)")
    )
    summary = f"Xid {codes}: dealt with since; watch for a repeat (DCGM diagnostics and a report if it comes back)"
    if again := repeated(settled):
        names = ", ".join(f"Xid {code} ×{n}" for (code, _), n in again.items())
        summary = (
            f"{names} on the same GPU after its reset: drain it, run DCGM diagnostics (dcgmi diag -r 3) and report "
            "it to NVIDIA support (or the system vendor) with nvidia-bug-report.sh"
        )
    return Fix(
        kind="restart" if apps else "hardware",
        where=where,
        summary=summary,
        actions=tuple(actions),
        risk="low",
        verify="dmesg | grep -i xid shows no new event after a load run",
        revert="none",
        persist="none",
    )
