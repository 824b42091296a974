"""Hardware fixes seen from a cloud VM guest: nobody there can reseat, cool, re-cable, reset or replace a board.

On a cloud instance the hypervisor layer is the provider. What a user can do about a GPU whose link, NVLink, memory,
cooling or power misbehaves, or that fell off the bus, is what the provider documents for its instances: on Azure a
restart of the VM, then a deallocate and start (it moves the VM to other hardware) and a report through Guest Health
Reporting or support; on GCP and AWS a stop and start of the instance (a reboot keeps the same hardware) and a case
with support. The report names each board by serial and UUID: the guest's PCI addresses and GPU indices mean nothing
to the provider. A BIOS/UEFI setting, Resizable BAR or a PCIe register under the GPUs is the provider's too: the guest
cannot change it (a register write from a guest may never reach the device), so the fix is a report to the provider.
"""

from __future__ import annotations

from collections.abc import Iterable

from rigaudit.agents.facts.gpu_address import gpu_identity
from rigaudit.agents.facts.gpus import Gpu
from rigaudit.agents.facts.platform import Platform
from rigaudit.tools.schema.finding import Action, CommandAction, Fix, PciRegisterAction

_NAMES = {"azure": "Azure", "gcp": "GCP", "aws": "AWS", "oci": "OCI"}
_STOP_START = {
    "gcp": "gcloud compute instances stop INSTANCE, then gcloud compute instances start INSTANCE, or the console",
    "aws": "aws ec2 stop-instances --instance-ids ID, then aws ec2 start-instances --instance-ids ID, or the console",
}


def cloud_name(cloud: str) -> str:
    """``Azure``, ``GCP``, ``AWS``: the provider as its users write it."""
    return _NAMES.get(cloud, cloud)


def provider_steps(cloud: str, gpus: Iterable[Gpu] = ()) -> tuple[str, tuple[Action, ...]]:
    """What a user of ``cloud`` does about the provider's hardware under ``gpus``: a sentence and its steps, the GPUs
    named by serial and UUID."""
    name = cloud_name(cloud)
    named = "; ".join(gpu_identity(g) for g in gpus) or "the GPUs named in this finding, by serial and UUID"
    if cloud == "azure":
        return (
            "Azure VM: the host and its GPUs are Microsoft's. Restart the VM once; if the fault returns, deallocate "
            "and start it (it moves to other hardware) and report the node through Azure Guest Health Reporting or "
            "Azure support, naming the GPUs by serial and UUID",
            (
                CommandAction(description="restart the VM once (az vm restart, or Restart in the portal); then audit again"),
                CommandAction(
                    description="if the fault returns: deallocate the VM and start it again (az vm deallocate, then "
                    "az vm start: a stop and start that releases the host, where a restart keeps it)"
                ),
                CommandAction(
                    description=f"report the node through Azure Guest Health Reporting (GHR) or an Azure support "
                    f"request naming {named}"
                ),
            ),
        )
    how = _STOP_START.get(cloud, f"the {name} console or CLI")
    return (
        f"Cloud instance ({name}): the hardware is the provider's. Stop and start the instance to move it to other "
        f"hardware; if the fault returns, report it to {name} support, naming the GPUs by serial and UUID",
        (
            CommandAction(
                description=f"stop and start this instance ({how}; a reboot keeps the same hardware, a stop and start "
                "does not); then audit again"
            ),
            CommandAction(description=f"if it persists: open a case with {name} support naming {named}"),
        ),
    )


def for_cloud(fix: Fix, platform: Platform, gpus: Iterable[Gpu] = (), also: tuple[Action, ...] = ()) -> Fix:
    """``fix`` as a cloud user can carry it out: unchanged unless it is a hardware fix or a reboot for the provider's
    layer; ``also`` are steps of ``fix`` that stay the guest's (collect a bug report first)."""
    cloud = platform.cloud
    if not platform.in_vm or not cloud:
        return fix
    if (fix.kind == "firmware" and fix.where == "hypervisor") or any(isinstance(a, PciRegisterAction) for a in fix.actions):
        return _provider_setting(fix, cloud, gpus)
    if fix.kind not in ("hardware", "reboot") or fix.where != "hypervisor":
        return fix
    summary, actions = provider_steps(cloud, gpus)
    return fix.model_copy(
        update={
            "summary": f'{summary}. (On the physical host the fix would be "{fix.summary}")',
            "actions": (*also, *actions),
            "revert": "none",
            "persist": "a new host keeps the instance off the faulty hardware",
        }
    )


def _provider_setting(fix: Fix, cloud: str, gpus: Iterable[Gpu]) -> Fix:
    """A firmware setting or a device register under a cloud guest's GPUs: the provider's, reported to it."""
    name = cloud_name(cloud)
    named = "; ".join(gpu_identity(g) for g in gpus) or "the GPUs named in this finding, by serial and UUID"
    return fix.model_copy(
        update={
            "where": "hypervisor",
            "summary": f"Cloud instance ({name}): the firmware and the PCIe settings under the GPUs are the "
            f"provider's; the guest cannot change them (a register write from the guest may never reach the device). "
            f"Report it to {name} support, naming the GPUs by serial and UUID",
            "actions": (
                CommandAction(
                    description=f"open a case with {name} support naming {named}, quoting this finding's observed "
                    "and expected values; nothing in the guest changes it"
                ),
            ),
            "revert": "none",
            "persist": "",
        }
    )
