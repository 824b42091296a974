"""pcie facts: each GPU's PCI chain, config space, link attributes, AER counters, NVML link view and the kernel's
"limited by" lines; plus the helpers the pcie rules share.

Everything comes from sysfs (link attributes, AER counters, config space decoded by
:mod:`rigaudit.tools.pci`) and NVML; the kernel log's "limited by" lines are supporting evidence only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from rigaudit.agents.check import Check
from rigaudit.agents.facts.cpu_pcie import CpuPcie, root_port_gen
from rigaudit.agents.facts.gpus import Gpu, collect_gpus
from rigaudit.agents.facts.kernel_log import log_unavailable
from rigaudit.agents.facts.p2p_context import P2pContext, collect_p2p_context
from rigaudit.agents.facts.platform import FixTarget, Platform, detect_platform
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.investigators.pcie.aer_log import AerLog, parse_aer_log
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.hosts.probe import Probe, command_ref, nvml_ref
from rigaudit.tools.pci import PciConfig
from rigaudit.tools.pci.sysfs import (
    AerCounts,
    ChainRead,
    ConfigRead,
    LinkAttrs,
    read_aer,
    read_chain,
    read_config,
    read_driver,
    read_link,
)
from rigaudit.tools.schema.finding import Area, CommandAction, Finding, Fix, FixKind, Where

AREA: Area = "pcie"
IDLE_REASON = 0x1
_LIMITED = r"pci (?P<bdf>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]): .*limited by (?P<what>.*)"


class NvmlLink(Record):
    """NVML's view of one GPU: link generation and width, and whether it is busy."""

    cur_gen: int | None
    max_gen: int | None
    """Max generation possible with this GPU in this system (the slot included)."""
    gpu_max_gen: int | None
    cur_width: int | None
    max_width: int | None
    pstate: int | None
    event_reasons: int | None
    utilization: int | None
    replays: int | None
    refs: tuple[str, ...]

    @property
    def load(self) -> Literal["idle", "busy", "unknown"]:
        if (self.event_reasons is not None and self.event_reasons & IDLE_REASON) or (
            self.pstate is not None and self.pstate >= 8
        ):
            return "idle"
        if (self.pstate is not None and self.pstate <= 2) or (self.utilization or 0) > 0:
            return "busy"
        return "unknown"


