"""gpu.xid: NVRM Xid events in the kernel log, judged by NVIDIA's Xid catalog (meaning, resolution, severity).

Each Xid's meaning and the resolution NVIDIA gives come from :mod:`rigaudit.agents.facts.xid_catalog` (all 172
codes); the finding takes the worst severity of the Xids logged and the strongest resolution among them, on the layer
that resolution runs on: a GPU reset where the NVIDIA driver runs, a reboot of the machine (for a VM guest whose GPU
fell off the bus, a stop and start from the hypervisor; on a cloud, the provider's steps of
:func:`~rigaudit.agents.investigators.cloud.for_cloud`), a restart of the serving application, a report to support.
A memory Xid whose event NVML shows takes the fix gpu.ecc_errors gives that event (:func:`.memory.memory_fix`).
An Xid whose resolution what followed it shows done (:mod:`.xid_after`: the GPU's recovery action None after an
Xid 154 that followed it; an application fault's process exited) is low: watch for a repeat
(:mod:`.xid_settled`). Xid 154 counts each GPU's action now, not the worst line it ever logged.
"""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.gpu_address import gpu_words
from rigaudit.agents.facts.gpus import Gpu
from rigaudit.agents.facts.kernel_log import DMESG, log_unavailable
from rigaudit.agents.facts.platform import Platform, fix_where
from rigaudit.agents.facts.xid_catalog import (
    RESOLUTION_FIX_KIND,
    RESOLUTION_RANK,
    RESOLUTION_SEVERITY,
    RESOLUTION_TEXT,
    Resolution,
    Xid,
    lookup,
    recovery_resolution,
)
from rigaudit.agents.investigators.cloud import for_cloud
from rigaudit.agents.investigators.gpu import premises
from rigaudit.agents.investigators.gpu.facts import GpuHealthFacts
from rigaudit.agents.investigators.gpu.memory import (
    MEMORY_XIDS,
    SOURCE,
    XID_ORDER,
    MemoryEvent,
    memory_fix,
    reset_actions,
    reset_where,
)
from rigaudit.agents.investigators.gpu.xid_after import XidEvent, parse_xids
from rigaudit.agents.investigators.gpu.xid_pattern import EXPLANATION as PATTERN_EXPLANATION
from rigaudit.agents.investigators.gpu.xid_pattern import gpu_pattern, pattern_fix, pattern_text
from rigaudit.agents.investigators.gpu.xid_settled import (
    SETTLED_EXPLANATION,
    current_actions,
    gpu_memory_event,
    settle,
    settled_fix,
    settled_severity,
    settled_text,
    xids_by_bdf,
)
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import command_ref
from rigaudit.tools.schema.finding import SEVERITY_ORDER, Action, CommandAction, Edge, Finding, Fix, FixKind, Severity, Where


class _Judged(Record):
    """One Xid code as logged here: its catalog entry, its resolution (Xid 154: the one its line names)."""

    code: int
    entry: Xid | None
    resolution: Resolution
    count: int
    gpus: tuple[str, ...]
    memory: MemoryEvent | None = None
    """The memory event NVML shows on these GPUs (memory Xids only): its severity is the one gpu.ecc_errors gives."""

    @property
    def severity(self) -> Severity:
        if self.memory is not None:
            return self.memory.severity
        if self.entry is not None and self.code != 154:
            return self.entry.severity
        return RESOLUTION_SEVERITY[self.resolution]

    @property
    def text(self) -> str:
        if self.entry is None:
            return "not in NVIDIA's Xid catalog (a newer driver's code?)"
        return self.entry.text


def _worst(events: list[MemoryEvent]) -> MemoryEvent | None:
    return min(events, key=lambda e: SEVERITY_ORDER[e.severity]) if events else None


