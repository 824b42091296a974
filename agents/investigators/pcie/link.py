"""pcie.link: is every GPU's link trained to the fastest speed and full width its slot allows?"""

from __future__ import annotations

from typing import Literal

from rigaudit.agents.check import Check
from rigaudit.agents.facts.gpu_address import gpu_words
from rigaudit.agents.facts.gpus import Gpu
from rigaudit.agents.facts.p2p_context import P2pContext
from rigaudit.agents.facts.vgpu import hypervisor_side
from rigaudit.agents.investigators.cloud import for_cloud
from rigaudit.agents.investigators.pcie import premises
from rigaudit.agents.investigators.pcie.facts import PcieFacts, fix_where, no_gpus, slot_fix
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import file_ref
from rigaudit.tools.pci import SPEEDS_GTS
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix, Severity, Where


def _gts(gen: int | None) -> float | None:
    return SPEEDS_GTS.get(gen) if gen is not None else None


def _speed(gts: float | None) -> str:
    return "?" if gts is None else f"{gts:g} GT/s"


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


class _LinkView(Record):
    gpu: Gpu
    kind: LinkKind
    text: str
    slot_gts: float | None = None
    """What the slot (the port above the GPU) tops out at, where it is below the GPU's own maximum."""


def _link_view(facts: PcieFacts, gpu: Gpu) -> _LinkView:
    attrs = facts.links.get(gpu.bdf)
    nv = facts.nvml.get(gpu.bdf)
    chain = facts.chains.get(gpu.bdf)
    # A VM guest's root ports are emulated: their link attributes say nothing about the real slot, and NVML's max
    # generation "with this system" is capped by them (the driver reads the port above the GPU through the guest's
    # config space), so only the GPU's own link counts there (also in a container in a VM).
    in_vm = facts.platform.in_vm
    parent = facts.links.get(chain.bridges[-1]) if chain and chain.bridges and not in_vm else None
    cur_s = attrs.current_speed if attrs and attrs.current_speed else _gts(nv.cur_gen if nv else None)
    max_s = attrs.max_speed if attrs and attrs.max_speed else _gts(nv.gpu_max_gen or nv.max_gen if nv else None)
    cur_w = attrs.current_width if attrs and attrs.current_width else (nv.cur_width if nv else None)
    max_w = attrs.max_width if attrs and attrs.max_width else (nv.max_width if nv else None)
    slot_s = parent.max_speed if parent and parent.max_speed else None
    if nv and nv.max_gen and nv.gpu_max_gen and nv.max_gen < nv.gpu_max_gen and not in_vm:
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
        return _LinkView(gpu, kind, text, slot_s if kind == "slot_limited" else None)
    if eff_s < max_s or eff_w < max_w:
        return _LinkView(gpu, "slot_limited", text, slot_s if eff_w >= max_w else None)
    return _LinkView(gpu, "ok", text)


PCIE_LINK_CHECK = Check(
    "pcie.link",
    "PCIe link speed and width of every GPU",
    reads="`/sys/bus/pci/devices/BDF/{current,max}_link_{speed,width}`, NVML link generation and width, kernel log",
    problem="below max (GPUs train down at idle: re-read under load); in a VM guest the GPU's own link only (the "
    "ports above are emulated)",
    fix="reseat/riser/slot, or BIOS slot speed",
    kinds=("hardware", "firmware"),
    premises=(premises.PLATFORM, premises.GPUS),
)


def judge_link(facts: PcieFacts) -> Finding:
    if not facts.gpus:
        return no_gpus(PCIE_LINK_CHECK)
    if why := hypervisor_side(facts.gpus, "the PCIe link (its speed and width) and its errors"):
        return PCIE_LINK_CHECK.unknown(f"{why}; the link the guest's config space shows is the vGPU manager's")
    views = [_link_view(facts, g) for g in facts.gpus]
    evidence = [r for g in facts.gpus if g.bdf in facts.links for r in facts.links[g.bdf].refs]
    evidence += [r for g in facts.gpus if g.bdf in facts.nvml for r in facts.nvml[g.bdf].refs if "Replay" not in r]
    kernel = [f"kernel log: {b}: limited by {w}" for b, w in facts.limited_by.items() if any(g.bdf == b for g in facts.gpus)]
    if facts.dmesg_ref and kernel:
        evidence.append(facts.dmesg_ref)
    known = [v for v in views if v.kind != "unknown"]
    if not known:
        why = "neither sysfs link attributes nor NVML link information could be read"
        return PCIE_LINK_CHECK.unknown(f"{why} ({facts.nvml_error or 'NVML gave no link data'})", evidence=evidence)
    worst = min(known, key=lambda v: _LINK_RANK[v.kind])
    if worst.kind in ("ok", "idle_down"):
        return _full_links(views, kernel, evidence)
    return _degraded_links(facts, known, worst.kind, kernel, evidence)


