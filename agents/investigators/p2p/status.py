"""p2p.status: NVML's peer-to-peer read/write status of every GPU pair, with the topology between them."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.deliberate import CONFIDENTIAL_COMPUTING
from rigaudit.agents.facts.gpu_address import HYPERVISOR_LOOKUP, gpu_identity
from rigaudit.agents.facts.nvml_reads import label, nvml_unusable
from rigaudit.agents.facts.peer_groups import together
from rigaudit.agents.investigators.p2p import premises
from rigaudit.agents.investigators.p2p.causes import RANK, SEVERITY, SYS, WHY, Cause, Context, PairView, cause, fix_for
from rigaudit.agents.investigators.p2p.facts import P2P_READ, P2P_WRITE, P2pFacts, Pair
from rigaudit.tools.hosts.base import NvmlResult
from rigaudit.tools.hosts.probe import nvml_ref
from rigaudit.tools.schema.finding import SEVERITY_ORDER, Finding, Severity

P2P_STATUS = {
    0: "OK",
    1: "CHIPSET_NOT_SUPPORTED",
    2: "GPU_NOT_SUPPORTED",
    3: "IOH_TOPOLOGY_NOT_SUPPORTED",
    4: "DISABLED_BY_REGKEY",
    5: "NOT_SUPPORTED",
    6: "UNKNOWN",
}
"""``nvmlGpuP2PStatus_t``."""
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


P2P_STATUS_CHECK = Check(
    "p2p.status",
    "GPU peer-to-peer status",
    reads="NVML P2P status (read, write) for each GPU pair; NVML common ancestor",
    problem="a pair reports anything but OK, by cause read off this host: driver regkey, NVLink fabric not completed "
    "(critical, as driver.fabricmanager grades it, VM guests included), NVLink down, "
    "translating IOMMU, ACS redirect, the VM's emulated topology, vGPUs (no P2P over PCIe), the BIOS; pairs across an "
    "Intel CPU interconnect are a low topology note (ok when no server's GPUs span them); GeForce cards, boards the "
    "driver refuses P2P on (GPU_NOT_SUPPORTED on every pair) and MIG slices have no P2P by design (not applicable)",
    fix="per cause: regkey, fabric manager, iommu=pt, ACS, the VM definition (x-nv-gpudirect-clique), BIOS, TP placement",
    kinds=("runtime", "restart", "reboot", "firmware"),
    premises=(premises.PLATFORM, premises.GPUS, premises.P2P, premises.GPU_CONFIG),
)


def _status_refs(f: P2pFacts) -> tuple[str, ...]:
    return tuple(
        nvml_ref(fn, args)
        for p in f.pairs
        for fn, args in (
            ("nvmlDeviceGetP2PStatus", (p.a, p.b, P2P_READ)),
            ("nvmlDeviceGetP2PStatus", (p.a, p.b, P2P_WRITE)),
            ("nvmlDeviceGetTopologyCommonAncestor", (p.a, p.b)),
        )
    )


def judge_p2p_status(f: P2pFacts) -> Finding:
    if why := nvml_unusable(f.inventory):
        return P2P_STATUS_CHECK.unknown(why)
    if len(f.inventory.nvml_indices) < 2:
        return P2P_STATUS_CHECK.not_applicable("fewer than two GPUs: no peer pairs")
    refs = _status_refs(f)
    missing = [p for p in f.pairs if _status(p.read) is None or _status(p.write) is None]
    bad = [p for p in f.pairs if p not in missing and (_status(p.read) != 0 or _status(p.write) != 0)]
    if bad and f.cc_on:
        return _confidential(f, bad, refs)
    if bad:
        return _refused(f, bad, missing, refs)
    if missing:
        error = missing[0].read.error or missing[0].write.error or "unknown error"
        shown = "not recorded in this snapshot" if error == "NOT_RECORDED" else error
        return P2P_STATUS_CHECK.unknown(f"P2P status of {len(missing)}/{len(f.pairs)} pairs unavailable: {shown}", evidence=refs)
    return P2P_STATUS_CHECK.ok(
        f"{len(f.pairs)}/{len(f.pairs)} pairs OK for read and write; topology: {_topology_text(f)}",
        expected="OK for read and write on every pair",
        explanation="NVML allows peer-to-peer on every pair. That says P2P is permitted, not that it is fast or "
        "correct: pairs that cross the CPU interconnect go through the root complex, and only the P2P "
        "micro-benchmark (p2p.bandwidth) shows the bandwidth and whether the copied data is intact.",
        evidence=refs,
    )


def _confidential(f: P2pFacts, bad: list[Pair], refs: tuple[str, ...]) -> Finding:
    """CC mode refuses P2P by design: nothing on the hypervisor or the host would let it through."""
    cc = CONFIDENTIAL_COMPUTING
    return P2P_STATUS_CHECK.ok(
        f"{len(bad)}/{len(f.pairs)} pairs refuse P2P with the GPUs in confidential-computing mode (NVML's CC state on); "
        f"topology: {_topology_text(f)}",
        expected="OK for read and write on every pair, unless a mode refuses it by design",
        explanation=f"Deliberate ({cc.key}): {cc.what}; {cc.conditions[0]}. The cost: copies between GPUs (NCCL's "
        f"all-reduce in tensor parallelism) go through encrypted staging buffers; {cc.conditions[1]} ({cc.source}).",
        evidence=(*refs, "nvml:nvmlSystemGetConfComputeState()"),
    )


def _refusal_context(f: P2pFacts, bad: list[Pair], missing: list[Pair]) -> Context:
    """What the causes are read against, with whether exactly the pairs across the CPU interconnect are refused."""
    across = [p for p in f.pairs if p.ancestor.ok and p.ancestor.value == SYS and not p.nvlink]
    within = [p for p in f.pairs if p not in across and p not in missing]
    pattern = bool(across) and all(p in bad for p in across) and not any(p in bad for p in within)
    return Context(f.platform, f.context, f.paths, f.cpu_vendor, f.boot, pattern)


def _by_cause(f: P2pFacts, bad: list[Pair], context: Context) -> tuple[dict[Cause, list[Pair]], list[str]]:
    """The refused pairs by cause, and each pair's refusal in words."""
    bdf = {g.index: g.bdf for g in f.inventory.gpus if g.index is not None}
    by_cause: dict[Cause, list[Pair]] = {}
    parts = []
    for p in bad:
        r, w = _status(p.read), _status(p.write)
        view = PairView(
            p.a,
            p.b,
            bdf.get(p.a, ""),
            bdf.get(p.b, ""),
            frozenset(c for c in (r, w) if c),
            p.ancestor.value if p.ancestor.ok and isinstance(p.ancestor.value, int) else None,
            p.nvlink,
        )
        by_cause.setdefault(cause(view, context), []).append(p)
        parts.append(f"GPU{p.a}–GPU{p.b}: read {P2P_STATUS.get(r or 0, str(r))}, write {P2P_STATUS.get(w or 0, str(w))}")
    return by_cause, parts


