"""pcie.mrrs, pcie.mps: the GPUs' Max Read Request size, and MaxPayload against the bridges above them."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.gpus import Gpu
from rigaudit.agents.investigators.cloud import for_cloud
from rigaudit.agents.investigators.pcie import premises
from rigaudit.agents.investigators.pcie.facts import PcieFacts, config_refs, fix_where, no_gpus
from rigaudit.agents.persist import boot_script_persist
from rigaudit.tools.core.record import Record
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix, PciRegisterAction, Severity

MAX_READ_REQUEST_CHECK = Check(
    "pcie.mrrs",
    "GPU PCIe Max Read Request size",
    reads="PCIe Device Control bits 14:12 in `/sys/bus/pci/devices/BDF/config`",
    problem="GPU MaxReadReq below 4096 bytes",
    fix="`setpci -s BDF CAP_EXP+8.w=5000:7000` with the GPU idle",
    kinds=("runtime",),
    premises=(premises.PLATFORM, premises.GPUS),
)


_LANE_GBS = {2.5: 0.25, 5.0: 0.5, 8.0: 0.985, 16.0: 1.969, 32.0: 3.938, 64.0: 7.563}
"""GB/s per lane and direction by link speed (GT/s), after encoding."""


def _link_gbs(facts: PcieFacts, gpus: list[Gpu]) -> float:
    """The fastest of the GPUs' links (max speed and width), in GB/s; Gen5 x16 when sysfs does not say."""
    best = 0.0
    for gpu in gpus:
        attrs = facts.links.get(gpu.bdf)
        if attrs and attrs.max_speed and attrs.max_width:
            best = max(best, _LANE_GBS.get(attrs.max_speed, 3.938) * attrs.max_width)
    return best or 63.0


class _ReadRequests(Record):
    """The GPUs' MaxReadReq as read from their Device Control register."""

    values: dict[str, int]
    """GPU BDF -> MaxReadReq in bytes."""
    errors: list[str]
    """Why a GPU's was not read."""
    ext_tags_off: list[str]
    """GPUs with Extended Tags off (32 reads in flight, not 256)."""


def _read_requests(facts: PcieFacts) -> _ReadRequests:
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
    return _ReadRequests(values, errors, ext_tags_off)


def judge_max_read_request(facts: PcieFacts) -> Finding:
    if not facts.gpus:
        return no_gpus(MAX_READ_REQUEST_CHECK)
    found = _read_requests(facts)
    values, errors = found.values, found.errors
    evidence = config_refs(facts, [g.bdf for g in facts.gpus])
    if not values:
        return MAX_READ_REQUEST_CHECK.unknown(
            "; ".join(errors[:2]) + " (config space beyond 64 bytes needs root)", evidence=evidence
        )
    low = [g for g in facts.gpus if values.get(g.bdf, 4096) < 4096]
    summary = ", ".join(
        f"{size} bytes on {sum(1 for v in values.values() if v == size)}/{len(facts.gpus)} GPUs"
        for size in sorted(set(values.values()))
    )
    if not low:
        note = f"; unknown on {len(errors)}: {errors[0]}" if errors else ""
        return MAX_READ_REQUEST_CHECK.ok(f"MaxReadReq {summary}{note}", expected="MaxReadReq 4096 bytes", evidence=evidence)
    severity, explanation = _read_bound(facts, low, values, found.ext_tags_off)
    return MAX_READ_REQUEST_CHECK.problem_at(
        severity,
        observed=f"MaxReadReq {summary}",
        expected="MaxReadReq 4096 bytes on every GPU",
        explanation=explanation,
        fix=for_cloud(_mrrs_fix(facts, low, values), facts.platform, low),  # a cloud's guest cannot reach the register
        subjects=[g.label for g in low],
        evidence=evidence,
    )


def _read_bound(facts: PcieFacts, low: list[Gpu], values: dict[str, int], ext_tags_off: list[str]) -> tuple[Severity, str]:
    """How far the small requests bound read bandwidth below the link's (medium when well below), and why."""
    smallest = min(values[g.bdf] for g in low)
    tags_in_flight = 32 if ext_tags_off else 256
    bound = tags_in_flight * smallest / 1000
    link = _link_gbs(facts, low)
    severity: Severity = "medium" if bound < 0.8 * link else "low"
    tags = (
        f" Extended Tags are {'off' if ext_tags_off else 'on'}"
        + (f" on {len(ext_tags_off)}/{len(facts.gpus)} GPUs (DevCtl ExtTag-)" if ext_tags_off else "")
        + f", so at most {tags_in_flight} reads can be outstanding: {tags_in_flight} x {smallest} bytes = "
        f"{tags_in_flight * smallest // 1024} KiB in flight, which with about 1 us of read latency behind a switch "
        f"bounds reads near {bound:.0f} GB/s against the link's {link:.0f} GB/s: "
        + (
            "a real limit on host-to-device copies and weight loading (medium)."
            if severity == "medium"
            else "enough to fill the link, so the larger request buys little (low)."
        )
    )
    explanation = (
        "MaxReadReq caps every DMA read the GPU issues: host-to-device copies (the GPU's copy engines read host memory), "
        "model weight loading, KV-cache offload and PCIe peer reads are split into requests of this size. Small requests "
        "cost more request TLPs and completion tags per byte, which lowers achievable read bandwidth, most visibly "
        "behind PCIe switches where read latency is higher." + tags + " Completions still arrive in MaxPayload-sized packets, "
        "so the change is safe for the fabric; NCCL's P2P transport mostly uses writes (bounded by MaxPayload), so measure "
        "the gain with a copy benchmark. The setting is lost at reboot (firmware or pci=pcie_bus_perf sets it again)."
    )
    return severity, explanation


