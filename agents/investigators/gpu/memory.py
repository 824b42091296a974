"""One GPU memory event, one severity: the place gpu.ecc_errors and gpu.xid both ask how serious a GPU's memory state is.

A memory error shows twice: as NVML state (remapped rows, a remap pending or failed, volatile uncorrectable counts,
pages pending retirement) and as Xids in the kernel log (48 double-bit error, 63 row-remap recorded, 64 remap
failure, 94 contained, 95 uncontained). Both checks read the same event, so both take its severity from
:func:`memory_event`, which reads both sources. The grading follows NVIDIA's "GPU Memory Error Management"
(docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt): a contained uncorrectable error has its page offlined, unaffected
work keeps running and the pending remap takes effect "when GPU reset occurs as a part of the regular GPU/VM service
window"; a correctable error's remap likewise waits for the next reset with no data at risk; an uncontained error
(Xid 95) or a remap failure (no spare row) cannot wait.
"""

from __future__ import annotations

from rigaudit.agents.facts.gpu_address import gpu_identity, gpu_selector, gpu_words
from rigaudit.agents.facts.gpus import Gpu
from rigaudit.agents.facts.platform import Platform, fix_where
from rigaudit.agents.investigators.cloud import for_cloud
from rigaudit.tools.core.record import Record
from rigaudit.tools.schema.finding import CommandAction, Fix, FixKind, Severity, Where

MEMORY_XIDS = frozenset({48, 63, 64, 94, 95})
"""The Xids that report a GPU memory event (NVIDIA's memory error management note, 'User Visible Statistics')."""
XID_ORDER = (95, 64, 48, 94, 63)
"""The memory Xids, most severe first: the one a fix of their event follows."""
SOURCE = "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html"


class MemoryEvent(Record):
    severity: Severity
    state: str
    """What the event is, in words (``uncorrectable error contained, remap pending``)."""
    urgency: str
    """When to act: ``now``, ``at the next service window``, ``RMA``."""
    restart_app: bool = False
    """The application that hit the error is to be restarted now (Xid 94: contained to it, NVIDIA's resolution)."""


def memory_event(
    xids: frozenset[int], remap: list[int] | None, uncorrected: int | None, pages_pending: int | None
) -> MemoryEvent | None:
    """The memory event NVML shows on one GPU, graded with the memory Xids logged for it; None when NVML shows none
    (the Xid log alone then keeps NVIDIA's catalog grading: it cannot say whether a reset has dealt with it since).

    ``remap``: nvmlDeviceGetRemappedRows (correctable rows, uncorrectable rows, pending, failure)."""
    corr, unc, pending, failed = (int(v) for v in remap) if remap is not None and len(remap) == 4 else (0, 0, 0, 0)
    pending = pending or int(bool(pages_pending))
    uncorrected = uncorrected or 0
    if failed:
        return MemoryEvent("critical", "row remapping failed: a bank has no spare row left", "RMA")
    if not (pending or uncorrected):
        return None
    if 95 in xids:
        return MemoryEvent("critical", "uncontained uncorrectable memory error (Xid 95)", "now")
    if 48 in xids:
        return MemoryEvent("high", "double-bit ECC error (Xid 48)" + (", remap pending" if pending else ""), "now")
    if unc or uncorrected:
        if 94 in xids and pending:
            return MemoryEvent(
                "medium",
                "uncorrectable error contained (Xid 94): its page is offlined, the row remap pending",
                "at the next service window",
                restart_app=True,
            )
        state = "uncorrectable error" + (", remap pending" if pending else " (no remap pending)")
        return MemoryEvent("high", state + "; containment not shown in the kernel log", "now")
    return MemoryEvent(
        "low",
        f"correctable errors: {corr} row(s) remapped, the remap pending until the next reset (no data at risk)",
        "at the next service window",
    )


