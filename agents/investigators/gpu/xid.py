"""gpu.xid: NVRM Xid events in the kernel log, their meaning, severity and fix."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rigaudit.agents.check import Check
from rigaudit.agents.facts.gpus import normalize_bdf
from rigaudit.agents.facts.kernel_log import DMESG, log_unavailable
from rigaudit.agents.facts.platform import Platform
from rigaudit.agents.findings import ok, problem, unknown
from rigaudit.agents.investigators.gpu.facts import AREA, GpuHealthFacts, hw_where
from rigaudit.tools.hosts.base import CommandResult
from rigaudit.tools.model.finding import CommandAction, Finding, Fix, Severity
from rigaudit.tools.probe import command_ref

XID_MEANING = {
    13: "graphics engine exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing",
    45: "preemptive cleanup (a process was killed)",
    48: "double-bit ECC error",
    61: "internal micro-controller breakpoint",
    62: "internal micro-controller halt",
    63: "ECC page retirement / row remapping event",
    64: "ECC page retirement / row remapping failure",
    74: "NVLink error",
    79: "GPU has fallen off the bus",
    92: "high single-bit ECC error rate",
    94: "contained ECC error",
    95: "uncontained ECC error",
    119: "GSP RPC timeout",
    120: "GSP error",
}
CRITICAL_XIDS = frozenset({79, 48, 94, 95, 63, 64, 74})
APPLICATION_XIDS = frozenset({13, 31, 43})
_XID_LINE = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): (\d+)")


@dataclass(frozen=True)
class XidEvent:
    bdf: str
    xid: int
    line: str


def parse_xids(text: str) -> list[XidEvent]:
    events = []
    for line in text.splitlines():
        if match := _XID_LINE.search(line):
            bdf = match.group(1)
            if "." not in bdf:
                bdf += ".0"
            events.append(XidEvent(normalize_bdf(bdf), int(match.group(2)), line.strip()))
    return events


def _dmesg_unavailable(cmd: CommandResult) -> str | None:
    return log_unavailable(cmd)


def _xid_severity(xids: set[int]) -> Severity:
    if xids & CRITICAL_XIDS:
        return "critical"
    if xids <= {45}:
        return "low"
    if xids <= APPLICATION_XIDS | {45}:
        return "medium"
    return "high"


def _xid_fix(xids: set[int], platform: Platform) -> Fix:
    where = hw_where(platform)
    verify = "dmesg | grep -i xid shows no new events after a load run"
    if xids & {79, 74}:
        return Fix(
            kind="hardware",
            where=where,
            summary="GPU fell off the bus / NVLink errors: reboot to recover, then check seating, risers, power and "
            "cooling; RMA if it repeats",
            actions=(
                CommandAction(
                    description="reboot, then reseat the GPU and its power cables; check slot/riser and "
                    "PSU; open an RMA if the Xid returns"
                ),
            ),
            risk="medium",
            verify=verify,
            revert="none",
            persist="hardware changes persist",
        )
    if xids & {48, 63, 64, 94, 95, 92}:
        return Fix(
            kind="reboot",
            where=where,
            summary="Memory error Xids: reset the GPU or reboot so remaps take effect; see gpu.ecc_errors (RMA on failure)",
            actions=(CommandAction(description="stop the server, reset the affected GPUs (nvidia-smi -r -i N) or reboot"),),
            risk="medium",
            verify=verify,
            revert="none",
            persist="remaps are stored on the GPU",
        )
    if xids <= APPLICATION_XIDS | {45}:
        return Fix(
            kind="restart",
            where=where,
            summary="Application-side GPU faults: restart the server and look at what it ran when the Xid appeared",
            actions=(
                CommandAction(
                    description="restart the inference server; if the Xid repeats, collect "
                    "nvidia-bug-report.sh and the server log of that moment"
                ),
            ),
            risk="low",
            verify=verify,
            revert="none",
            persist="none",
        )
    return Fix(
        kind="reboot",
        where=where,
        summary="Driver/firmware Xids: reboot, update the driver if they repeat",
        actions=(
            CommandAction(
                description="reboot; if the Xid returns, update to the latest driver of the branch and "
                "collect nvidia-bug-report.sh"
            ),
        ),
        risk="medium",
        verify=verify,
        revert="none",
        persist="none",
    )


XID_CHECK = Check(
    "gpu.xid",
    "Xid events in the kernel log",
    reads="kernel log `NVRM: Xid` lines",
    problem="any Xid; 79, 48/94/95, 63/64, 74 are critical",
    fix="per Xid: restart, reset, reboot or hardware",
    kinds=("restart", "reboot", "hardware"),
)


def judge_xid(f: GpuHealthFacts) -> Finding:
    check, title = XID_CHECK.id, XID_CHECK.title
    refs = (command_ref(DMESG),)
    if why := _dmesg_unavailable(f.dmesg):
        return unknown(check, AREA, title, why, evidence=refs)
    events = parse_xids(f.dmesg.stdout)
    lines = len(f.dmesg.stdout.splitlines())
    if not events:
        return ok(
            check,
            AREA,
            title,
            f"no NVRM Xid line in the kernel log ({lines} lines)",
            expected="no Xid",
            explanation="The ring buffer holds the messages since boot unless it has wrapped.",
            evidence=refs,
        )
    by_bdf = {g.bdf: g.label for g in f.inventory.gpus}
    counts: dict[tuple[str, int], int] = {}
    for event in events:
        counts[(event.bdf, event.xid)] = counts.get((event.bdf, event.xid), 0) + 1
    parts = []
    for (bdf, xid), n in sorted(counts.items()):
        meaning = XID_MEANING.get(xid, "see NVIDIA's Xid catalog")
        parts.append(f"Xid {xid} ({meaning}) on {by_bdf.get(bdf, f'GPU {bdf}')} ×{n}")
    xids = {e.xid for e in events}
    subjects = sorted({by_bdf.get(e.bdf, f"GPU {e.bdf}") for e in events})
    return problem(
        check,
        AREA,
        title,
        _xid_severity(xids),
        "; ".join(parts),
        "no Xid events",
        "Xid lines are the driver's record of GPU faults. 79 (fallen off the bus) points at PCIe/power/thermal "
        "hardware; 48/94/95 are ECC errors and 63/64 row-remapping events (see gpu.ecc_errors); 74 is NVLink. "
        "13/31/43 usually come from the application (bad kernel, illegal address) and 45 follows a killed process. "
        "Last line: " + events[-1].line[:200],
        _xid_fix(xids, f.platform),
        subjects=subjects,
        evidence=refs,
    )
