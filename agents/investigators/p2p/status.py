"""p2p.status: NVML's peer-to-peer read/write status of every GPU pair, with the topology between them."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.nvml_reads import label, nvml_unusable
from rigaudit.agents.facts.platform import Platform
from rigaudit.agents.findings import not_applicable, ok, problem, unknown
from rigaudit.agents.investigators.p2p.facts import AREA, P2P_READ, P2P_WRITE, P2pFacts
from rigaudit.tools.hosts.base import NvmlResult
from rigaudit.tools.model.finding import CommandAction, Finding, Fix, Where
from rigaudit.tools.probe import nvml_ref

P2P_STATUS = {
    0: "OK",
    1: "CHIPSET_NOT_SUPPORTED",
    2: "GPU_NOT_SUPPORTED",
    3: "IOH_TOPOLOGY_NOT_SUPPORTED",
    4: "DISABLED_BY_REGKEY",
    5: "NOT_SUPPORTED",
    6: "UNKNOWN",
}
ANCESTOR = {
    0: "same board",
    10: "one PCIe switch",
    20: "several PCIe switches",
    30: "a PCIe host bridge",
    40: "host bridges within a NUMA node",
    50: "the CPU interconnect (SYS)",
}


def _status(result: NvmlResult) -> int | None:
    return result.value if result.ok and isinstance(result.value, int) else None


def _topology_text(f: P2pFacts) -> str:
    groups: dict[int, list[str]] = {}
    nvlinked = [f"GPU{p.a}–GPU{p.b}" for p in f.pairs if p.nvlink]
    for pair in f.pairs:
        if pair.nvlink:
            continue
        level = pair.ancestor.value if pair.ancestor.ok and isinstance(pair.ancestor.value, int) else -1
        groups.setdefault(level, []).append(f"GPU{pair.a}–GPU{pair.b}")
    parts = []
    for level in sorted(groups):
        names = groups[level]
        where = ANCESTOR.get(level, "an unknown path" if level == -1 else f"level {level}")
        shown = f" ({', '.join(names)})" if len(names) <= 4 else ""
        parts.append(f"{len(names)} pairs through {where}{shown}")
    if nvlinked:
        shown = f" ({', '.join(nvlinked)})" if len(nvlinked) <= 4 else ""
        parts.insert(0, f"{len(nvlinked)} pairs over NVLink{shown}")
    return "; ".join(parts)


def _p2p_fix(codes: set[int], platform: Platform) -> Fix:
    where: Where = "hypervisor" if platform.is_guest else "host"
    verify = "nvidia-smi topo -p2p r and -p2p w show OK for every pair; then `rigaudit bench p2p`"
    if codes == {2}:
        return Fix(
            kind="hardware",
            where=where,
            summary="These GPUs do not support peer-to-peer (consumer cards): "
            "use P2P-capable GPUs or accept NCCL staging through host memory",
            actions=(CommandAction(description="no software fix: GPU_NOT_SUPPORTED is a property of the card"),),
            verify=verify,
            revert="none",
            persist="none",
        )
    if 4 in codes:
        return Fix(
            kind="reboot",
            where=where,
            summary="Remove the driver registry key that disables P2P, then reload the driver",
            actions=(
                CommandAction(
                    description="remove the P2P-disabling NVreg_RegistryDwords entry from "
                    "/etc/modprobe.d/*.conf, update the initramfs and reboot"
                ),
            ),
            risk="medium",
            verify=verify,
            revert="put the registry key back and reboot",
            persist="the modprobe.d edit is persistent",
        )
    return Fix(
        kind="reboot",
        where=where,
        summary="Let P2P through the PCIe path: IOMMU in passthrough (kernel.iommu) and no ACS redirect on the switch "
        "ports between GPUs (pcie.acs)",
        actions=(
            CommandAction(
                description="apply the kernel.iommu and pcie.acs fixes (iommu=pt on the kernel command "
                "line; ACS redirect off on switch downstream ports), reboot, and re-read nvidia-smi topo -p2p r"
            ),
        ),
        risk="medium",
        verify=verify,
        revert="restore the previous kernel command line",
        persist="kernel command line",
    )


P2P_STATUS_CHECK = Check(
    "p2p.status",
    "GPU peer-to-peer status",
    reads="NVML P2P status (read, write) for each GPU pair; NVML common ancestor",
    problem="a pair reports anything but OK",
    fix="per cause: ACS, IOMMU, driver regkey",
    kinds=("runtime", "reboot", "firmware"),
)


def judge_p2p_status(f: P2pFacts) -> Finding:
    check, title = P2P_STATUS_CHECK.id, P2P_STATUS_CHECK.title
    if why := nvml_unusable(f.inventory):
        return unknown(check, AREA, title, why)
    if len(f.inventory.nvml_indices) < 2:
        return not_applicable(check, AREA, title, "fewer than two GPUs: no peer pairs")
    refs = tuple(
        nvml_ref(fn, args)
        for p in f.pairs
        for fn, args in (
            ("nvmlDeviceGetP2PStatus", (p.a, p.b, P2P_READ)),
            ("nvmlDeviceGetP2PStatus", (p.a, p.b, P2P_WRITE)),
            ("nvmlDeviceGetTopologyCommonAncestor", (p.a, p.b)),
        )
    )
    missing = [p for p in f.pairs if _status(p.read) is None or _status(p.write) is None]
    bad = [p for p in f.pairs if p not in missing and (_status(p.read) != 0 or _status(p.write) != 0)]
    good = len(f.pairs) - len(missing) - len(bad)
    topology = _topology_text(f)
    if not bad and missing:
        error = missing[0].read.error or missing[0].write.error or "unknown error"
        shown = "not recorded in this snapshot" if error == "NOT_RECORDED" else error
        return unknown(
            check, AREA, title, f"P2P status of {len(missing)}/{len(f.pairs)} pairs unavailable: {shown}", evidence=refs
        )
    if not bad:
        return ok(
            check,
            AREA,
            title,
            f"{good}/{len(f.pairs)} pairs OK for read and write; topology: {topology}",
            expected="OK for read and write on every pair",
            explanation="NVML allows peer-to-peer on every pair. That says P2P is permitted, not that it is fast or "
            "correct: pairs that cross the CPU interconnect go through the root complex, and only the P2P "
            "micro-benchmark (p2p.bandwidth) shows the bandwidth and whether the copied data is intact.",
            evidence=refs,
        )
    codes: set[int] = set()
    parts = []
    for p in bad:
        r, w = _status(p.read), _status(p.write)
        codes |= {c for c in (r, w) if c}
        parts.append(f"GPU{p.a}–GPU{p.b}: read {P2P_STATUS.get(r or 0, str(r))}, write {P2P_STATUS.get(w or 0, str(w))}")
    shown = "; ".join(parts[:8]) + (f"; and {len(parts) - 8} more" if len(parts) > 8 else "")
    subjects = sorted({label(f.inventory, i) for p in bad for i in (p.a, p.b)})
    return problem(
        check,
        AREA,
        title,
        "high",
        f"{len(bad)}/{len(f.pairs)} pairs refuse P2P: {shown}; topology: {topology}",
        "OK for read and write on every pair",
        "Without P2P, NCCL and the CUDA runtime stage every GPU-to-GPU copy through host memory: all-reduce bandwidth "
        "in tensor parallelism drops by about half on PCIe and latency rises. CHIPSET/IOH_TOPOLOGY_NOT_SUPPORTED usually "
        "means the IOMMU translates DMA or ACS redirects peer traffic to the root complex; DISABLED_BY_REGKEY is a "
        "driver option; GPU_NOT_SUPPORTED is the card itself.",
        _p2p_fix(codes, f.platform),
        subjects=subjects,
        evidence=refs,
    )
