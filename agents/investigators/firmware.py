"""firmware: what the UEFI/BIOS decided, as seen from Linux: BAR1 size, VBIOS versions, CPPC."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from rigaudit.agents.facts.gpus import PCI_DEVICES, Gpu, collect_gpus
from rigaudit.agents.facts.platform import Platform, detect_platform
from rigaudit.agents.findings import not_applicable, ok, problem, unknown
from rigaudit.agents.investigator import Investigator
from rigaudit.tools.model.finding import Area, CommandAction, Finding, Fix, Severity, Where
from rigaudit.tools.pci.sysfs import ConfigRead, read_config
from rigaudit.tools.probe import Probe, dir_ref, file_ref, nvml_ref

AREA: Area = "firmware"
CHECKS = ("firmware.rebar", "firmware.vbios_consistency", "firmware.cppc")
NVIDIA_BAR1 = 1
CPPC_DIR = "/sys/devices/system/cpu/cpu0/acpi_cppc"
SCALING_DRIVER = "/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver"
GiB = 1 << 30
MiB = 1 << 20


@dataclass(frozen=True)
class GpuFirmware:
    gpu: Gpu
    bar1: int | None
    """BAR1 size in bytes: NVML bar1Total, else the sysfs ``resource`` line of BAR 1."""
    vram: int | None
    vbios: str | None
    config: ConfigRead | None
    refs: tuple[str, ...]


@dataclass(frozen=True)
class CpuInfo:
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


@dataclass(frozen=True)
class FirmwareFacts:
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
        vendor=fields.get("vendor_id"),
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
    )


def _where(platform: Platform) -> Where:
    return "hypervisor" if platform.is_guest else "host"


def _size(n: int) -> str:
    if n >= GiB:
        return f"{n / GiB:.3g} GiB"
    return f"{n / MiB:.0f} MiB"


# -- firmware.rebar ------------------------------------------------------------------------


def judge_rebar(facts: FirmwareFacts) -> Finding:
    check, title = "firmware.rebar", "GPU BAR1 size (Resizable BAR / Above 4G decoding)"
    if not facts.gpus:
        return not_applicable(check, AREA, title, "no NVIDIA GPU found")
    evidence = [r for g in facts.gpus for r in g.refs if "Vbios" not in r and "/information" not in r]
    known = [g for g in facts.gpus if g.bar1 is not None]
    if not known:
        why = f"BAR1 size not readable (NVML: {facts.nvml_error or 'no BAR1 info'}; sysfs resource not readable)"
        return unknown(check, AREA, title, why, evidence=evidence)
    small: list[GpuFirmware] = []
    for g in known:
        assert g.bar1 is not None
        limit = g.vram // 4 if g.vram else 256 * MiB
        if g.bar1 < limit or g.bar1 <= 256 * MiB:
            small.append(g)
    rebar_notes = []
    for g in known:
        cap = g.config.config.rebar if g.config and g.config.config else None
        bar = cap.bar(NVIDIA_BAR1) if cap else None
        if bar is not None:
            rebar_notes.append((g, bar.current_size, bar.largest_supported))
    if not small:
        sizes = sorted({_size(g.bar1 or 0) for g in known})
        vram = sorted({_size(g.vram) for g in known if g.vram})
        observed = f"BAR1 {'/'.join(sizes)} on {len(known)}/{len(facts.gpus)} GPUs"
        observed += f" (VRAM {'/'.join(vram)})" if vram else ""
        if rebar_notes:
            at_max = sum(1 for _, cur, top in rebar_notes if top is not None and cur >= top)
            observed += f"; Resizable BAR capability present, BAR1 at its largest supported size on {at_max}/{len(rebar_notes)}"
        return ok(
            check,
            AREA,
            title,
            observed,
            expected="BAR1 at least as large as VRAM (or the largest size the GPU supports)",
            explanation="A large BAR1 lets the driver map all of a GPU's memory for PCIe peer access and GPUDirect RDMA.",
            evidence=evidence,
        )
    can_grow = [g for g, cur, top in rebar_notes if g in small and top is not None and top > cur]
    at_top = [g for g, cur, top in rebar_notes if g in small and top is not None and top <= cur]
    cap_unknown = [g for g in small if not (g.config and g.config.config and g.config.config.extended_known)]
    severity: Severity = "medium" if can_grow or cap_unknown else "low"
    if len(at_top) == len(small):
        return ok(
            check,
            AREA,
            title,
            "; ".join(f"{g.gpu.label}: BAR1 {_size(g.bar1 or 0)}, the largest size it supports" for g in small),
            expected="BAR1 at the largest supported size",
            explanation="The Resizable BAR capability shows BAR1 already at the largest size this GPU offers: a product "
            "limit, not a firmware setting.",
            evidence=evidence,
        )
    observed = "; ".join(
        f"{g.gpu.label}: BAR1 {_size(g.bar1 or 0)}" + (f" vs VRAM {_size(g.vram)}" if g.vram else "") for g in small
    )
    if can_grow:
        observed += f"; Resizable BAR supports a larger BAR1 on {len(can_grow)} of them"
    fix = Fix(
        kind="firmware",
        where=_where(facts.platform),
        summary="Enable Above 4G Decoding and Re-Size BAR Support in the BIOS/UEFI, then reboot",
        actions=(
            CommandAction(
                description="BIOS/UEFI: PCI Subsystem Settings: Above 4G Decoding = Enabled, Re-Size BAR Support = "
                "Enabled (Auto); boot in UEFI mode; on a hypervisor also give the VM a large enough 64-bit MMIO window"
            ),
        ),
        risk="low",
        verify="nvidia-smi -q -d MEMORY: BAR1 Memory Usage Total at least the framebuffer size; lspci -vvv: "
        "'Physical Resizable BAR: BAR 1: current size' at the largest supported size",
    )
    return problem(
        check,
        AREA,
        title,
        severity,
        observed=observed,
        expected="BAR1 at least as large as VRAM",
        explanation="BAR1 is the window through which the CPU, peer GPUs (PCIe P2P) and RDMA NICs reach GPU memory. A "
        "256 MiB window forces the driver to remap constantly or refuse large peer/RDMA registrations; with Above 4G "
        "decoding and Resizable BAR the firmware maps all of VRAM at boot."
        + (
            ""
            if can_grow or cap_unknown
            else " These GPUs expose no Resizable BAR capability: some models have a fixed small BAR1, so check the "
            "model's specification before changing firmware settings."
        ),
        fix=fix,
        subjects=[g.gpu.label for g in small],
        evidence=evidence,
    )


# -- firmware.vbios_consistency ------------------------------------------------------------


def judge_vbios(facts: FirmwareFacts) -> Finding:
    check, title = "firmware.vbios_consistency", "VBIOS versions of GPUs of one model"
    if not facts.gpus:
        return not_applicable(check, AREA, title, "no NVIDIA GPU found")
    evidence = [r for g in facts.gpus for r in g.refs if "Vbios" in r or "/information" in r]
    known = [g for g in facts.gpus if g.vbios]
    if not known:
        return unknown(check, AREA, title, f"VBIOS versions not readable (NVML: {facts.nvml_error or 'no VBIOS info'})")
    if len(facts.gpus) < 2:
        return not_applicable(check, AREA, title, "one GPU: nothing to compare its VBIOS with")
    groups: dict[str, dict[str, list[str]]] = {}
    for g in known:
        groups.setdefault(g.gpu.name, {}).setdefault(g.vbios or "", []).append(g.gpu.label)
    split = {name: versions for name, versions in groups.items() if len(versions) > 1}
    if not split:
        observed = "; ".join(f"{name}: VBIOS {next(iter(v))} on {len(next(iter(v.values())))} GPUs" for name, v in groups.items())
        if len(known) < len(facts.gpus):
            observed += f"; not readable on {len(facts.gpus) - len(known)} GPU(s)"
        return ok(check, AREA, title, observed, expected="one VBIOS version per GPU model", evidence=evidence)
    observed = "; ".join(
        f"{name}: " + ", ".join(f"{ver} on {', '.join(labels)}" for ver, labels in versions.items())
        for name, versions in split.items()
    )
    fix = Fix(
        kind="firmware",
        where=_where(facts.platform),
        summary="Bring every GPU of one model to the same VBIOS with the vendor's (OEM's) update package",
        actions=(
            CommandAction(
                description="Get the VBIOS bundle for this GPU model from the server vendor/NVIDIA support and flash all "
                "GPUs to the same version (nvflash or the OEM tool), then reboot"
            ),
        ),
        risk="medium",
        verify="nvidia-smi --query-gpu=name,vbios_version --format=csv shows one version per model",
    )
    return problem(
        check,
        AREA,
        title,
        "low",
        observed=observed,
        expected="one VBIOS version per GPU model",
        explanation="GPUs of one model with different VBIOS can differ in clocks, power limits, link training and "
        "bug fixes; in tensor parallelism the slowest GPU sets the pace, and mixed firmware makes issues hard to "
        "reproduce. Often harmless (a replaced board), so update only through the vendor's package.",
        fix=fix,
        subjects=[label for versions in split.values() for labels in versions.values() for label in labels],
        evidence=evidence,
    )


# -- firmware.cppc -------------------------------------------------------------------------


def judge_cppc(facts: FirmwareFacts) -> Finding:
    check, title = "firmware.cppc", "ACPI CPPC for amd_pstate"
    evidence = [*facts.refs.get("cpu", ()), *facts.refs.get("cppc", ())]
    cpu = facts.cpu
    if cpu is None or cpu.vendor is None:
        return unknown(check, AREA, title, "/proc/cpuinfo not readable", evidence=evidence)
    if cpu.vendor != "AuthenticAMD":
        return not_applicable(check, AREA, title, f"{cpu.model_name or cpu.vendor}: CPPC for amd_pstate concerns AMD CPUs")
    if facts.platform.kind == "vm":
        return not_applicable(check, AREA, title, "VM guest: CPU frequency is managed by the hypervisor's firmware and kernel")
    if not cpu.amd_pstate_capable:
        return not_applicable(
            check, AREA, title, f"{cpu.model_name or 'this AMD CPU'} predates Zen 2: amd_pstate does not support it"
        )
    if facts.platform.is_guest and facts.scaling_driver is None and facts.cppc_entries is None:
        return unknown(
            check,
            AREA,
            title,
            f"{facts.platform.kind} with no cpufreq visible: the CPU's frequency and CPPC belong to the host; check there",
            evidence=evidence,
        )
    if facts.cppc_entries is not None:
        return ok(
            check,
            AREA,
            title,
            f"{CPPC_DIR} present ({', '.join(facts.cppc_entries[:4]) or 'empty'}) on {cpu.model_name}",
            expected="acpi_cppc present (firmware exposes CPPC)",
            explanation="The firmware publishes CPPC, so amd_pstate can drive this CPU.",
            evidence=evidence,
        )
    if facts.scaling_driver and facts.scaling_driver.startswith("amd-pstate"):
        return ok(check, AREA, title, f"scaling_driver {facts.scaling_driver}", evidence=evidence)
    if facts.cppc_error not in (None, "ENOENT"):
        return unknown(check, AREA, title, f"{CPPC_DIR} not listable: {facts.cppc_error}", evidence=evidence)
    fix = Fix(
        kind="firmware",
        where=_where(facts.platform),
        summary="Enable CPPC in the BIOS so the kernel can use amd_pstate",
        actions=(
            CommandAction(
                description="BIOS: AMD CBS > NBIO Common Options > SMU Common Options > CPPC = Enabled (and 'CPPC Preferred "
                "Cores' = Enabled where offered), then reboot"
            ),
        ),
        risk="low",
        verify=f"ls {CPPC_DIR} lists highest_perf, nominal_perf...; dmesg has no 'amd_pstate: the _CPC object is not present'",
    )
    return problem(
        check,
        AREA,
        title,
        "medium",
        observed=f"{CPPC_DIR} missing on {cpu.model_name} (scaling_driver {facts.scaling_driver or 'unknown'})",
        expected="acpi_cppc present",
        explanation="amd_pstate needs the ACPI _CPC objects the firmware publishes when CPPC is enabled. Without them "
        "the kernel falls back to acpi-cpufreq with three coarse P-states and slow transitions, which delays the CPU "
        "thread that launches GPU kernels and lengthens time per output token in latency-bound decoding.",
        fix=fix,
        subjects=["cpu0"],
        evidence=evidence,
    )


def judge(facts: FirmwareFacts) -> list[Finding]:
    return [judge_rebar(facts), judge_vbios(facts), judge_cppc(facts)]


INVESTIGATOR: Investigator[FirmwareFacts] = Investigator(
    area=AREA, title="Firmware settings seen from Linux", checks=CHECKS, collect=collect, judge=judge
)
