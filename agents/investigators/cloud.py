"""Hardware fixes seen from a cloud VM guest: nobody there can reseat, cool, re-cable or replace a board.

On a cloud instance the hypervisor layer is the provider. What a user can do about a GPU whose link, NVLink, memory,
cooling or power misbehaves is a stop and start of the instance (unlike a reboot, it places the instance on other
hardware) and, if the fault follows, a report to the provider naming the board by serial and UUID (the guest's PCI
addresses and GPU indices mean nothing there).
"""

from __future__ import annotations

from collections.abc import Iterable

from rigaudit.agents.facts.gpu_address import gpu_identity
from rigaudit.agents.facts.gpus import Gpu
from rigaudit.agents.facts.platform import Platform
from rigaudit.tools.model.finding import CommandAction, Fix


def for_cloud(fix: Fix, platform: Platform, gpus: Iterable[Gpu] = ()) -> Fix:
    """``fix`` as a cloud user can carry it out: unchanged unless it is a hardware fix for the provider's layer."""
    cloud = platform.cloud
    if fix.kind != "hardware" or fix.where != "hypervisor" or not platform.in_vm or not cloud:
        return fix
    named = "; ".join(gpu_identity(g) for g in gpus) or "the GPUs named in this finding, by serial and UUID"
    return fix.model_copy(
        update={
            "summary": f"Cloud instance ({cloud}): the hardware is the provider's. Stop and start the instance to move it "
            f"to other hardware; if the fault returns, report it to {cloud} support. (On the physical host the fix "
            f"would be: {fix.summary[:1].lower() + fix.summary[1:]})",
            "actions": (
                CommandAction(
                    description=f"stop and start this instance from the {cloud} console or CLI (a reboot keeps the same "
                    "hardware; a stop and start does not); then audit again"
                ),
                CommandAction(description=f"if it persists: open a case with {cloud} support naming {named}"),
            ),
            "revert": "none",
            "persist": "a new host keeps the instance off the faulty hardware",
        }
    )