def _refused(f: P2pFacts, bad: list[Pair], missing: list[Pair], refs: tuple[str, ...]) -> Finding:
    """Some pairs refuse P2P: not applicable where the model never peers, ok where no server spans them, else a problem
    at the worst cause's severity."""
    context = _refusal_context(f, bad, missing)
    by_cause, parts = _by_cause(f, bad, context)
    shown = "; ".join(parts[:8]) + (f"; and {len(parts) - 8} more" if len(parts) > 8 else "")
    subjects = sorted({label(f.inventory, i) for p in bad for i in (p.a, p.b)})
    kinds = sorted(by_cause, key=lambda k: RANK[k])
    causes_text = " ".join(f"{len(by_cause[k])} pair(s): {WHY[k]}." for k in kinds)
    observed = f"{len(bad)}/{len(f.pairs)} pairs refuse P2P: {shown}; topology: {_topology_text(f)}"
    faults = [k for k in kinds if SEVERITY[k] is not None]
    refs = (*refs, *f.context.refs, *f.paths.refs)
    if not faults:
        return P2P_STATUS_CHECK.not_applicable(
            f"{observed}. {causes_text} Not a fault: NCCL moves GPU-to-GPU traffic through host memory on these GPUs, "
            "whatever the IOMMU, ACS or NCCL settings say.",
            evidence=refs,
        )
    if faults == ["topology"] and (unused := _unused_refusal(f, by_cause["topology"], observed, causes_text, refs)):
        return unused
    severity = _refusal_severity(f, faults)
    return P2P_STATUS_CHECK.problem_at(
        severity,
        observed,
        "OK for read and write on every pair",
        f"{_refusal_cost(f, faults, severity)} Causes, read off this host: {causes_text}",
        fix_for(faults, context, _fix_names(f, bad, subjects, faults)),
        subjects=subjects,
        evidence=refs,
    )