def _full_links(views: list[_LinkView], kernel: list[str], evidence: list[str]) -> Finding:
    """Every readable link at its maximum, or trained down only on an idle GPU."""
    known = [v for v in views if v.kind != "unknown"]
    at_max = [v for v in known if v.kind == "ok"]
    speeds = sorted({v.text.split(": ", 1)[1].split(" (", 1)[0] for v in at_max})
    observed = f"{len(at_max)}/{len(views)} GPUs at full link" + (f" ({', '.join(speeds)})" if speeds else "")
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
    return PCIE_LINK_CHECK.ok(
        observed,
        expected="current = max speed and width (at least under load)",
        explanation=explanation,
        subjects=[v.gpu.label for v in idle],
        evidence=evidence,
    )


def _gpu_traffic_on_pcie(p2p: P2pContext) -> bool:
    """Whether the GPUs' tensor-parallel traffic crosses PCIe (not NVLink, MIG, one GPU or TP 1)."""
    return len(p2p.gpus) > 1 and not p2p.all_nvlink and not p2p.all_mig and p2p.tp != 1


def _link_cost(p2p: P2pContext) -> str:
    """What a narrower link costs on this host."""
    if _gpu_traffic_on_pcie(p2p):
        return " Here the GPUs' tensor-parallel traffic crosses PCIe, so the narrower link slows every decode step (high)."
    return (
        " Here GPU-to-GPU traffic does not cross PCIe ("
        + ("NVLink" if p2p.all_nvlink else "MIG slices" if p2p.all_mig else "tensor parallelism 1" if p2p.tp == 1 else "one GPU")
        + "): the link carries host-to-device copies and weight loading, so it costs start-up time and offload "
        "bandwidth more than decode speed."
    )


def _link_verify(facts: PcieFacts, first: str) -> str:
    if facts.platform.in_vm:
        return "with the GPU busy, inside this VM: nvidia-smi -q -d PCIE shows the maximum generation and width"
    return (
        f"with the GPU busy: cat /sys/bus/pci/devices/{first}/current_link_speed "
        f"/sys/bus/pci/devices/{first}/current_link_width shows the maximum (e.g. 32.0 GT/s PCIe and 16); "
        "nvidia-smi -q -d PCIE under load"
    )


def _platform_capped(facts: PcieFacts, bad: list[_LinkView]) -> bool:
    """Every capped GPU's slot tops out at the CPU's own PCIe generation: the platform's limit, nothing to set."""
    cpu = facts.cpu_pcie
    top = _gts(cpu.gen) if cpu else None
    return top is not None and all(v.kind == "slot_limited" and v.slot_gts == top for v in bad)


def _platform_finding(facts: PcieFacts, bad: list[_LinkView], evidence: list[str]) -> Finding:
    cpu = facts.cpu_pcie
    assert cpu is not None
    fix = slot_fix(
        "hardware",
        fix_where(facts.platform),
        f"Nothing to set: the {cpu.cpu} root ports top out at PCIe Gen{cpu.gen}; full GPU link speed needs a platform "
        f"of the GPUs' generation",
        f"keep it, or move these GPUs to a host whose CPU has PCIe Gen{cpu.gen + 1} lanes",
        "lspci -vv -s BDF | grep LnkSta (the GPU's link) and the CPU model (lscpu)",
    )
    return PCIE_LINK_CHECK.problem_at(
        "low",
        observed="; ".join(v.text for v in bad),
        expected="every GPU at its (and its slot's) maximum speed and width under load",
        explanation=f"The GPUs run at the slot's maximum, and the slot is the CPU's: {cpu.cpu} has PCIe Gen{cpu.gen} "
        "lanes, so no BIOS setting or other slot raises it. Host-to-device copies (weight loading, KV offload) and "
        "PCIe P2P get that generation's bandwidth." + _link_cost(facts.p2p),
        fix=fix,
        subjects=[v.gpu.label for v in bad],
        evidence=[*evidence, file_ref("/proc/cpuinfo")],
    )


