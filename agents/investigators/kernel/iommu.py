"""kernel.iommu: is GPU DMA translated by the IOMMU where PCIe P2P needs passthrough?"""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.investigators.kernel import premises
from rigaudit.agents.investigators.kernel.params import GpuIommu, KernelParamsFacts, cmdline_tokens, fix_where
from rigaudit.tools.schema.finding import Finding, Fix, Severity

IOMMU_CHECK = Check(
    "kernel.iommu",
    "IOMMU mode for GPU DMA and P2P",
    reads="`/proc/cmdline`, `/sys/kernel/iommu_groups/*/type`, kernel log",
    problem="translated DMA on a bare-metal multi-GPU host doing PCIe P2P (normal inside a VM guest)",
    fix="`iommu=pt` (+ `amd_iommu=on`/`intel_iommu=on`) on the command line",
    kinds=("reboot",),
    premises=(premises.PLATFORM, premises.GPUS),
)


def _untranslated(facts: KernelParamsFacts, typed: list[GpuIommu], host_gpus: list[GpuIommu], args_text: str) -> Finding:
    """No GPU's IOMMU domain translates DMA: no IOMMU groups at all, or identity domains."""
    evidence = _iommu_refs(facts)
    if not typed:
        if facts.groups_listed is not None and facts.groups_listed:
            return IOMMU_CHECK.unknown("IOMMU groups exist but the GPUs' group types are not readable", evidence=evidence)
        return IOMMU_CHECK.ok(
            f"no IOMMU groups: DMA is not translated ({args_text})",
            expected="passthrough (identity) or no IOMMU for GPU DMA on bare metal",
            explanation="With no IOMMU domain, GPU DMA and PCIe P2P go untranslated.",
            evidence=evidence,
        )
    kinds = sorted({g.domain_type or "" for g in typed})
    observed = f"{args_text}; {len(typed)}/{len(facts.gpus)} GPU IOMMU groups {'/'.join(kinds)}"
    observed += " (passthrough)" if kinds == ["identity"] else ""
    vfio = len(facts.gpus) - len(host_gpus)
    if vfio:
        observed += f"; {vfio} GPU(s) in vfio-owned groups (passed to VMs)"
    return IOMMU_CHECK.ok(
        observed,
        expected="identity (passthrough) domains for host GPUs",
        explanation="GPU DMA bypasses IOMMU translation, which is what NVIDIA supports for PCIe P2P on bare metal.",
        evidence=evidence,
    )


def _translation_harmless(facts: KernelParamsFacts, observed: str, host_count: int) -> Finding | None:
    """Translated DMA that costs no P2P: inside a VM guest, or with a single host GPU."""
    evidence = _iommu_refs(facts)
    if facts.platform.in_vm:
        return IOMMU_CHECK.ok(
            observed,
            expected="translated DMA is normal inside a VM guest",
            explanation="Inside a VM the guest's IOMMU (if any) is virtual; GPU DMA isolation is the hypervisor's job, and "
            "P2P between passed-through GPUs depends on the hypervisor's configuration, not the guest's iommu= option.",
            evidence=evidence,
        )
    if host_count < 2:
        return IOMMU_CHECK.ok(
            observed,
            expected="passthrough on multi-GPU hosts",
            explanation="Translated DMA costs some IOTLB overhead, but with a single GPU there is no GPU-to-GPU P2P "
            "for it to break.",
            evidence=evidence,
        )
    return None


def _passthrough_fix(facts: KernelParamsFacts) -> Fix:
    vendor_opt = {"AuthenticAMD": "amd_iommu=on ", "GenuineIntel": "intel_iommu=on "}.get(facts.cpu_vendor or "", "")
    return Fix(
        kind="reboot",
        where=fix_where(facts.platform),
        summary=f"Boot with {vendor_opt}iommu=pt so host GPUs get identity (passthrough) DMA domains",
        actions=facts.boot.add(f"{vendor_opt}iommu=pt".strip()),
        risk="low",
        verify="cat /sys/kernel/iommu_groups/*/type shows identity for the GPUs' groups; dmesg shows "
        "'iommu: Default domain type: Passthrough'",
        revert=facts.boot.words("remove iommu=pt"),
        persist="the command line persists once the boot loader is updated",
        provides=("iommu.passthrough",),
    )


def _translation_cost(facts: KernelParamsFacts) -> tuple[Severity, str]:
    """(severity, why) of translated DMA on a bare-metal multi-GPU host: less where no GPU peer traffic needs P2P."""
    moot = facts.p2p.pcie_peer_traffic() or facts.p2p.pcie_peers_unused()
    if moot is None:
        return "high", (
            "With translated IOMMU domains every GPU DMA goes through the IOMMU; NVIDIA does not support PCIe P2P "
            "through a translating IOMMU: peer copies can fail, hang or silently corrupt data, and NCCL falls back to "
            "slower paths."
        )
    return "medium" if facts.p2p.rdma_active else "low", (
        f"Translated DMA matters little for GPU peer traffic here: {moot}. "
        + (
            "It still sits between the RDMA NICs and the GPUs: GPUDirect RDMA through a translating IOMMU is not "
            "supported by NVIDIA and falls back or fails, so multi-node and disaggregated traffic pays for it."
            if facts.p2p.rdma_active
            else "What remains is the IOTLB cost of translating host-to-device copies and pinned-memory mappings: "
            "small, so iommu=pt is hygiene here."
        )
    )


def _iommu_refs(facts: KernelParamsFacts) -> list[str]:
    """What the IOMMU verdicts cite: the command line, the groups' types, the kernel log."""
    return list(facts.refs.get("iommu", ()))


def judge_iommu(facts: KernelParamsFacts) -> Finding:
    evidence = _iommu_refs(facts)
    iommu_args = [t for t in cmdline_tokens(facts.cmdline) if t.startswith(("iommu=", "amd_iommu=", "intel_iommu="))]
    args_text = " ".join(iommu_args) or "no IOMMU options"
    host_gpus = [g for g in facts.gpus if g.domain_type not in ("unmanaged", "blocked")]
    typed = [g for g in host_gpus if g.domain_type]
    translated = [g for g in typed if g.domain_type in ("DMA", "DMA-FQ")]
    if facts.cmdline is None and not typed:
        return IOMMU_CHECK.unknown("/proc/cmdline and the GPUs' IOMMU groups are not readable", evidence=evidence)
    if not facts.gpus:
        return IOMMU_CHECK.ok(f"no NVIDIA GPU; command line: {args_text}", evidence=evidence)
    if not translated:
        return _untranslated(facts, typed, host_gpus, args_text)
    observed = f"{args_text}; {len(translated)}/{len(facts.gpus)} GPU IOMMU groups translated ({translated[0].domain_type})"
    if facts.kernel_iommu_line:
        observed += f"; kernel: {facts.kernel_iommu_line}"
    if (harmless := _translation_harmless(facts, observed, len(host_gpus))) is not None:
        return harmless
    severity, why = _translation_cost(facts)
    return IOMMU_CHECK.problem_at(
        severity,
        observed,
        "identity (passthrough) domains for GPUs on a bare-metal multi-GPU host",
        why + " iommu=pt keeps the IOMMU on (VFIO and interrupt remapping still work) but gives host-owned "
        "devices identity mappings.",
        _passthrough_fix(facts),
        subjects=[g.gpu.label for g in translated],
        evidence=[*evidence, *facts.p2p.refs],
    )