def _mrrs_fix(facts: PcieFacts, low: list[Gpu], values: dict[str, int]) -> Fix:
    """Write MaxReadReq 4096 into each low GPU's Device Control, with a boot unit to keep it."""
    bdfs = tuple(g.bdf for g in low)
    reverts = "; ".join(f"setpci -s {g.bdf} CAP_EXP+8.w={(values[g.bdf].bit_length() - 8) << 12:04x}:7000" for g in low)
    return Fix(
        kind="runtime",
        where=fix_where(facts.platform, "kernel"),
        summary=f"Set MaxReadReq to 4096 bytes on {len(low)} GPU(s) (PCIe DevCtl bits 14:12 = 5), with the GPUs idle",
        actions=(PciRegisterAction(devices=bdfs, capability="exp", offset=8, width=2, value=0x5000, mask=0x7000),),
        risk="medium",
        verify=f"setpci -s {bdfs[0]} CAP_EXP+8.w shows bits 14:12 = 5 (0x5xxx); lspci -vvv -s {bdfs[0]} shows "
        "'MaxReadReq 4096 bytes'; re-run the audit",
        revert=reverts,
        persist=boot_script_persist(
            "rigaudit-mrrs", "; ".join(f"setpci -s {b} CAP_EXP+8.w=5000:7000" for b in bdfs), facts.platform.image
        )
        or "a oneshot unit run at boot before the inference service, e.g. /etc/systemd/system/rigaudit-mrrs.service with "
        + " ".join(f"ExecStart=/usr/bin/setpci -s {b} CAP_EXP+8.w=5000:7000" for b in bdfs)
        + " (Type=oneshot, WantedBy=multi-user.target), then systemctl enable rigaudit-mrrs",
    )


MAX_PAYLOAD_CHECK = Check(
    "pcie.mps",
    "MaxPayload of GPUs and the bridges above them",
    reads="Device Capabilities/Control MaxPayload on the GPU and every bridge above it",
    problem="endpoint payload larger than a bridge's (not applicable in a VM guest: vfio keeps it virtual)",
    fix="BIOS or `pci=pcie_bus_safe`",
    kinds=("reboot",),
    premises=(premises.PLATFORM, premises.GPUS, premises.TOPOLOGY),
)


def judge_max_payload(facts: PcieFacts) -> Finding:
    if not facts.gpus:
        return no_gpus(MAX_PAYLOAD_CHECK)
    if facts.platform.in_vm:
        why = (
            "a VM guest: vfio keeps a passed-through device's MaxPayload virtual (what the guest reads and writes never "
            "reaches the hardware) and the bridges above it are the hypervisor's emulation; the physical path's "
            "MaxPayload is set by the hypervisor's kernel (check it there)"
        )
        return MAX_PAYLOAD_CHECK.not_applicable(why)
    mismatches, checked, unread = _payload_paths(facts)
    evidence = config_refs(facts, [*[g.bdf for g in facts.gpus], *facts.bridges]) + [c.ref for c in facts.chains.values()]
    if mismatches:
        return MAX_PAYLOAD_CHECK.problem_at(
            "high",
            observed="; ".join(mismatches),
            expected="each GPU's MaxPayload no larger than any bridge's on its path",
            explanation="A device sending TLPs larger than a bridge on its path accepts makes the bridge drop them as "
            "Malformed TLPs: AER errors, stalls and in the worst case a GPU falling off the bus. The kernel "
            "normally makes the path consistent at boot; a mismatch means firmware or a hand edit changed it.",
            fix=_mps_fix(facts),
            subjects=[m.split(" MaxPayload")[0] for m in mismatches],
            evidence=evidence,
        )
    if not checked:
        return MAX_PAYLOAD_CHECK.unknown(f"config space not readable for: {', '.join(unread[:4])}", evidence=evidence)
    note = f"; not readable: {', '.join(unread[:4])}" if unread else ""
    return MAX_PAYLOAD_CHECK.ok(
        f"MaxPayload {'/'.join(sorted(set(checked)))} bytes on {len(checked)}/{len(facts.gpus)} GPUs; "
        f"no bridge above them smaller{note}",
        expected="GPU MaxPayload <= every bridge above it",
        evidence=evidence,
    )


def _payload_paths(facts: PcieFacts) -> tuple[list[str], list[str], list[str]]:
    """Each GPU's MaxPayload against the bridges above it: the mismatches, the GPUs' sizes where none, and what was
    not readable."""
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
    return mismatches, checked, unread


def _mps_fix(facts: PcieFacts) -> Fix:
    """pci=pcie_bus_safe (or the BIOS): never MaxPayload by hand."""
    return Fix(
        kind="reboot",
        where=fix_where(facts.platform, "firmware"),
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
