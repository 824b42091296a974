"""firmware facts: each GPU's BAR1 and VBIOS, the CPU's identity, ACPI CPPC and the scaling driver."""

from __future__ import annotations

import re
from collections.abc import Mapping

from rigaudit.agents.facts.cpufreq_drivers import FrequencyDrivers, collect_frequency_drivers
from rigaudit.agents.facts.gpus import PCI_DEVICES, Gpu, collect_gpus
from rigaudit.agents.facts.p2p_context import P2pContext, collect_p2p_context
from rigaudit.agents.facts.platform import Platform, detect_platform
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, dir_ref, file_ref, nvml_ref
from rigaudit.tools.pci.sysfs import ConfigRead, read_config
from rigaudit.tools.schema.finding import Area, CommandAction, Fix, Risk, Where

AREA: Area = "firmware"


NVIDIA_BAR1 = 1


CPPC_DIR = "/sys/devices/system/cpu/cpu0/acpi_cppc"


SCALING_DRIVER = "/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver"


GiB = 1 << 30


MiB = 1 << 20


class GpuFirmware(Record):
    gpu: Gpu
    bar1: int | None
    """BAR1 size in bytes: NVML bar1Total, else the sysfs ``resource`` line of BAR 1."""
    vram: int | None
    vbios: str | None
    config: ConfigRead | None
    refs: tuple[str, ...]


class CpuInfo(Record):
    vendor: str | None
    family: int | None
    model: int | None
    model_name: str | None
    cppc_flag: bool

    @property
    def amd_pstate_capable(self) -> bool:
        """Zen 2 and later (family 0x17 model >= 0x30, 0x19, 0x1a...): amd_pstate's targets."""
        if self.vendor != "AuthenticAMD" or self.family is None:
            return False
        return self.family > 0x17 or (self.family == 0x17 and (self.model or 0) >= 0x30)


class FirmwareFacts(Record):
    gpus: tuple[GpuFirmware, ...]
    nvml_error: str | None
    platform: Platform
    cpu: CpuInfo | None
    cppc_entries: tuple[str, ...] | None
    """``acpi_cppc`` entries of cpu0, or ``None`` when the directory does not exist."""
    cppc_error: str | None
    scaling_driver: str | None
    refs: Mapping[str, tuple[str, ...]]
    """Evidence refs by topic: ``cpu``, ``cppc``."""
    context: P2pContext | None = None
    """What reaches GPU memory through BAR1 here: PCIe peer traffic, GPUDirect RDMA NICs."""
    drivers: FrequencyDrivers | None = None
    """Whether the running kernel has amd_pstate: the premise of every CPPC verdict (CPPC serves only amd_pstate)."""


def parse_cpuinfo(text: str | None) -> CpuInfo | None:
    """The first processor's vendor, family, model and flags."""
    if not text:
        return None
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())

    def number(key: str) -> int | None:
        try:
            return int(fields[key], 0) if key in fields else None
        except ValueError:
            return None

    return CpuInfo(
        vendor=fields.get("vendor_id") or ("Arm" if "CPU implementer" in fields else None),
        family=number("cpu family"),
        model=number("model"),
        model_name=fields.get("model name"),
        cppc_flag="cppc" in fields.get("flags", "").split(),
    )


def _bar_size(resource: str | None, index: int) -> int | None:
    """Size of BAR ``index`` from sysfs ``resource`` (``start end flags`` per line)."""
    if resource is None:
        return None
    lines = resource.splitlines()
    if index >= len(lines):
        return None
    try:
        start, end, _flags = (int(x, 16) for x in lines[index].split()[:3])
    except ValueError:
        return None
    return end - start + 1 if end > start else None


async def _gpu_firmware(probe: Probe, gpu: Gpu) -> GpuFirmware:
    refs: list[str] = []
    bar1 = vram = None
    vbios = None
    if gpu.index is not None:
        bar, mem, bios = await probe.gather(
            lambda: probe.nvml("nvmlDeviceGetBAR1MemoryInfo", gpu.index or 0),
            lambda: probe.nvml("nvmlDeviceGetMemoryInfo", gpu.index or 0),
            lambda: probe.nvml("nvmlDeviceGetVbiosVersion", gpu.index or 0),
        )
        refs += [nvml_ref(fn, (gpu.index,)) for fn in ("nvmlDeviceGetBAR1MemoryInfo", "nvmlDeviceGetMemoryInfo")]
        if bar.ok and isinstance(bar.value, dict) and isinstance(bar.value.get("bar1Total"), int):
            bar1 = int(bar.value["bar1Total"])
        if mem.ok and isinstance(mem.value, dict) and isinstance(mem.value.get("total"), int):
            vram = int(mem.value["total"])
        if bios.ok and isinstance(bios.value, str):
            vbios = bios.value.strip()
            refs.append(nvml_ref("nvmlDeviceGetVbiosVersion", (gpu.index,)))
    config = await read_config(probe, gpu.bdf)
    refs.append(config.ref)
    if bar1 is None:
        path = f"{PCI_DEVICES}/{gpu.bdf}/resource"
        bar1 = _bar_size(await probe.text(path), NVIDIA_BAR1)
        refs.append(file_ref(path))
    if vbios is None:
        path = f"/proc/driver/nvidia/gpus/{gpu.bdf}/information"
        info = await probe.text(path)
        match = re.search(r"^Video BIOS:\s*(\S+)", info or "", re.MULTILINE)
        if match and "?" not in match.group(1):
            vbios = match.group(1)
            refs.append(file_ref(path))
    return GpuFirmware(gpu, bar1, vram, vbios, config, tuple(refs))


async def collect(probe: Probe) -> FirmwareFacts:
    inventory = await collect_gpus(probe)
    gpus = await probe.gather(*[lambda g=g: _gpu_firmware(probe, g) for g in inventory.gpus])
    cpuinfo, driver = await probe.gather(lambda: probe.text("/proc/cpuinfo"), lambda: probe.text(SCALING_DRIVER))
    cppc = await probe.list_dir(CPPC_DIR)
    platform = await detect_platform(probe)
    return FirmwareFacts(
        gpus=tuple(gpus),
        nvml_error=inventory.nvml_error,
        platform=platform,
        cpu=parse_cpuinfo(cpuinfo),
        cppc_entries=cppc.entries,
        cppc_error=cppc.error,
        scaling_driver=driver.strip() if driver is not None else None,
        refs={"cpu": (file_ref("/proc/cpuinfo"),), "cppc": (dir_ref(CPPC_DIR), file_ref(SCALING_DRIVER))},
        context=await collect_p2p_context(probe, inventory),
        drivers=await collect_frequency_drivers(probe),
    )


def fix_where(platform: Platform) -> Where:
    """BIOS and VBIOS are the machine's: the hypervisor's below a VM guest, the host's below a container."""
    return layer_where(platform, "firmware")


def firmware_fix(platform: Platform, summary: str, step: str, verify: str, risk: Risk = "low") -> Fix:
    """A fix made in the machine's firmware (a BIOS setting, a flash), in one step that ends with a reboot."""
    return Fix(
        kind="firmware",
        where=fix_where(platform),
        summary=summary,
        actions=(CommandAction(description=step),),
        risk=risk,
        verify=verify,
    )


def size_text(n: int) -> str:
    if n >= GiB:
        return f"{n / GiB:.3g} GiB"
    return f"{n / MiB:.0f} MiB"
