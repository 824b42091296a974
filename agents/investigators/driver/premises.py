"""driver's premises: the facts its verdicts rest on (:mod:`rigaudit.agents.premise`), read off :class:`DriverFacts`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rigaudit.agents.facts import premise_reads as reads
from rigaudit.agents.facts.driver_support import BLACKWELL, OPEN_MIN_ARCH
from rigaudit.agents.facts.nvidia_driver import kernel_version
from rigaudit.agents.premise import Premise, Reading, held, missing

if TYPE_CHECKING:
    from rigaudit.agents.investigators.driver.facts import DriverFacts


def _gpus(facts: DriverFacts) -> Reading:
    if not facts.gpus:
        return held("no NVIDIA GPU" + (f"; NVML: {facts.nvml_error}" if facts.nvml_error else ""))
    return held(f"{len(facts.gpus)} GPU(s): {', '.join(dict.fromkeys(g.name for g in facts.gpus))}")


def _driver(facts: DriverFacts) -> Reading:
    version = kernel_version(facts.proc_version)[0] or facts.module_version or facts.nvml_version
    if version:
        return held(f"driver {version.strip()}")
    if facts.modules is not None and "nvidia" not in facts.modules:
        return held("the NVIDIA module is not loaded")
    return missing("/proc/driver/nvidia/version, /sys/module/nvidia/version or NVML would tell")


def _flavor_read(facts: DriverFacts) -> Reading | None:
    version, open_module = kernel_version(facts.proc_version)
    if open_module is not None and version is not None:
        return held("open kernel module" if open_module else "proprietary kernel module")
    if not facts.gpus or (facts.modules is not None and "nvidia" not in facts.modules):
        return held("no NVIDIA module loaded")
    return None


FLAVOR_UNREAD = "/proc/driver/nvidia/version ('Open Kernel Module' or not) would tell"


def _flavor(facts: DriverFacts) -> Reading:
    """The flavor decides the version's verdict on Blackwell (open only) and before Turing (proprietary only)."""

    read = _flavor_read(facts)
    if read is not None:
        return read
    archs = [a for a in facts.archs.values() if a is not None]
    if archs and all(OPEN_MIN_ARCH <= a < BLACKWELL for a in archs):
        return held("not needed: Turing to Hopper GPUs run either flavor")
    return missing(FLAVOR_UNREAD)


def _flavor_dmabuf(facts: DriverFacts) -> Reading:
    """The flavor decides GPUDirect RDMA only where nvidia_peermem is not loaded (DMA-BUF needs the open module)."""
    read = _flavor_read(facts)
    if read is not None:
        return read
    if facts.modules is not None and "nvidia_peermem" in facts.modules:
        return held("not needed: nvidia_peermem is loaded")
    return missing(FLAVOR_UNREAD)


def _modules(facts: DriverFacts) -> Reading:
    if facts.modules is None:
        return missing(f"/proc/modules: {facts.modules_error or 'not read'}; reading it (or lsmod) would tell")
    return held(f"{len(facts.modules)} modules loaded")


def _nvlink(facts: DriverFacts) -> Reading:
    if facts.nvswitch_pci:
        state = "not read" if facts.fabric_state is None else f"fabric state {facts.fabric_state}"
        return held(f"{len(facts.nvswitch_pci)} NVSwitch(es); {state}")
    return held("no NVSwitch on the PCI bus")


def _nvlink_domain(facts: DriverFacts) -> Reading:
    """Whether the GPUs are in a multi-node NVLink domain: NVML's fabric cluster UUID, else the GPU model."""
    if facts.fabric_cluster is not None:
        return held(f"fabric cluster {facts.fabric_cluster}, clique {facts.fabric_clique}")
    if facts.imex is not None:
        return held("GPUs of a multi-node NVLink rack (GB200/GB300)")
    if facts.gpus and not facts.nvml_ok:
        return missing(f"NVML fabric info (nvmlDeviceGetGpuFabricInfo: cluster UUID) would tell; NVML: {facts.nvml_error}")
    return held("no multi-node NVLink fabric reported")


def _gpu_config(facts: DriverFacts) -> Reading:
    vgpus = sum(1 for g in facts.gpus if g.vgpu)
    return held(f"{vgpus} vGPU(s)" if vgpus else "no vGPU")


def _kernel(facts: DriverFacts) -> Reading:
    return reads.kernel(facts.install.running)


PLATFORM = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.platform))
PLATFORM_FIX = Premise("platform", reads.PLATFORM_READS, lambda f: reads.platform(f.platform), guards=("problem",))
"""Where a fix runs (this host, the hypervisor, the container's host): a problem rests on it, an ok does not."""
GPUS = Premise("gpus", reads.GPUS_READS, _gpus)
DRIVER = Premise("driver", "`/proc/driver/nvidia/version`, `/sys/module/nvidia/version`, NVML", _driver)
FLAVOR = Premise("driver_flavor", "`/proc/driver/nvidia/version`, NVML GPU architecture", _flavor)
FLAVOR_DMABUF = Premise("driver_flavor", "`/proc/driver/nvidia/version`, `/proc/modules`", _flavor_dmabuf)
MODULES = Premise("modules", "`/proc/modules`", _modules)
NVLINK = Premise("nvlink", "NVIDIA PCI bridges (class 0x0680), NVML fabric info", _nvlink)
NVLINK_DOMAIN = Premise("nvlink", "NVML fabric info (cluster UUID, clique), the GPU model", _nvlink_domain)
GPU_CONFIG = Premise("gpu_config", "NVML virtualization mode", _gpu_config)
KERNEL = Premise("kernel", reads.KERNEL_READS, _kernel)
ORIGIN = Premise(
    "driver_origin",
    "the GPUs' bound driver (sysfs), `/run/nvidia/driver`, `/var/lib/dkms/nvidia`, the running kernel's modules.dep",
    lambda f: held(f.install.origin.said),
)
"""Where the driver comes from: a DKMS build, Ubuntu's precompiled modules, the GPU Operator or a guest (vfio-pci)."""
RDMA = Premise("rdma", reads.RDMA_READS, lambda f: reads.rdma(f.rdma))
NVML = Premise(
    "nvml",
    reads.NVML_READS,
    lambda f: held(f"driver {f.nvml_version or '?'}") if f.nvml_ok else missing(f"NVML: {f.nvml_error or 'not usable'}"),
)
OS = Premise("os", reads.OS_READS, lambda f: reads.os_image(f.platform.image), guards=())
"""How a fix persists (systemctl and /etc, or an image-based OS's own configuration): recorded, guarding no verdict."""
