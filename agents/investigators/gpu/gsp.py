"""gpu.gsp: GPU System Processor (GSP) firmware errors in the kernel log."""

from __future__ import annotations

import re

from rigaudit.agents.check import Check
from rigaudit.agents.facts.gpus import GpuInventory, normalize_bdf
from rigaudit.agents.facts.kernel_log import DMESG_REF, log_unavailable
from rigaudit.agents.facts.platform import Platform
from rigaudit.agents.investigators.gpu import premises
from rigaudit.agents.investigators.gpu.memory import reset_actions, reset_where
from rigaudit.tools.hosts.base import CommandResult
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix

GSP_XIDS = frozenset({119, 120})
_XID = r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): (\d+)"
_GSP = (
    r"(?i)"
    r"NVRM:.*(?:\bGSP\b|_kgsp|kgsp[A-Z])"
    r".*(?:time ?out|timed out|error|fail|crash|assert|heartbeat|not respond|hang|bootstrap)"
)
_PCI = r"\b([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)\b"


def gsp_lines(text: str) -> list[tuple[str, str | None]]:
    """(line, GPU BDF when the line names one) for every GSP failure line and Xid 119/120."""
    found: list[tuple[str, str | None]] = []
    for line in text.splitlines():
        xid = re.search(_XID, line)
        if xid and int(xid.group(2)) in GSP_XIDS:
            bdf = xid.group(1)
            found.append((line.strip(), normalize_bdf(bdf if "." in bdf else bdf + ".0")))
        elif xid is None and re.search(_GSP, line):
            pci = re.search(_PCI, line)
            bdf = pci.group(1) if pci else None
            found.append((line.strip(), normalize_bdf(bdf if "." in bdf else bdf + ".0") if bdf else None))
    return found


GSP_CHECK = Check(
    "gpu.gsp",
    "GSP firmware errors",
    reads="kernel log: NVRM GSP timeout/error lines (`_kgspRpcRecvPoll`, heartbeat, bootstrap failures), Xid 119/120",
    problem="any GSP error: the GPU stops answering until reset",
    fix="reset or reboot; newest driver of the branch",
    kinds=("reboot",),
    premises=(premises.PLATFORM_FIX, premises.KERNEL_LOG),
)


def judge_gsp(dmesg: CommandResult, inventory: GpuInventory, platform: Platform, proc_version: str | None) -> Finding:
    refs = (DMESG_REF,)
    if why := log_unavailable(dmesg, in_container=platform.in_container):
        return GSP_CHECK.unknown(why, evidence=refs)
    found = gsp_lines(dmesg.stdout)
    if not found:
        return GSP_CHECK.ok(
            f"no GSP timeout, GSP error or Xid 119/120 in the kernel log ({len(dmesg.stdout.splitlines())} lines)",
            expected="no GSP errors",
            evidence=refs,
        )
    by_bdf = {g.bdf: g.label for g in inventory.gpus}
    subjects = sorted({by_bdf.get(b, f"GPU {b}") for _, b in found if b}) or [g.label for g in inventory.gpus]
    open_module = proc_version is not None and "Open Kernel Module" in proc_version
    disable = (
        "the open kernel module requires GSP: it cannot be turned off"
        if open_module
        else "as a last resort on pre-Blackwell GPUs with the proprietary module: NVreg_EnableGpuFirmware=0 in "
        "/etc/modprobe.d (GSP off; not possible on Blackwell)"
    )
    where = reset_where(platform)
    fix = Fix(
        kind="reboot",
        where=where,
        summary="Recover the GPUs (reset or reboot) and move to the latest driver of the branch; GSP timeouts are "
        "driver/firmware bugs fixed release by release",
        actions=(
            CommandAction(description="stop the server, then reset each affected GPU (or reboot)"),
            *reset_actions([g for g in inventory.gpus if g.bdf in {b for _, b in found}] or list(inventory.gpus), where),
            CommandAction(description="update to the newest driver release of the branch (release notes list GSP fixes)"),
            CommandAction(description=disable),
            CommandAction(description="collect nvidia-bug-report.sh for NVIDIA if it repeats"),
        ),
        risk="medium",
        verify="dmesg | grep -i -e GSP -e 'Xid' shows nothing new after a load run",
        revert="reinstall the previous driver",
        persist="the installed driver persists",
    )
    return GSP_CHECK.problem_at(
        "high",
        f"{len(found)} GSP error lines; last: {found[-1][0][:220]}",
        "no GSP errors",
        "Modern NVIDIA drivers run most of the GPU's resource manager on the GSP, a processor on the GPU. When an RPC "
        "to it times out (Xid 119) or it reports an error (Xid 120), the GPU stops answering: CUDA calls hang or fail "
        "for every process on it, nvidia-smi stalls, and a tensor-parallel server freezes as a whole. Recovery needs "
        "a GPU reset or a reboot.",
        fix,
        subjects=subjects,
        evidence=refs,
    )
