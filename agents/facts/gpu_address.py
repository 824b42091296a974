"""How a GPU is named on the layer a fix runs on: an address valid there, or words for a person.

A GPU index or a PCI address means something only where it was read. In a container the NVML index is the
container's (``NVIDIA_VISIBLE_DEVICES=2,3`` makes the host's GPU2 the container's GPU0), while the PCI address is
the host's own (one kernel). In a VM guest both are the guest's: on the hypervisor the passed-through GPU has another
address and no NVIDIA driver bound to it. The UUID is the same wherever the NVIDIA driver runs; the serial and the PCI
device id are what the hypervisor's admin or a cloud provider can match.
"""

from __future__ import annotations

from rigaudit.agents.facts.gpu_models import short_name
from rigaudit.agents.facts.gpus import Gpu, GpuInventory
from rigaudit.tools.schema.finding import Where


def gpu_selector(gpu: Gpu, where: Where) -> str | None:
    """The ``nvidia-smi -i`` argument that names ``gpu`` to a command run on ``where``, or None where no address
    read here is valid (the hypervisor, another VM)."""
    if where in ("hypervisor", "guest"):
        return None
    if where == "container_host":
        return gpu.uuid or gpu.bdf
    return str(gpu.index) if gpu.index is not None else gpu.bdf


def gpu_identity(gpu: Gpu) -> str:
    """``NVIDIA H200, serial 1654923000123, UUID GPU-8f3c…, PCI id 10de:2335``: what identifies the board anywhere."""
    parts = [short_name(gpu.name)]
    if gpu.serial:
        parts.append(f"serial {gpu.serial}")
    if gpu.uuid:
        parts.append(f"UUID {gpu.uuid}")
    if gpu.device_id:
        parts.append(f"PCI id 10de:{gpu.device_id.removeprefix('0x')}")
    return ", ".join(parts)


HYPERVISOR_LOOKUP = (
    "find its host address in the VM's definition (libvirt: virsh dumpxml VM | grep -A8 hostdev; Proxmox: qm config "
    "VMID | grep hostpci; cloud: the instance's GPU slot, through the provider's support)"
)


def gpu_words(gpu: Gpu, where: Where) -> str:
    """How to point a person at ``gpu`` on ``where``."""
    if where == "hypervisor":
        return f"the {gpu_identity(gpu)} (this VM sees it as {gpu.label}): {HYPERVISOR_LOOKUP}"
    if where == "container_host":
        seen = f"{gpu.label} inside the container"
        return f"the GPU at PCI {gpu.bdf}" + (f" ({gpu.uuid}; {seen})" if gpu.uuid else f" ({seen})")
    return gpu.label


def index_selector(inventory: GpuInventory, index: int, where: Where) -> str:
    """The ``-i`` argument for the GPU NVML calls ``index`` here, valid on ``where`` (the index itself when the GPU
    is not in the inventory, or on the layer that read it)."""
    gpu = inventory.by_index(index)
    return (gpu_selector(gpu, where) if gpu is not None else None) or str(index)