def _degraded_links(facts: PcieFacts, known: list[_LinkView], worst: LinkKind, kernel: list[str], evidence: list[str]) -> Finding:
    """Links below their maximum: the worst kind sets the fix and the severity, the GPU traffic on PCIe the cost."""
    bad = [v for v in known if _LINK_RANK[v.kind] <= _LINK_RANK["load_unknown_down"]]
    if worst == "slot_limited" and not facts.platform.in_vm and _platform_capped(facts, bad):
        return _platform_finding(facts, bad, evidence)
    severity: Severity = _LINK_SEVERITY.get(worst, "low")
    if severity == "high" and not _gpu_traffic_on_pcie(facts.p2p):
        severity = "medium"
    where = fix_where(facts.platform)
    fix, explanation = _link_fix(worst, where, _link_verify(facts, bad[0].gpu.bdf))
    if kernel:
        explanation += " " + " ".join(kernel)
    if worst in ("width_down", "busy_down", "slot_limited"):
        explanation += _link_cost(facts.p2p)
    if where == "hypervisor" and (which := "; ".join(gpu_words(v.gpu, where) for v in bad)):
        fix = fix.model_copy(
            update={"actions": (*fix.actions, CommandAction(description=f"the GPU(s) on the hypervisor: {which}"))}
        )
    return PCIE_LINK_CHECK.problem_at(
        severity,
        observed="; ".join(v.text for v in bad),
        expected="every GPU at its (and its slot's) maximum speed and width under load",
        explanation=explanation,
        fix=for_cloud(fix, facts.platform, [v.gpu for v in bad]),
        subjects=[v.gpu.label for v in bad],
        evidence=evidence,
    )


def _link_fix(worst: LinkKind, where: Where, verify: str) -> tuple[Fix, str]:
    """The fix for the worst link's kind, and the explanation it starts from."""
    if worst == "slot_limited":
        fix = slot_fix(
            "firmware",
            where,
            "Set the slot's PCIe link speed to Auto in the BIOS, or move the GPU to a full-speed slot",
            "BIOS: PCIe slot/port link speed Auto (or Gen5) for the GPU slots; "
            "check risers/retimers are rated for that generation; reboot",
            verify,
        )
        return fix, (
            "The slot (or what the BIOS allows on it) caps the GPU below its own maximum. Host-to-device copies, weight "
            "loading and PCIe P2P between GPUs scale with link bandwidth: one generation down halves it."
        )
    if worst == "load_unknown_down":
        fix = slot_fix(
            "hardware",
            where,
            "Re-check the link under load; if it stays below max, reseat the GPU, check the riser and BIOS slot speed",
            "Run a GPU workload and re-read current_link_speed; only if it stays low: reseat, check riser/cable, BIOS slot speed",
            verify,
        )
        return fix, (
            "The link is below its maximum speed and NVML could not say whether the GPU is idle. GPUs train down at "
            "idle, so this is only a fault if it persists under load."
        )
    fix = slot_fix(
        "hardware",
        where,
        "Reseat the GPU, check the riser/cable and the slot; check the BIOS slot speed setting",
        "Power down; reseat the GPU and its riser/cable; confirm the slot is wired x16 "
        "and the BIOS link speed is Auto; replace the riser if the link stays degraded",
        verify,
    )
    return fix, (
        "A link trained below its width, or below its speed while the GPU is busy, is a signal-integrity or seating "
        "problem (riser, cable, dirty or damaged edge connector) or a slot/BIOS limit. It cuts host-to-device and "
        "PCIe P2P bandwidth proportionally (x8 = half), which directly slows tensor-parallel all-reduce on PCIe GPUs."
    )