def reset_where(platform: Platform) -> Where:
    """Where a GPU reset runs: with the NVIDIA driver that holds the GPU (this host or VM guest; a container's host)."""
    return fix_where(platform, "gpu_driver")


def reset_actions(gpus: list[Gpu], where: Where) -> list[CommandAction]:
    """A reset of each GPU, named the way ``where`` knows it (the index where the audit read it, the UUID on a
    container's host, serial and UUID in words on a hypervisor: never a guest's index there)."""
    actions = []
    for gpu in gpus:
        arg = gpu_selector(gpu, where)
        words = f"reset {gpu_words(gpu, where)} with every process on it stopped"
        if where == "hypervisor":
            words = f"stop the VM's processes on it, then reset or power-cycle {gpu_words(gpu, where)} from there"
        actions.append(CommandAction(description=words, argv=("nvidia-smi", "-r", "-i", arg) if arg else ()))
    return actions


def _rma_words(gpu: Gpu, where: Where) -> str:
    """The GPU as an RMA names it: by serial and UUID on every layer (the vendor knows no index or bus address)."""
    return gpu_words(gpu, where) if where == "hypervisor" else f"{gpu.label}: {gpu_identity(gpu)}"


def memory_fix(platform: Platform, events: list[tuple[Gpu, MemoryEvent]]) -> Fix:
    """The one fix of the memory events ``events`` (each GPU with its event), for gpu.ecc_errors and gpu.xid alike:
    a remap failure is drained and replaced; a contained error's application is restarted now; a pending remap waits
    for a reset (in a VM guest a restart of the VM), now or at the next service window."""
    failed = [g for g, e in events if e.urgency == "RMA"]
    if failed:
        kind: FixKind = "hardware"
        where = fix_where(platform, "hardware")
        summary = "Drain and RMA the GPUs whose row remapping failed (a reset gives no spare row back): " + "; ".join(
            _rma_words(g, where) for g in failed
        )
        actions: tuple[CommandAction, ...] = (
            CommandAction(description="drain the server off it and keep new work off it until it is replaced"),
            CommandAction(
                description="open an RMA with the vendor, quoting the GPU's serial (include nvidia-bug-report.sh output)"
            ),
        )
    else:
        kind = "reboot"
        where = reset_where(platform)
        soon = all(e.urgency == "at the next service window" for _, e in events) and bool(events)
        when = "at the next service window" if soon else "now"
        gpus = [g for g, _ in events]
        vm = platform.in_vm and not platform.in_container
        reset = (
            f"restart this VM {when} (the hypervisor resets its passed-through GPUs with it)"
            if vm
            else f"reset the affected GPUs {when}"
        ) + " so pending remaps take effect"
        summary = reset[0].upper() + reset[1:]
        steps: list[CommandAction] = []
        if any(e.restart_app for _, e in events):
            summary = (
                "Restart the application that hit the contained error now (Xid 94: its page is offlined, other work "
                f"on the GPU is unaffected); {reset}"
            )
            steps.append(CommandAction(description="restart the serving application that hit the error, now"))
        if vm:
            names = ", ".join(g.label for g in gpus)
            steps.append(
                CommandAction(
                    description=f"{when}: stop the server, then restart this VM (a reboot of the guest, or a restart "
                    f"from the cloud console) so the hypervisor resets {names}; nvidia-smi -r inside a guest is not a "
                    "provider's documented reset"
                )
            )
        else:
            steps += [CommandAction(description=f"{when}: stop the server on them"), *reset_actions(gpus, where)]
        actions = tuple(steps)
    fix = Fix(
        kind=kind,
        where=where,
        summary=summary,
        actions=actions,
        risk="medium",
        verify="nvidia-smi -q -d ROW_REMAPPER,ECC: Pending: No, Remapping Failure Occurred: No, volatile uncorrectable 0",
        revert="none",
        persist="remaps are stored on the GPU",
    )
    return for_cloud(fix, platform, failed)  # an RMA on a cloud: the provider's steps