class PcieFacts(Record):
    gpus: tuple[Gpu, ...]
    nvml_error: str | None
    platform: Platform
    chains: Mapping[str, ChainRead]
    configs: Mapping[str, ConfigRead]
    """GPUs and every bridge above them."""
    links: Mapping[str, LinkAttrs]
    aer: Mapping[str, AerCounts]
    drivers: Mapping[str, str | None]
    nvml: Mapping[str, NvmlLink]
    vfio_loaded: bool | None
    limited_by: Mapping[str, str]
    """Kernel log "limited by" lines, by BDF."""
    dmesg_ref: str | None
    p2p: P2pContext
    nic_chains: Mapping[str, ChainRead]
    """Where the active RDMA NICs sit (GPUDirect RDMA crosses the switch a NIC shares with a GPU)."""
    cpu_pcie: CpuPcie | None = None
    """The PCIe generation the CPU's root ports top out at (None: a CPU not listed, or unread)."""
    aer_log: Mapping[str, AerLog] = field(default_factory=dict)
    """The kernel log's AER messages, by the device they name."""
    kernel_log_gap: str | None = None
    """Why the kernel log could not be read (None: it was)."""

    @property
    def bridges(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for chain in self.chains.values():
            seen.update(dict.fromkeys(chain.bridges))
        return tuple(seen)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


async def _nvml_link(probe: Probe, index: int) -> NvmlLink:
    fns = (
        "nvmlDeviceGetCurrPcieLinkGeneration",
        "nvmlDeviceGetMaxPcieLinkGeneration",
        "nvmlDeviceGetGpuMaxPcieLinkGeneration",
        "nvmlDeviceGetCurrPcieLinkWidth",
        "nvmlDeviceGetMaxPcieLinkWidth",
        "nvmlDeviceGetPerformanceState",
        "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetUtilizationRates",
        "nvmlDeviceGetPcieReplayCounter",
    )
    results = await probe.gather(*[lambda fn=fn: probe.nvml(fn, index) for fn in fns])
    values = [r.value if r.ok else None for r in results]
    reasons = _int(values[6])
    refs = [nvml_ref(fn, (index,)) for fn in fns]
    if reasons is None:  # drivers before r535 name it "throttle reasons"
        legacy = await probe.nvml("nvmlDeviceGetCurrentClocksThrottleReasons", index)
        reasons = _int(legacy.value) if legacy.ok else None
        refs.append(nvml_ref("nvmlDeviceGetCurrentClocksThrottleReasons", (index,)))
    util = values[7].get("gpu") if isinstance(values[7], dict) else None
    return NvmlLink(
        _int(values[0]),
        _int(values[1]),
        _int(values[2]),
        _int(values[3]),
        _int(values[4]),
        _int(values[5]),
        reasons,
        _int(util),
        _int(values[8]),
        tuple(refs),
    )


async def collect(probe: Probe) -> PcieFacts:
    inventory = await collect_gpus(probe)
    bdfs = [g.bdf for g in inventory.gpus]
    chains = await probe.gather(*[lambda b=b: read_chain(probe, b) for b in bdfs])
    bridges = list(dict.fromkeys(br for c in chains for br in c.bridges))
    devices = bdfs + bridges
    context = await collect_p2p_context(probe, inventory)
    nic_bdfs = [n.bdf for n in context.rdma.active_nics if n.bdf]
    nic_chains = await probe.gather(*[lambda b=b: read_chain(probe, b) for b in nic_bdfs])
    nic_bridges = [br for c in nic_chains for br in c.bridges if br not in devices]
    configs = await probe.gather(*[lambda d=d: read_config(probe, d) for d in devices + list(dict.fromkeys(nic_bridges))])
    links = await probe.gather(*[lambda d=d: read_link(probe, d) for d in devices])
    aers = await probe.gather(*[lambda d=d: read_aer(probe, d) for d in devices])
    drivers = await probe.gather(*[lambda b=b: read_driver(probe, b) for b in bdfs])
    modules = await probe.text("/proc/modules")
    indexed = [g for g in inventory.gpus if g.index is not None]
    nvml = await probe.gather(*[lambda g=g: _nvml_link(probe, g.index or 0) for g in indexed])
    platform = await detect_platform(probe)
    dmesg = await probe.run(["dmesg"])
    limited: dict[str, str] = {}
    if dmesg.ok:
        for line in dmesg.stdout.splitlines():
            match = re.search(_LIMITED, line)
            if match:
                limited[match.group("bdf")] = match.group("what").strip()
    return PcieFacts(
        gpus=inventory.gpus,
        nvml_error=inventory.nvml_error,
        platform=platform,
        chains={c.bdf: c for c in chains},
        configs={c.bdf: c for c in configs},
        links={link.bdf: link for link in links},
        aer={a.bdf: a for a in aers},
        drivers=dict(zip(bdfs, drivers, strict=True)),
        nvml={g.bdf: n for g, n in zip(indexed, nvml, strict=True)},
        vfio_loaded=None if modules is None else any(line.split()[:1] == ["vfio_pci"] for line in modules.splitlines()),
        limited_by=limited,
        dmesg_ref=command_ref(["dmesg"]) if dmesg.ok else None,
        p2p=context,
        nic_chains={c.bdf: c for c in nic_chains if c.chain},
        cpu_pcie=root_port_gen(await probe.text("/proc/cpuinfo")),
        aer_log=parse_aer_log(dmesg.stdout) if dmesg.ok else {},
        kernel_log_gap=log_unavailable(dmesg, in_container=platform.in_container),
    )


# -- helpers shared by the pcie rules ------------------------------------------------------


def fix_where(platform: Platform, target: FixTarget = "hardware") -> Where:
    """PCIe links, slots, switches and error sources are the machine's: in a VM guest, the hypervisor's."""
    return layer_where(platform, target)


def slot_fix(kind: FixKind, where: Where, summary: str, step: str, verify: str) -> Fix:
    """A fix at a GPU's slot or link (reseat, riser or cable, the BIOS slot speed): one step, low risk."""
    return Fix(kind=kind, where=where, summary=summary, actions=(CommandAction(description=step),), risk="low", verify=verify)


def config_of(facts: PcieFacts, bdf: str) -> PciConfig | None:
    """A device's decoded config space (None: not read, or not decodable)."""
    read = facts.configs.get(bdf)
    return read.config if read else None


def config_refs(facts: PcieFacts, bdfs: list[str] | tuple[str, ...]) -> list[str]:
    return [facts.configs[b].ref for b in bdfs if b in facts.configs]


def no_gpus(check: Check) -> Finding:
    """``check``'s verdict on a host with no NVIDIA GPU."""
    return check.not_applicable("no NVIDIA GPU found in /sys/bus/pci/devices or through NVML")