def _judge_codes(
    events: list[XidEvent], f: GpuHealthFacts | None = None, current: dict[str, tuple[int, str]] | None = None
) -> list[_Judged]:
    out = []
    logged = xids_by_bdf(events)
    by_bdf = {g.bdf: g for g in f.inventory.gpus} if f is not None else {}
    for code in sorted({e.xid for e in events}):
        mine = [e for e in events if e.xid == code]
        entry = lookup(code)
        resolution: Resolution = entry.resolution if entry else "report"
        if code == 154:  # each GPU's action now (NVML, else its last line), not the worst line ever logged
            now = current if current is not None else (current_actions(f, events) if f is not None else {})
            gpus = dict.fromkeys(e.bdf for e in mine)
            asked = [r for b in gpus if b in now and (r := recovery_resolution(now[b][0])) is not None]
            resolution = min(asked, key=lambda r: RESOLUTION_RANK[r]) if asked else "none"
        bdfs = tuple(dict.fromkeys(e.bdf for e in mine))
        memory = None
        if f is not None and code in MEMORY_XIDS:
            indexed = [(b, g.index) for b in bdfs if (g := by_bdf.get(b)) is not None and g.index is not None]
            found = [m for b, i in indexed if (m := gpu_memory_event(f, i, logged[b])) is not None]
            memory = _worst(found) if len(found) == len(bdfs) else None
            if memory is not None and resolution == "none":
                resolution = "reset_gpu"  # the remap it recorded is pending: it takes effect at a reset
        out.append(_Judged(code, entry, resolution, len(mine), bdfs, memory))
    return out


def _memory_events(f: GpuHealthFacts, judged: list[_Judged]) -> list[tuple[Gpu, MemoryEvent]]:
    """Each GPU of a memory Xid with the event NVML shows on it (as gpu.ecc_errors reads it), in bus order."""
    logged: dict[str, set[int]] = {}
    for j in judged:
        if j.memory is not None:
            for b in j.gpus:
                logged.setdefault(b, set()).add(j.code)
    by_bdf = {g.bdf: g for g in f.inventory.gpus}
    out = []
    for bdf in sorted(logged):
        gpu = by_bdf.get(bdf)
        event = gpu_memory_event(f, gpu.index, frozenset(logged[bdf])) if gpu and gpu.index is not None else None
        if gpu is not None and event is not None:
            out.append((gpu, event))
    return out


def _where(platform: Platform, resolution: Resolution) -> Where:
    if resolution == "restart_app":
        return fix_where(platform, "workload")
    if resolution == "reset_gpu":
        return reset_where(platform)
    if resolution == "update_software":
        return fix_where(platform, "gpu_driver")
    if resolution in ("reboot", "restart_vm"):
        # A VM guest's GPU that fell off the bus comes back when the hypervisor restarts the VM (a reboot inside the
        # guest may not reset it); a container's host reboots, not the container.
        return fix_where(platform, "vm_definition") if platform.in_vm else fix_where(platform, "kernel")
    return fix_where(platform, "hardware")


_BUG_REPORT = CommandAction(
    description="collect nvidia-bug-report.sh (it holds the kernel log and the GPU state) before resetting"
)


def _follow_up(what: str) -> str:
    """NVIDIA's follow-up for a repeat, said once (catalog entries may carry 'if it repeats' themselves)."""
    return f"; {what}" if "if it repeats" in what else f"; if it repeats, {what}"


def _actions(
    resolution: Resolution, where: Where, gpus: list[Gpu], investigate: list[str], cloud: str | None = None
) -> tuple[Action, ...]:
    actions: list[Action] = []
    if resolution == "reset_gpu":
        actions.extend(reset_actions(gpus, where))
    elif resolution == "reboot":
        if where == "hypervisor":
            names = "; ".join(gpu_words(g, where) for g in gpus)
            actions.append(
                CommandAction(description=f"stop and start this VM from the hypervisor (or the cloud console): {names}")
            )
        else:
            actions.append(CommandAction(description="drain the server, then reboot the machine", argv=("systemctl", "reboot")))
    else:
        actions.append(CommandAction(description=RESOLUTION_TEXT[resolution]))
    for item in dict.fromkeys(investigate):
        what = item.replace("NVIDIA support", f"the provider ({cloud} support)") if cloud else item
        if what and not what.startswith("none"):  # "none (it qualifies another Xid)": no step of its own
            actions.append(CommandAction(description=what if "if it repeats" in what else f"if it repeats: {what}"))
    actions.append(_BUG_REPORT)
    return tuple(actions)


