"""The GPU inventory: NVIDIA GPUs from sysfs, matched with NVML indices where NVML works."""

from __future__ import annotations

import re

from rigaudit.agents.facts.platform import detect_platform
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.pci import is_bdf

NVIDIA_VENDOR = "0x10de"
PCI_DEVICES = "/sys/bus/pci/devices"
VIRTUALIZATION_VGPU = 2
"""NVML_GPU_VIRTUALIZATION_MODE_VGPU (0 none, 1 passthrough, 3 a vGPU host's physical GPU)."""
MAX_GPUS = 64
"""More GPUs than this in one host is not believed (a damaged or crafted NVML answer)."""


def normalize_bdf(bus_id: str) -> str:
    """``00000000:03:00.0`` (NVML) or ``0000:03:00.0`` (sysfs) -> ``0000:03:00.0``."""
    bus_id = bus_id.strip().lower()
    domain, _, rest = bus_id.partition(":")
    if not rest:
        return bus_id
    try:
        return f"{int(domain, 16):04x}:{rest}"
    except ValueError:
        return bus_id


_UUID = r"^(GPU-[0-9a-fA-F-]{36}|gpu-uuid:[0-9a-f]{16})$"
_SERIAL = r"^([0-9A-Za-z]{1,24}|serial:[0-9a-f]{16})$"
"""Either as NVML answers, or as a transcript keeps it (a digest: rigaudit.tools.redact.digest_ids)."""
_DEVICE_ID = r"^0x[0-9a-fA-F]{4}$"


def _checked(value: object, pattern: str) -> str | None:
    """A value from an untrusted snapshot, kept only when it has the shape it must have."""
    return value if isinstance(value, str) and re.match(pattern, value) else None


class Gpu(Record):
    bdf: str
    index: int | None
    """NVML index, or ``None`` when NVML could not be matched."""
    name: str
    numa_node: int | None
    local_cpulist: str | None
    uuid: str | None = None
    """``GPU-8f3c...``: the same on every layer that runs the driver (host, guest, container)."""
    serial: str | None = None
    """The board serial number (printed on the card; what a hypervisor's admin or a cloud provider can match)."""
    device_id: str | None = None
    """The PCI device id (``0x2335``): the same in a VM guest and on its hypervisor."""
    vgpu: bool = False
    """An NVIDIA vGPU (NVML virtualization mode VGPU): the physical GPU's sensors, power, PCIe link, BAR1 and MIG
    are the hypervisor's (:mod:`.vgpu`)."""

    @property
    def label(self) -> str:
        return f"GPU{self.index} ({self.bdf})" if self.index is not None else f"GPU {self.bdf}"

    @property
    def sysfs(self) -> str:
        return f"{PCI_DEVICES}/{self.bdf}"


class GpuInventory(Record):
    gpus: tuple[Gpu, ...]
    nvml_ok: bool
    nvml_error: str | None
    """Why NVML is unusable (no library, no driver...), when it is."""
    nvml_count: int | None
    driver_version: str | None
    elsewhere: int = 0
    """GPUs the machine's PCI bus shows that NVML does not give this container or job step (another tenant's). A job
    step given no GPU lists the bus's GPUs (none on NVML), and counts them here too."""
    confined: str = ""
    """The device-constrained job step the audit runs in (``Slurm job 7 step 0``), whose NVML shows only its GPUs."""

    def by_index(self, index: int) -> Gpu | None:
        return next((g for g in self.gpus if g.index == index), None)

    @property
    def nvml_indices(self) -> list[int]:
        return [g.index for g in self.gpus if g.index is not None]


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


async def _sysfs_gpus(probe: Probe) -> list[str]:
    listing = await probe.list_dir(PCI_DEVICES)
    if listing.entries is None:
        return []
    bdfs = [b for b in listing.entries if is_bdf(b)]  # a name that is not a PCI address is no device
    vendors = await probe.gather(*[lambda b=b: probe.text(f"{PCI_DEVICES}/{b}/vendor") for b in bdfs])
    candidates = [b for b, v in zip(bdfs, vendors, strict=False) if v is not None and v.strip().lower() == NVIDIA_VENDOR]
    classes = await probe.gather(*[lambda b=b: probe.text(f"{PCI_DEVICES}/{b}/class") for b in candidates])
    # 0x03xxxx display controllers (VGA 0x0300, 3D 0x0302); skip audio functions and NVSwitches.
    return [b for b, c in zip(candidates, classes, strict=False) if c is not None and c.strip().lower().startswith("0x03")]


_NvmlGpu = tuple[int, str, str | None, str | None, bool]
"""What NVML says of a GPU: its index, name, UUID, serial, and whether it is a vGPU."""


