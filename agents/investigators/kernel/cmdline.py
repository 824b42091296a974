"""kernel.cmdline_pcie: PCIe options on the kernel command line that cost throughput."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.investigators.kernel import premises
from rigaudit.agents.investigators.kernel.params import CMDLINE, KernelParamsFacts, cmdline_tokens, fix_where
from rigaudit.tools.schema.finding import Finding, Fix, Severity

CMDLINE_PCIE_CHECK = Check(
    "kernel.cmdline_pcie",
    "PCIe options on the kernel command line",
    reads="`/proc/cmdline`",
    problem="`pci=pcie_bus_perf` (caps MaxReadReq at MaxPayload), `pcie_aspm=force`",
    fix="edit the boot line",
    kinds=("reboot",),
    premises=(premises.PLATFORM_FIX, premises.CMDLINE),
)


def judge_cmdline_pcie(facts: KernelParamsFacts) -> Finding:
    evidence = list(facts.refs.get("cmdline", ()))
    if facts.cmdline is None:
        return CMDLINE_PCIE_CHECK.unknown(f"{CMDLINE} not readable", evidence=evidence)
    tokens = cmdline_tokens(facts.cmdline)
    found: list[str] = []
    reasons: list[str] = []
    severity: Severity = "low"
    for token in tokens:
        if token.startswith("pci=") and "pcie_bus_perf" in token[4:].split(","):
            found.append(token)
            reasons.append(
                "pci=pcie_bus_perf sets every device's MaxReadReq to its MaxPayload (256-512 bytes), "
                "undoing a large MaxReadReq and cutting GPU DMA read bandwidth"
            )
            severity = "medium"
        elif token == "pcie_aspm=force":
            found.append(token)
            reasons.append(
                "pcie_aspm=force enables link power states even on devices that do not claim to support "
                "them: L1 exit latency on every GPU transfer, and link errors or hangs on some platforms"
            )
            severity = "medium"
    pcie_opts = [t for t in tokens if t.startswith(("pci=", "pcie_aspm", "pcie_ports"))]
    if not found:
        return CMDLINE_PCIE_CHECK.ok(
            f"no harmful PCIe options ({' '.join(pcie_opts) or 'none set'})",
            expected="no pci=pcie_bus_perf, no pcie_aspm=force",
            evidence=evidence,
        )
    fix = Fix(
        kind="reboot",
        where=fix_where(facts.platform),
        summary=f"Remove {' '.join(found)} from the kernel command line",
        actions=tuple(a for token in found for a in facts.boot.remove(token)[:-1]) + facts.boot.remove(found[-1])[-1:],
        risk="low",
        verify=f"cat {CMDLINE} no longer contains {' '.join(found)}",
        revert=f"add '{' '.join(found)}' back and reboot",
        persist="the command line persists once the boot loader is updated",
    )
    return CMDLINE_PCIE_CHECK.problem_at(
        severity,
        observed=" ".join(found),
        expected="no pci=pcie_bus_perf, no pcie_aspm=force",
        explanation="; ".join(reasons) + ".",
        fix=fix,
        evidence=evidence,
    )