def _unused_refusal(f: P2pFacts, refused: list[Pair], observed: str, causes_text: str, refs: tuple[str, ...]) -> Finding | None:
    """ok where pairs refused for the topology are spanned by no server's GPUs (None: some are, or it is not known)."""
    groups = f.context.groups
    if groups is None or any(together(groups, p.a, p.b) for p in refused):
        return None
    shown_groups = ", ".join("+".join(f"GPU{i}" for i in sorted(g)) for g in groups)
    return P2P_STATUS_CHECK.ok(
        f"{observed}. No server's GPUs span a refused pair (server GPU groups: {shown_groups})",
        expected="OK for read and write on every pair a server uses",
        explanation=f"{causes_text} Every server instance keeps its GPUs on one side of the CPU interconnect, "
        "so no traffic between GPUs needs the refused path today; a server whose tensor-parallel group spans "
        "the sockets would pay (NCCL stages its copies through host memory).",
        evidence=refs,
    )


def _refusal_severity(f: P2pFacts, faults: list[Cause]) -> Severity:
    """The worst cause's severity; low for a cloud's hypervisor, medium at most with tensor parallelism 1."""
    severity: Severity = min((SEVERITY[k] or "low" for k in faults), key=lambda s: SEVERITY_ORDER[s])
    if faults == ["hypervisor"] and f.platform.cloud:
        # The provider's hypervisor decides: nothing the user can change in place; NCCL uses shared memory.
        severity = "low"
    if severity == "high" and f.context.tp == 1:
        severity = "medium"
    return severity


def _fix_names(f: P2pFacts, bad: list[Pair], subjects: list[str], faults: list[Cause]) -> str:
    """The GPUs as the fix names them: in a VM guest by what the hypervisor knows them by."""
    names = ", ".join(subjects)
    if f.platform.in_vm and faults != ["fabric"]:  # the fix runs on the hypervisor: guest addresses mean nothing there
        gpus = [g for i in sorted({i for p in bad for i in (p.a, p.b)}) if (g := f.inventory.by_index(i)) is not None]
        names = "; ".join(gpu_identity(g) for g in gpus) + f" (this VM sees them as {names}): {HYPERVISOR_LOOKUP}"
    return names


def _refusal_cost(f: P2pFacts, faults: list[Cause], severity: Severity) -> str:
    if "fabric" in faults:
        return (
            "While NVML reports the NVLink fabric not completed, CUDA refuses work on these GPUs (cudaErrorSystemNotReady, "
            "802): a server cannot start on them, whatever path P2P would take; the severity is driver.fabricmanager's."
        )
    return (
        "Without P2P, NCCL and the CUDA runtime stage every GPU-to-GPU copy through host memory: all-reduce "
        "bandwidth in tensor parallelism drops by about half on PCIe and latency rises."
        + (
            f" On a {f.platform.cloud} VM that is the instance type's property (low): nothing to change in place."
            if severity == "low" and f.platform.cloud
            else ""
        )
        + (" The servers here run with tensor parallelism 1, so only multi-GPU work would pay." if f.context.tp == 1 else "")
    )