async def _nvml_gpus(probe: Probe, count: int) -> dict[str, _NvmlGpu]:
    """The ``count`` GPUs NVML lists, by PCI address (one whose address NVML does not give is left out)."""
    infos = await probe.gather(*[lambda i=i: probe.nvml("nvmlDeviceGetPciInfo", i) for i in range(count)])
    names = await probe.gather(*[lambda i=i: probe.nvml("nvmlDeviceGetName", i) for i in range(count)])
    uuids = await probe.gather(*[lambda i=i: probe.nvml("nvmlDeviceGetUUID", i) for i in range(count)])
    serials = await probe.gather(*[lambda i=i: probe.nvml("nvmlDeviceGetSerial", i) for i in range(count)])
    modes = await probe.gather(*[lambda i=i: probe.nvml("nvmlDeviceGetVirtualizationMode", i) for i in range(count)])
    by_bdf: dict[str, _NvmlGpu] = {}
    for i, (info, name, uuid_read, serial_read, mode) in enumerate(zip(infos, names, uuids, serials, modes, strict=True)):
        if info.ok and isinstance(info.value, dict):
            bus_id = info.value.get("busId") or info.value.get("busIdLegacy")
            bdf = normalize_bdf(bus_id) if isinstance(bus_id, str) else ""
            if is_bdf(bdf):
                label = str(name.value)[:128] if name.ok else "NVIDIA GPU"
                by_bdf[bdf] = (
                    i,
                    label,
                    _checked(uuid_read.value, _UUID),
                    _checked(serial_read.value, _SERIAL),
                    mode.ok and mode.value == VIRTUALIZATION_VGPU,
                )
    return by_bdf


async def _gpus_at(probe: Probe, bdfs: list[str], by_bdf: dict[str, _NvmlGpu]) -> list[Gpu]:
    """Each GPU at ``bdfs`` with its NUMA node, local CPUs and device id from sysfs and what NVML says of it,
    in NVML's order (GPUs NVML does not list last)."""
    numa = await probe.gather(*[lambda b=b: probe.text(f"{PCI_DEVICES}/{b}/numa_node") for b in bdfs])
    cpus = await probe.gather(*[lambda b=b: probe.text(f"{PCI_DEVICES}/{b}/local_cpulist") for b in bdfs])
    devices = await probe.gather(*[lambda b=b: probe.text(f"{PCI_DEVICES}/{b}/device") for b in bdfs])
    gpus = []
    for bdf, node, cpulist, device in zip(bdfs, numa, cpus, devices, strict=True):
        found = by_bdf.get(bdf)
        index, label, uuid, serial, vgpu = found if found else (None, "NVIDIA GPU", None, None, False)
        gpus.append(
            Gpu(
                bdf,
                index,
                label,
                _int_or_none(node),
                cpulist.strip() if cpulist else None,
                uuid,
                serial,
                _checked(device.strip() if device else None, _DEVICE_ID),
                vgpu,
            )
        )
    gpus.sort(key=lambda g: (g.index is None, g.index if g.index is not None else 0, g.bdf))
    return gpus


async def collect_gpus(probe: Probe) -> GpuInventory:
    """Enumerate GPUs, once per audit (:meth:`Probe.derived`): every investigator asks."""
    return await probe.derived("gpus", _collect_gpus)


async def _collect_gpus(probe: Probe) -> GpuInventory:
    init = await probe.nvml("nvmlInit")
    nvml_error = init.error
    count: int | None = None
    driver: str | None = None
    by_bdf: dict[str, _NvmlGpu] = {}
    if init.ok:
        count_result, driver_result = await probe.gather(
            lambda: probe.nvml("nvmlDeviceGetCount"), lambda: probe.nvml("nvmlSystemGetDriverVersion")
        )
        driver = str(driver_result.value) if driver_result.ok else None
        if count_result.ok and isinstance(count_result.value, int) and not 0 <= count_result.value <= MAX_GPUS:
            nvml_error = f"nvmlDeviceGetCount answered {count_result.value}, not a GPU count (0 to {MAX_GPUS})"
        elif count_result.ok and isinstance(count_result.value, int):
            count = count_result.value
            by_bdf = await _nvml_gpus(probe, count)
        else:
            nvml_error = count_result.error
    sysfs_bdfs = await _sysfs_gpus(probe)
    bdfs = sorted(set(sysfs_bdfs) | set(by_bdf))
    elsewhere, confined = 0, ""
    platform = await detect_platform(probe)
    step = platform.job_step
    step_confined = step is not None and step.confines(count, len(bdfs)) is not False  # None: promised.pci says unknown
    if step is not None and step_confined and count is not None:
        confined = step.label
    if by_bdf and (platform.in_container or step_confined):
        # A container or a device-constrained job step sees the host's whole PCI bus in sysfs, but only the GPUs it
        # was given through NVML.
        elsewhere = len(set(bdfs) - set(by_bdf))
        bdfs = sorted(by_bdf)
    elif confined and count == 0:
        # A job step given no GPU: NVML lists none, the bus every GPU of the node (all another's, none missing).
        elsewhere = len(bdfs)
    gpus = await _gpus_at(probe, bdfs, by_bdf)
    return GpuInventory(tuple(gpus), init.ok and count is not None, nvml_error, count, driver, elsewhere, confined)
