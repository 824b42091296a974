"""pcie: link training, MaxReadReq, MaxPayload, ACS and AER of every GPU and the bridges above it.

Everything comes from sysfs (link attributes, AER counters, config space decoded by
:mod:`tools.pci`) and NVML; the kernel log's "limited by" lines are supporting evidence only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

from agents.facts.gpus import Gpu, collect_gpus
from agents.facts.platform import Platform, detect_platform
from agents.findings import not_applicable, ok, problem, unknown
from agents.investigator import Investigator
from tools.model.finding import Area, CommandAction, Finding, Fix, PciRegisterAction, Severity, Where
from tools.pci import SPEEDS_GTS, bridges_between
from tools.pci.sysfs import AerCounts, ChainRead, ConfigRead, LinkAttrs, read_aer, read_chain, read_config, read_driver, read_link
from tools.probe import Probe, command_ref, nvml_ref

AREA: Area = "pcie"
CHECKS = ("pcie.link", "pcie.mrrs", "pcie.mps", "pcie.acs", "pcie.aer")
IDLE_REASON = 0x1
_LIMITED = re.compile(r"pci (?P<bdf>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]): .*limited by (?P<what>.*)")


@dataclass(frozen=True)
class NvmlLink:
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


@dataclass(frozen=True)
class PcieFacts:
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
    configs = await probe.gather(*[lambda d=d: read_config(probe, d) for d in devices])
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
            match = _LIMITED.search(line)
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
    )


# -- helpers -------------------------------------------------------------------------------


def _where(platform: Platform) -> Where:
    return "hypervisor" if platform.is_guest else "host"


def _gts(gen: int | None) -> float | None:
    return SPEEDS_GTS.get(gen) if gen is not None else None


def _speed(gts: float | None) -> str:
    return "?" if gts is None else f"{gts:g} GT/s"


def _config_refs(facts: PcieFacts, bdfs: list[str] | tuple[str, ...]) -> list[str]:
    return [facts.configs[b].ref for b in bdfs if b in facts.configs]


def _no_gpus(check: str, title: str) -> Finding:
    return not_applicable(check, AREA, title, "no NVIDIA GPU found in /sys/bus/pci/devices or through NVML")


# -- pcie.link -----------------------------------------------------------------------------

LinkKind = Literal["width_down", "busy_down", "slot_limited", "load_unknown_down", "idle_down", "ok", "unknown"]
_LINK_RANK: dict[LinkKind, int] = {
    "width_down": 0,
    "busy_down": 1,
    "slot_limited": 2,
    "load_unknown_down": 3,
    "idle_down": 4,
    "ok": 5,
    "unknown": 6,
}

_LINK_SEVERITY: dict[LinkKind, Severity] = {"width_down": "high", "busy_down": "high", "slot_limited": "medium"}


@dataclass(frozen=True)
class _LinkView:
    gpu: Gpu
    kind: LinkKind
    text: str


def _link_view(facts: PcieFacts, gpu: Gpu) -> _LinkView:
    attrs = facts.links.get(gpu.bdf)
    nv = facts.nvml.get(gpu.bdf)
    chain = facts.chains.get(gpu.bdf)
    # A VM guest's root ports are emulated: their link attributes say nothing about the real slot.
    in_vm = facts.platform.kind == "vm"
    parent = facts.links.get(chain.bridges[-1]) if chain and chain.bridges and not in_vm else None
    cur_s = attrs.current_speed if attrs and attrs.current_speed else _gts(nv.cur_gen if nv else None)
    max_s = attrs.max_speed if attrs and attrs.max_speed else _gts(nv.gpu_max_gen or nv.max_gen if nv else None)
    cur_w = attrs.current_width if attrs and attrs.current_width else (nv.cur_width if nv else None)
    max_w = attrs.max_width if attrs and attrs.max_width else (nv.max_width if nv else None)
    slot_s = parent.max_speed if parent and parent.max_speed else None
    if nv and nv.max_gen and nv.gpu_max_gen and nv.max_gen < nv.gpu_max_gen:
        slot_s = min(slot_s or 1e9, _gts(nv.max_gen) or 1e9)
    slot_w = parent.max_width if parent and parent.max_width else None
    if cur_s is None or max_s is None or cur_w is None or max_w is None:
        return _LinkView(gpu, "unknown", f"{gpu.label}: link speed/width not readable")
    load = nv.load if nv else "unknown"
    text = f"{gpu.label}: {_speed(cur_s)} x{cur_w} (GPU max {_speed(max_s)} x{max_w}"
    text += f", slot max {_speed(slot_s)} x{slot_w or '?'}" if slot_s or slot_w else ""
    text += f", {load}" + (f", pstate P{nv.pstate}" if nv and nv.pstate is not None else "") + ")"
    eff_s = min(max_s, slot_s) if slot_s else max_s
    eff_w = min(max_w, slot_w) if slot_w else max_w
    if cur_w < eff_w:
        return _LinkView(gpu, "width_down", text)
    if cur_s < eff_s:
        kind: LinkKind = "busy_down" if load == "busy" else "idle_down" if load == "idle" else "load_unknown_down"
        if kind == "idle_down" and eff_s < max_s:
            kind = "slot_limited"
        return _LinkView(gpu, kind, text)
    if eff_s < max_s or eff_w < max_w:
        return _LinkView(gpu, "slot_limited", text)
    return _LinkView(gpu, "ok", text)


def judge_link(facts: PcieFacts) -> Finding:
    check, title = "pcie.link", "PCIe link speed and width of every GPU"
    if not facts.gpus:
        return _no_gpus(check, title)
    views = [_link_view(facts, g) for g in facts.gpus]
    evidence = [r for g in facts.gpus if g.bdf in facts.links for r in facts.links[g.bdf].refs]
    evidence += [r for g in facts.gpus if g.bdf in facts.nvml for r in facts.nvml[g.bdf].refs if "Replay" not in r]
    kernel = [f"kernel log: {b}: limited by {w}" for b, w in facts.limited_by.items() if any(g.bdf == b for g in facts.gpus)]
    if facts.dmesg_ref and kernel:
        evidence.append(facts.dmesg_ref)
    known = [v for v in views if v.kind != "unknown"]
    if not known:
        why = "neither sysfs link attributes nor NVML link information could be read"
        return unknown(check, AREA, title, f"{why} ({facts.nvml_error or 'NVML gave no link data'})", evidence=evidence)
    worst = min(known, key=lambda v: _LINK_RANK[v.kind])
    total = len(views)
    if worst.kind in ("ok", "idle_down"):
        at_max = [v for v in known if v.kind == "ok"]
        speeds = sorted({v.text.split(": ", 1)[1].split(" (", 1)[0] for v in at_max})
        observed = f"{len(at_max)}/{total} GPUs at full link" + (f" ({', '.join(speeds)})" if speeds else "")
        idle = [v for v in known if v.kind == "idle_down"]
        explanation = "Every GPU trained to the fastest speed and full width its slot and the GPU support."
        if idle:
            observed += f"; {len(idle)} idle GPU(s) trained down: " + "; ".join(v.text for v in idle)
            explanation = (
                "GPUs lower their link speed when idle (P8, clocks event reason 'idle') to save power and retrain to "
                "full speed within microseconds of load: a lower speed at idle is not a fault. Re-read "
                "current_link_speed while the GPU is busy to confirm it reaches the maximum."
            )
        unread = [v.text for v in views if v.kind == "unknown"]
        if unread:
            observed += f"; not readable: {'; '.join(unread)}"
        if kernel:
            explanation += " " + " ".join(kernel) + " (boot-time enumeration; links often retrain after driver load)."
        return ok(
            check,
            AREA,
            title,
            observed,
            expected="current = max speed and width (at least under load)",
            explanation=explanation,
            subjects=[v.gpu.label for v in idle],
            evidence=evidence,
        )
    bad = [v for v in known if _LINK_RANK[v.kind] <= _LINK_RANK["load_unknown_down"]]
    severity: Severity = _LINK_SEVERITY.get(worst.kind, "low")
    where = _where(facts.platform)
    first = bad[0].gpu.bdf
    verify = (
        f"with the GPU busy: cat /sys/bus/pci/devices/{first}/current_link_speed /sys/bus/pci/devices/{first}/current_link_width "
        "shows the maximum (e.g. 32.0 GT/s PCIe and 16); nvidia-smi -q -d PCIE under load"
    )
    if worst.kind == "slot_limited":
        fix = Fix(
            kind="firmware",
            where=where,
            summary="Set the slot's PCIe link speed to Auto in the BIOS, or move the GPU to a full-speed slot",
            actions=(
                CommandAction(
                    description="BIOS: PCIe slot/port link speed Auto (or Gen5) for the GPU slots; "
                    "check risers/retimers are rated for that generation; reboot"
                ),
            ),
            risk="low",
            verify=verify,
        )
        explanation = (
            "The slot (or what the BIOS allows on it) caps the GPU below its own maximum. Host-to-device copies, weight "
            "loading and PCIe P2P between GPUs scale with link bandwidth: one generation down halves it."
        )
    elif worst.kind == "load_unknown_down":
        fix = Fix(
            kind="hardware",
            where=where,
            summary="Re-check the link under load; if it stays below max, reseat the GPU, check the riser and BIOS slot speed",
            actions=(
                CommandAction(
                    description="Run a GPU workload and re-read current_link_speed; only if it stays low: "
                    "reseat, check riser/cable, BIOS slot speed"
                ),
            ),
            risk="low",
            verify=verify,
        )
        explanation = (
            "The link is below its maximum speed and NVML could not say whether the GPU is idle. GPUs train down at "
            "idle, so this is only a fault if it persists under load."
        )
    else:
        fix = Fix(
            kind="hardware",
            where=where,
            summary="Reseat the GPU, check the riser/cable and the slot; check the BIOS slot speed setting",
            actions=(
                CommandAction(
                    description="Power down; reseat the GPU and its riser/cable; confirm the slot is wired x16 "
                    "and the BIOS link speed is Auto; replace the riser if the link stays degraded"
                ),
            ),
            risk="low",
            verify=verify,
        )
        explanation = (
            "A link trained below its width, or below its speed while the GPU is busy, is a signal-integrity or seating "
            "problem (riser, cable, dirty or damaged edge connector) or a slot/BIOS limit. It cuts host-to-device and "
            "PCIe P2P bandwidth proportionally (x8 = half), which directly slows tensor-parallel all-reduce on PCIe GPUs."
        )
    if kernel:
        explanation += " " + " ".join(kernel)
    return problem(
        check,
        AREA,
        title,
        severity,
        observed="; ".join(v.text for v in bad),
        expected="every GPU at its (and its slot's) maximum speed and width under load",
        explanation=explanation,
        fix=fix,
        subjects=[v.gpu.label for v in bad],
        evidence=evidence,
    )


# -- pcie.mrrs -----------------------------------------------------------------------------


def judge_mrrs(facts: PcieFacts) -> Finding:
    check, title = "pcie.mrrs", "GPU PCIe Max Read Request size"
    if not facts.gpus:
        return _no_gpus(check, title)
    values: dict[str, int] = {}
    errors: list[str] = []
    ext_tags_off: list[str] = []
    for gpu in facts.gpus:
        read = facts.configs.get(gpu.bdf)
        express = read.config.express if read and read.config else None
        if express is None or express.max_read_request is None:
            errors.append(read.error if read and read.error else f"{gpu.label}: no PCI Express capability in the bytes read")
            continue
        values[gpu.bdf] = express.max_read_request
        if express.extended_tags is False:
            ext_tags_off.append(gpu.bdf)
    evidence = _config_refs(facts, [g.bdf for g in facts.gpus])
    if not values:
        return unknown(
            check, AREA, title, "; ".join(errors[:2]) + " (config space beyond 64 bytes needs root)", evidence=evidence
        )
    low = [g for g in facts.gpus if values.get(g.bdf, 4096) < 4096]
    summary = ", ".join(
        f"{size} bytes on {sum(1 for v in values.values() if v == size)}/{len(facts.gpus)} GPUs"
        for size in sorted(set(values.values()))
    )
    if not low:
        note = f"; unknown on {len(errors)}: {errors[0]}" if errors else ""
        return ok(check, AREA, title, f"MaxReadReq {summary}{note}", expected="MaxReadReq 4096 bytes", evidence=evidence)
    bdfs = tuple(g.bdf for g in low)
    reverts = "; ".join(f"setpci -s {g.bdf} CAP_EXP+8.w={(values[g.bdf].bit_length() - 8) << 12:04x}:7000" for g in low)
    smallest = min(values[g.bdf] for g in low)
    tags = (
        f" Extended Tags are off on {len(ext_tags_off)}/{len(facts.gpus)} GPUs (DevCtl ExtTag-), so at most 32 reads can be "
        f"outstanding: 32 x {smallest} bytes = {32 * smallest // 1024} KiB in flight, which with about 1 us of read latency "
        f"behind a switch bounds reads near {32 * smallest / 1000:.0f} GB/s, well under a Gen5 x16 link; 4096-byte requests "
        "allow 128 KiB in flight."
        if ext_tags_off
        else ""
    )
    explanation = (
        "MaxReadReq caps every DMA read the GPU issues: host-to-device copies (the GPU's copy engines read host memory), "
        "model weight loading, KV-cache offload and PCIe peer reads are split into requests of this size. Small requests "
        "cost more request TLPs and completion tags per byte, which lowers achievable read bandwidth, most visibly "
        "behind PCIe switches where read latency is higher." + tags + " Completions still arrive in MaxPayload-sized packets, "
        "so the change is safe for the fabric; NCCL's P2P transport mostly uses writes (bounded by MaxPayload), so measure "
        "the gain with a copy benchmark. The setting is lost at reboot (firmware or pci=pcie_bus_perf sets it again)."
    )
    fix = Fix(
        kind="runtime",
        where=_where(facts.platform),
        summary=f"Set MaxReadReq to 4096 bytes on {len(low)} GPU(s) (PCIe DevCtl bits 14:12 = 5), with the GPUs idle",
        actions=(PciRegisterAction(devices=bdfs, capability="exp", offset=8, width=2, value=0x5000, mask=0x7000),),
        risk="medium",
        verify=f"setpci -s {bdfs[0]} CAP_EXP+8.w shows bits 14:12 = 5 (0x5xxx); lspci -vvv -s {bdfs[0]} shows "
        "'MaxReadReq 4096 bytes'; re-run the audit",
        revert=reverts,
        persist="a oneshot unit run at boot before the inference service, e.g. /etc/systemd/system/rigaudit-mrrs.service with "
        + " ".join(f"ExecStart=/usr/bin/setpci -s {b} CAP_EXP+8.w=5000:7000" for b in bdfs)
        + " (Type=oneshot, WantedBy=multi-user.target), then systemctl enable rigaudit-mrrs",
    )
    return problem(
        check,
        AREA,
        title,
        "medium",
        observed=f"MaxReadReq {summary}",
        expected="MaxReadReq 4096 bytes on every GPU",
        explanation=explanation,
        fix=fix,
        subjects=[g.label for g in low],
        evidence=evidence,
    )


# -- pcie.mps ------------------------------------------------------------------------------


def judge_mps(facts: PcieFacts) -> Finding:
    check, title = "pcie.mps", "MaxPayload of GPUs and the bridges above them"
    if not facts.gpus:
        return _no_gpus(check, title)
    mismatches: list[str] = []
    checked: list[str] = []
    unread: list[str] = []
    for gpu in facts.gpus:
        read, chain = facts.configs.get(gpu.bdf), facts.chains.get(gpu.bdf)
        gpu_mps = read.config.express.max_payload if read and read.config and read.config.express else None
        if gpu_mps is None or chain is None or chain.chain is None:
            unread.append(gpu.label)
            continue
        bridge_mps: dict[str, int] = {}
        for bridge in chain.bridges:
            bread = facts.configs.get(bridge)
            value = bread.config.express.max_payload if bread and bread.config and bread.config.express else None
            if value is None:
                unread.append(bridge)
            else:
                bridge_mps[bridge] = value
        smaller = {b: v for b, v in bridge_mps.items() if v < gpu_mps}
        if smaller:
            mismatches.append(f"{gpu.label} MaxPayload {gpu_mps} > " + ", ".join(f"{b} {v}" for b, v in smaller.items()))
        else:
            checked.append(f"{gpu_mps}")
    evidence = _config_refs(facts, [*[g.bdf for g in facts.gpus], *facts.bridges]) + [c.ref for c in facts.chains.values()]
    if mismatches:
        fix = Fix(
            kind="reboot",
            where=_where(facts.platform),
            summary="Make MaxPayload consistent: pci=pcie_bus_safe on the kernel command line, or the BIOS",
            actions=(
                CommandAction(
                    description="Add pci=pcie_bus_safe to the kernel command line (GRUB_CMDLINE_LINUX_DEFAULT in "
                    "/etc/default/grub, or /etc/kernel/cmdline with proxmox-boot-tool), update the "
                    "boot loader, reboot; or set PCIe MaxPayload to Auto in the BIOS. Never edit "
                    "MaxPayload by hand with setpci."
                ),
            ),
            risk="low",
            verify="lspci -vvv: DevCtl MaxPayload of each GPU <= every bridge above it; re-run the audit",
            revert="remove pci=pcie_bus_safe from the command line and reboot",
            persist="the kernel command line is persistent once the boot loader is updated",
        )
        return problem(
            check,
            AREA,
            title,
            "high",
            observed="; ".join(mismatches),
            expected="each GPU's MaxPayload no larger than any bridge's on its path",
            explanation="A device sending TLPs larger than a bridge on its path accepts makes the bridge drop them as "
            "Malformed TLPs: AER errors, stalls and in the worst case a GPU falling off the bus. The kernel "
            "normally makes the path consistent at boot; a mismatch means firmware or a hand edit changed it.",
            fix=fix,
            subjects=[m.split(" MaxPayload")[0] for m in mismatches],
            evidence=evidence,
        )
    if not checked:
        return unknown(check, AREA, title, f"config space not readable for: {', '.join(unread[:4])}", evidence=evidence)
    note = f"; not readable: {', '.join(unread[:4])}" if unread else ""
    return ok(
        check,
        AREA,
        title,
        f"MaxPayload {'/'.join(sorted(set(checked)))} bytes on {len(checked)}/{len(facts.gpus)} GPUs; "
        f"no bridge above them smaller{note}",
        expected="GPU MaxPayload <= every bridge above it",
        evidence=evidence,
    )


# -- pcie.acs ------------------------------------------------------------------------------


def judge_acs(facts: PcieFacts) -> Finding:
    check, title = "pcie.acs", "ACS redirect on switch ports between GPUs"
    if len(facts.gpus) < 2:
        return not_applicable(check, AREA, title, f"{len(facts.gpus)} GPU(s): there is no GPU pair for peer-to-peer traffic")
    vfio = [g for g in facts.gpus if facts.drivers.get(g.bdf) == "vfio-pci"]
    host_gpus = [g for g in facts.gpus if g not in vfio]
    if len(host_gpus) < 2:
        return not_applicable(
            check, AREA, title, f"{len(vfio)} GPU(s) are bound to vfio-pci for VMs; ACS isolation is wanted there"
        )
    chains = {g.bdf: facts.chains[g.bdf].chain for g in host_gpus if g.bdf in facts.chains and facts.chains[g.bdf].chain}
    evidence = [facts.chains[g.bdf].ref for g in host_gpus if g.bdf in facts.chains]
    if len(chains) < 2:
        return unknown(check, AREA, title, "the PCI tree is not readable (no /sys/bus/pci/devices/BDF links)", evidence=evidence)
    between: dict[str, None] = {}
    shared_pairs = 0
    for a, b in combinations(sorted(chains), 2):
        ports = bridges_between(chains[a] or (), chains[b] or ())
        if ports:
            shared_pairs += 1
        between.update(dict.fromkeys(ports))
    evidence += _config_refs(facts, list(between))
    redirecting: dict[str, str] = {}
    unread: list[str] = []
    for bridge in between:
        read = facts.configs.get(bridge)
        config = read.config if read else None
        if config is None or not config.extended_known:
            unread.append(bridge)
            continue
        if config.acs is not None and config.acs.redirects:
            redirecting[bridge] = " ".join(config.acs.control.names)
    root_notes = []
    for bridge in facts.bridges:
        read = facts.configs.get(bridge)
        config = read.config if read else None
        if config and config.express and config.express.port_type == 0x4 and config.acs is not None:
            root_notes.append(f"{bridge} (root port) ACSCtl {' '.join(config.acs.control.names) or 'none set'}")
    if redirecting:
        where = _where(facts.platform)
        bridges = tuple(redirecting)
        if vfio:
            fix = Fix(
                kind="reboot",
                where=where,
                summary="Do not clear ACS at runtime on a host that passes GPUs to VMs; keep host GPUs behind their own switch",
                actions=(
                    CommandAction(
                        description=f"GPUs {', '.join(g.bdf for g in vfio)} are bound to vfio-pci: clearing ACS "
                        "redirect would merge IOMMU groups and break VM isolation. Only if those GPUs "
                        "sit behind other switches: pci=disable_acs_redir=" + ";".join(bridges)
                    ),
                ),
                risk="high",
                verify="lspci -vvv -s BRIDGE: ACSCtl ReqRedir- CmpltRedir-",
            )
        else:
            fix = Fix(
                kind="runtime",
                where=where,
                summary=f"Clear ACS P2P Request/Completion Redirect on {len(bridges)} switch port(s) between GPUs",
                actions=(PciRegisterAction(devices=bridges, capability="ecap:0x000d", offset=6, width=2, value=0, mask=0x000C),),
                risk="medium",
                verify=f"lspci -vvv -s {bridges[0]} shows 'ACSCtl: ... ReqRedir- CmpltRedir-'; nvidia-smi topo -p2p r shows OK "
                "for the GPU pairs; re-run the P2P benchmark",
                revert="; ".join(f"setpci -s {b} ECAP_ACS+6.w={_acs_ctl(facts, b):04x}:000c" for b in bridges),
                persist="pci=disable_acs_redir=" + ";".join(bridges) + " on the kernel command line (kernel >= 5.1), or ACS "
                "disabled for these ports in the BIOS",
            )
        vfio_note = (
            " vfio_pci is loaded but every GPU is bound to nvidia: do not apply this while planning to pass these GPUs to "
            "VMs, since the redirect is what isolates devices behind one switch."
            if facts.vfio_loaded and not vfio
            else ""
        )
        return problem(
            check,
            AREA,
            title,
            "high",
            observed="; ".join(f"{b} ACSCtl {names}" for b, names in redirecting.items()),
            expected="ReqRedir- CmpltRedir- on switch ports between GPUs",
            explanation="With P2P Request/Completion Redirect set, peer writes between GPUs under one switch are sent up to "
            "the root complex instead of being routed inside the switch: P2P bandwidth drops, latency rises, "
            "and on AMD platforms hangs and IO_PAGE_FAULTs have been reported. Linux enables ACS redirect "
            "when the IOMMU is on and the port supports it." + vfio_note,
            fix=fix,
            subjects=bridges,
            evidence=evidence,
        )
    if unread and not (set(between) - set(unread)):
        return unknown(
            check, AREA, title, f"extended config space not readable for {', '.join(unread[:4])} (needs root)", evidence=evidence
        )
    if not between:
        observed = "no GPU pair shares a PCIe switch: peer traffic meets in the root complex, where switch ACS does not apply"
    else:
        readable = [b for b in between if b not in unread]
        without = [b for b in readable if _acs_absent(facts, b)]
        observed = f"{len(readable)} switch port(s) between {shared_pairs} GPU pair(s) ({', '.join(readable)}): no ACS redirect"
        if without:
            observed += f" ({len(without)} of them have no ACS capability at all)"
    if unread:
        observed += f"; not readable: {', '.join(unread)}"
    if root_notes:
        observed += "; " + "; ".join(root_notes)
    return ok(check, AREA, title, observed, expected="ReqRedir- CmpltRedir- on switch ports between GPUs", evidence=evidence)


def _acs_absent(facts: PcieFacts, bridge: str) -> bool:
    read = facts.configs.get(bridge)
    return read is not None and read.config is not None and read.config.acs is None


def _acs_ctl(facts: PcieFacts, bridge: str) -> int:
    read = facts.configs.get(bridge)
    acs = read.config.acs if read and read.config else None
    return acs.control.raw if acs else 0


# -- pcie.aer ------------------------------------------------------------------------------


REPLAY_NOISE = 100
"""NVML PCIe replays since driver load below which, with no AER error, a single reading is not a problem."""


def judge_aer(facts: PcieFacts) -> Finding:
    check, title = "pcie.aer", "PCIe error counters (AER, NVML replays)"
    if not facts.gpus:
        return _no_gpus(check, title)
    devices = [g.bdf for g in facts.gpus] + list(facts.bridges)
    labels = {g.bdf: g.label for g in facts.gpus}
    counts = [facts.aer[d] for d in devices if d in facts.aer and facts.aer[d].known]
    replays = {g.label: facts.nvml[g.bdf].replays for g in facts.gpus if g.bdf in facts.nvml}
    evidence = [r for c in counts for r in c.refs]
    evidence += [r for g in facts.gpus if g.bdf in facts.nvml for r in facts.nvml[g.bdf].refs if "Replay" in r]
    if not counts and not any(v is not None for v in replays.values()):
        return unknown(
            check,
            AREA,
            title,
            "no aer_dev_* counters in sysfs (AER off or not exposed) and no NVML replay counter",
            evidence=evidence,
        )
    fatal = [c for c in counts if c.fatal]
    nonfatal = [c for c in counts if c.nonfatal]
    correctable = [c for c in counts if c.correctable]
    replaying = {label: v for label, v in replays.items() if v and v >= REPLAY_NOISE}
    few = {label: v for label, v in replays.items() if v and v < REPLAY_NOISE}
    if not (fatal or nonfatal or correctable or replaying) and few:
        shown = ", ".join(f"{label}: {v}" for label, v in few.items())
        return ok(
            check,
            AREA,
            title,
            f"AER counters zero on {len(counts)} device(s); a few NVML PCIe replays since the driver loaded ({shown})",
            expected=f"no AER errors; replay counts below {REPLAY_NOISE} and not rising",
            explanation="A handful of link-level replays since boot is retried transparently and costs nothing measurable; "
            "only a count that keeps rising under load points at a marginal link. Re-read it after a load run.",
            evidence=evidence,
        )
    if not (fatal or nonfatal or correctable or replaying):
        return ok(
            check,
            AREA,
            title,
            f"AER counters zero on {len(counts)} device(s) (GPUs and bridges above them); NVML PCIe replays "
            f"0 on {sum(1 for v in replays.values() if v == 0)}/{len(facts.gpus)} GPUs",
            expected="no PCIe errors",
            evidence=evidence,
        )
    severity: Severity = "high" if fatal else "medium" if nonfatal else "low"
    parts = [
        f"{labels.get(c.bdf, c.bdf)}: correctable {c.correctable or 0}, nonfatal {c.nonfatal or 0}, fatal {c.fatal or 0}"
        + (f" ({', '.join(c.nonzero[:4])})" if c.nonzero else "")
        for c in counts
        if c.fatal or c.nonfatal or c.correctable
    ]
    parts += [f"{label}: {v} PCIe replays (NVML)" for label, v in replaying.items()]
    subjects = [labels.get(c.bdf, c.bdf) for c in counts if c.fatal or c.nonfatal or c.correctable] + list(replaying)
    fix = Fix(
        kind="hardware",
        where=_where(facts.platform),
        summary="Find the failing link: reseat the GPU, riser and cables of the devices with errors",
        actions=(
            CommandAction(
                description="Note the counters, run a load, re-read them: if they rise, reseat/replace the "
                "riser or cable of that link (or force one PCIe generation lower in the BIOS as a test)"
            ),
        ),
        risk="low",
        verify="after a load run, aer_dev_* counters in /sys/bus/pci/devices/BDF/ and nvidia-smi -q -d PCIE replay counters "
        "stay unchanged",
    )
    return problem(
        check,
        AREA,
        title,
        severity,
        observed="; ".join(parts),
        expected="AER and replay counters at zero",
        explanation="Counters count since boot; one sample cannot show whether they are still rising. Correctable errors "
        "and replays are retried transparently but cost bandwidth and usually mean a marginal link (riser, "
        "cable, connector, retimer); uncorrectable (nonfatal/fatal) errors can stall DMA, corrupt transfers or "
        "drop the GPU off the bus (Xid 79).",
        fix=fix,
        subjects=subjects,
        evidence=evidence,
    )


def judge(facts: PcieFacts) -> list[Finding]:
    return [judge_link(facts), judge_mrrs(facts), judge_mps(facts), judge_acs(facts), judge_aer(facts)]


INVESTIGATOR: Investigator[PcieFacts] = Investigator(
    area=AREA, title="PCIe links, payload sizes, ACS and errors", checks=CHECKS, collect=collect, judge=judge
)
