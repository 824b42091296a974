"""GPUs joined in pairs by NVLink bridges (H100 NVL, A100 PCIe): NVLink within a pair, PCIe across the pairs.

Both GPUs of a cross pair have their NVLinks up (each to its own partner), which is not the two being joined: the
pair is NVLinked only where NVML's NVLink P2P capability says so (or, where that is not recorded, where the link's
remote PCI address is the other GPU). What crosses PCIe then decides the IOMMU and P2P verdicts, by what the
servers' GPU groups use.
"""

from __future__ import annotations

from dataclasses import replace

import anyio
import pytest

from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.finding import Finding
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.archetypes import EPYC_9354, vllm
from tests.hostgen.cache import snapshot
from tests.hostgen.spec import GpuSpec, HostSpec
from tests.support.audits import audited
from tests.support.mutate import light_copy, remove_nvml

NVL = ARCHETYPES["h100nvl-bridged-pairs"]
MODEL = "/models/Llama-3.1-70B-Instruct-FP8"
NVL8_AMD = replace(
    NVL,
    name="nvl8-genoa",
    hostname="nvl8-genoa",
    cpu=EPYC_9354,
    root_complex="amd-genoa",
    gpus=GpuSpec("h100-nvl", 8, nvlink_bridges=((0, 1), (2, 3), (4, 5), (6, 7))),
    processes=tuple(vllm(MODEL, (2 * k, 2 * k + 1), mib=86000, port=8000 + k) for k in range(4)),
)
"""Eight H100 NVL on a two-socket Genoa: AMD lets every PCIe pair peer, so the pairs across bridges talk over PCIe."""
NVL8_TP4 = replace(
    NVL8_AMD,
    name="nvl8-genoa-tp4",
    processes=(vllm(MODEL, (0, 1, 2, 3), mib=86000), vllm(MODEL, (4, 5, 6, 7), mib=86000, port=8001)),
)
BRIDGED = [NVL, NVL8_AMD, NVL8_TP4]


def audit(spec: HostSpec) -> AuditResult:
    return audited(spec)


def finding(result: AuditResult, check: str) -> Finding:
    return next(f for f in result.findings if f.check == check)


@pytest.mark.parametrize("spec", BRIDGED, ids=[s.name for s in BRIDGED])
def test_a_cross_pair_is_not_taken_for_an_nvlink_pair(spec: HostSpec) -> None:
    """Before: every pair whose two GPUs had NVLink up counted as NVLinked, so the cross pairs refused over UPI were
    'joined by NVLink yet refused: the fabric is down' (high)."""
    p2p = finding(audit(spec), "p2p.status")
    assert "NVLink fabric is not up" not in p2p.explanation and "NVLink yet P2P is refused" not in p2p.explanation
    assert p2p.status in ("ok", "not_applicable") or p2p.severity == "low", p2p.observed
    links = finding(audit(spec), "nvlink.links")
    assert links.status == "ok", links.observed


@pytest.mark.parametrize("spec", [NVL, NVL8_AMD], ids=["r760xa-intel", "genoa-8"])
def test_the_pairs_are_told_without_nvmls_nvlink_capability(tmp_path: object, spec: HostSpec) -> None:
    """A snapshot without the NVLink P2P capability records: the links' remote PCI addresses tell the partner."""
    root = light_copy(snapshot(spec), tmp_path / "copy")  # type: ignore[operator]
    count = spec.gpus.count
    for a in range(count):
        for b in range(count):
            if a != b:
                remove_nvml(root, "nvmlDeviceGetP2PStatus", (a, b, 2))
    result = anyio.run(lambda: run_audit(SnapshotHost(root)))
    p2p = finding(result, "p2p.status")
    assert "NVLink yet P2P is refused" not in p2p.explanation, p2p.explanation
    assert "pairs over NVLink" in p2p.observed and f"{count // 2} pairs over NVLink" in p2p.observed, p2p.observed


@pytest.mark.parametrize(
    ("spec", "want"),
    [(NVL, "problem:medium"), (NVL8_AMD, "problem:medium"), (NVL8_TP4, "problem:high")],
    ids=["tp2-per-pair", "genoa-tp2-per-pair", "genoa-tp4-across-pairs"],
)
def test_a_translating_iommu_costs_what_the_servers_send_over_pcie(spec: HostSpec, want: str) -> None:
    """TP 2 on each bridged pair sends nothing between GPUs over PCIe (the RDMA NICs keep it medium); TP 4 across two
    pairs does (high). Before: high whenever some pair could peer over PCIe."""
    iommu = finding(audit(faults.iommu_translated(spec)), "kernel.iommu")
    assert f"{iommu.status}:{iommu.severity}" == want, iommu.explanation
    if want.endswith("medium"):
        assert "no server's GPUs peer over PCIe" in iommu.explanation


def test_an_unseated_bridge_is_a_down_nvlink_and_the_pair_falls_to_pcie() -> None:
    result = audit(faults.nvlink_bridge_unseated(NVL))
    links = finding(result, "nvlink.links")
    assert links.status == "problem" and links.severity == "high" and "GPU2" in links.observed and "GPU3" in links.observed
    assert "2 pairs over NVLink" not in finding(result, "p2p.status").observed