XID_CHECK = Check(
    "gpu.xid",
    "Xid events in the kernel log",
    reads="kernel log `NVRM: Xid` lines, judged by NVIDIA's Xid catalog (172 codes); each GPU's recovery action now "
    "(NVML field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, else its last Xid 154); the processes the lines name (/proc)",
    problem="any Xid; severity by NVIDIA's resolution: informational low, restart-the-application medium, GPU reset or "
    "reboot high; critical when data or the GPU is lost (48, 64, 79, 95, 140, 167, 171, 172); low when dealt with "
    "since (recovery action None after an Xid 154 that followed it, no remap pending; the faulting process exited), "
    "medium where it came back on the same GPU after its reset",
    fix="NVIDIA's resolution of the worst Xid: restart the application, reset the GPU, reboot, check power cabling, "
    "report to support; a memory event NVML shows: gpu.ecc_errors' fix (drain and RMA; restart the application, reset "
    "at the next window)",
    kinds=("restart", "reboot", "hardware"),
    premises=(premises.PLATFORM_FIX, premises.KERNEL_LOG),
)


_SEVERITY_MEANS = {
    "critical": "data on the GPU may be wrong or the GPU is gone until the machine is reset",
    "high": "the GPU is unusable for every process until it is reset, so the server is down on it",
    "medium": "the application that hit it was stopped; the GPU itself keeps working",
    "low": "informational: nothing to do unless it repeats or accompanies another Xid",
}


def _explanation(judged: list[_Judged], severity: Severity, last_line: str) -> str:
    """Each code's resolution (or its memory event's grade), then what the worst one means."""
    explanation = " ".join(
        (
            f"Xid {j.code}: NVML shows the memory event on the GPU now ({j.memory.state}): {j.memory.severity}, act "
            f"{j.memory.urgency}, as gpu.ecc_errors grades it ({SOURCE})"
            if j.memory is not None
            else f"Xid {j.code}: NVIDIA's resolution is to {RESOLUTION_TEXT[j.resolution]}"
        )
        + (_follow_up(j.entry.investigate) if j.entry and j.entry.investigate else "")
        + "."
        for j in judged
    )
    return explanation + (
        f" The worst of them sets the severity ({severity}): " + _SEVERITY_MEANS[severity] + ". Last line: " + last_line[:200]
    )


def _memory_event_fix(f: GpuHealthFacts, judged: list[_Judged], memory: list[tuple[Gpu, MemoryEvent]]) -> Fix:
    """One event, one fix: the one gpu.ecc_errors gives it, which follows the event's most severe Xid."""
    shared = memory_fix(f.platform, memory)
    codes = ", ".join(str(c) for c in XID_ORDER if any(j.code == c and j.memory for j in judged))
    return shared.model_copy(
        update={
            "summary": f"Xid {codes}: {shared.summary}",
            "edges": (Edge(kind="moot_after", check="gpu.ecc_errors", why="the same memory event, the same fix"),),
        }
    )


def _resolution_fix(f: GpuHealthFacts, judged: list[_Judged], strongest: Resolution, kind: FixKind) -> Fix:
    """NVIDIA's resolution of the strongest code, on the GPUs that logged it."""
    by_bdf = {g.bdf: g for g in f.inventory.gpus}
    where = _where(f.platform, strongest)
    bdfs = dict.fromkeys(b for j in judged if j.resolution == strongest for b in j.gpus if b in by_bdf)
    gpus = [by_bdf[b] for b in bdfs]  # one reset per GPU, however many of its Xids ask for it
    investigate = [j.entry.investigate for j in judged if j.entry and j.entry.investigate]
    fix = Fix(
        kind=kind,
        where=where,
        summary=f"Xid {', '.join(str(j.code) for j in judged if j.resolution == strongest)}: "
        f"{RESOLUTION_TEXT[strongest]} (NVIDIA's resolution)",
        actions=_actions(strongest, where, gpus, investigate, f.platform.cloud if where == "hypervisor" else None),
        risk="medium" if strongest in ("reset_gpu", "reboot", "restart_vm") else "low",
        verify="dmesg | grep -i xid shows no new event after a load run; nvidia-smi -q shows the GPU healthy",
        revert="none",
        persist="none",
    )
    return for_cloud(fix, f.platform, gpus, also=(_BUG_REPORT,))  # a cloud's hypervisor: the provider's steps


def _no_xid(lines: int, refs: tuple[str, ...]) -> Finding:
    return XID_CHECK.ok(
        f"no NVRM Xid line in the kernel log ({lines} lines)",
        expected="no Xid",
        explanation="The ring buffer holds the messages since boot unless it has wrapped.",
        evidence=refs,
    )


def _described(judged: list[_Judged], notes: dict[int, list[str]], by_bdf: dict[str, Gpu]) -> list[str]:
    """One phrase per Xid code still open: its text, the GPUs that logged it, how often, what was said since."""
    parts = []
    for j in judged:
        where_seen = ", ".join(by_bdf[b].label if b in by_bdf else f"GPU {b}" for b in j.gpus)
        said = "; ".join(dict.fromkeys(notes.get(j.code, [])))
        parts.append(f"Xid {j.code} ({j.text}) on {where_seen} ×{j.count}" + (f" ({said})" if said else ""))
    return parts


def judge_xid(f: GpuHealthFacts) -> Finding:
    """The Xids as each GPU's history judges them (:func:`_judged`), raised to high where one GPU's application
    faults came from many processes and no other GPU logged one (:mod:`.xid_pattern`)."""
    finding = _judged(f)
    if finding.status != "problem" or SEVERITY_ORDER[finding.severity or "low"] <= SEVERITY_ORDER["high"]:
        return finding
    pattern = gpu_pattern(parse_xids(f.dmesg.stdout), len(f.inventory.gpus))
    if pattern is None:
        return finding
    by_bdf = {g.bdf: g for g in f.inventory.gpus}
    return XID_CHECK.problem_at(
        "high",
        f"{pattern_text(pattern, by_bdf)}; {finding.observed}",
        finding.expected,
        f"{PATTERN_EXPLANATION} {finding.explanation}",
        pattern_fix(pattern, by_bdf, f.platform),
        subjects=finding.subjects,
        evidence=finding.evidence,
    )


def _judged(f: GpuHealthFacts) -> Finding:
    refs = (command_ref(DMESG), *(f.recovery.refs if f.recovery is not None else ()))
    if why := log_unavailable(f.dmesg, in_container=f.platform.in_container):
        return XID_CHECK.unknown(why, evidence=refs)
    events = parse_xids(f.dmesg.stdout)
    lines = len(f.dmesg.stdout.splitlines())
    if not events:
        return _no_xid(lines, refs)
    by_bdf = {g.bdf: g for g in f.inventory.gpus}
    subjects = sorted({by_bdf[e.bdf].label if e.bdf in by_bdf else f"GPU {e.bdf}" for e in events})
    still, settled, notes = settle(f, events)
    done = settled_text(settled, by_bdf)
    investigate = [e.entry.investigate for e in _judge_codes([s.event for s in settled]) if e.entry and e.entry.investigate]
    expected = "no Xid events, or each one dealt with since"
    if not still:
        return XID_CHECK.problem_at(
            settled_severity(settled),
            "; ".join(done),
            expected,
            SETTLED_EXPLANATION,
            settled_fix(f, settled, investigate),
            subjects=subjects,
            evidence=refs,
        )
    judged = _judge_codes(still, f, current_actions(f, events))
    graded = [j.severity for j in judged] + ([settled_severity(settled)] if settled else [])
    severity = min(graded, key=lambda s: SEVERITY_ORDER[s])
    strongest = min((j.resolution for j in judged), key=lambda r: RESOLUTION_RANK[r])
    parts = _described(judged, notes, by_bdf)
    explanation = _explanation(judged, severity, still[-1].line)
    if settled:
        explanation += " Dealt with since (low): " + SETTLED_EXPLANATION
    kind = RESOLUTION_FIX_KIND[strongest]
    if kind is None:
        if settled:
            return XID_CHECK.problem_at(
                severity,
                "; ".join(parts + done),
                expected,
                explanation,
                settled_fix(f, settled, investigate),
                subjects=subjects,
                evidence=refs,
            )
        return XID_CHECK.ok(
            "; ".join(parts) + " (informational in NVIDIA's catalog)",
            expected="no Xid that needs an action",
            explanation=explanation,
            subjects=subjects,
            evidence=refs,
        )
    memory = _memory_events(f, judged)
    others = [j for j in judged if j.memory is None and RESOLUTION_FIX_KIND[j.resolution] is not None]
    fix = _memory_event_fix(f, judged, memory) if memory and not others else _resolution_fix(f, judged, strongest, kind)
    return XID_CHECK.problem_at(severity, "; ".join(parts + done), expected, explanation, fix, subjects=subjects, evidence=refs)
