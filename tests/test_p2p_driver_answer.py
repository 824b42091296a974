"""P2P as the driver answers it, not as the product line promises: GPU_NOT_SUPPORTED on every pair of boards whose
line has PCIe P2P (RTX 6000 Ada on some driver branches, a datacenter card the driver refuses) is the product's,
not a vGPU profile or a board mode to change; what it makes harmless (NCCL_P2P_DISABLE) or cheap (BAR1, IOMMU)
follows. NVIDIA: cudaDeviceCanAccessPeer is the final word on P2P support.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from rigaudit.tools.schema.finding import Finding
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.archetypes import TR_5975WX, vllm
from tests.hostgen.spec import GpuSpec, HostSpec
from tests.support.audits import audited

ADA = ARCHETYPES["ws-rtx6000ada"]
ADA_TR = replace(
    ADA,
    name="ws-rtx6000ada-threadripper",
    cpu=TR_5975WX,
    root_complex="amd-rome",
    gpus=GpuSpec("rtx6000ada", 2, ecc=False),
    processes=(vllm("/models/Qwen2.5-32B-Instruct", (0, 1), mib=42000),),
)
L40S_REFUSED = faults.p2p_driver(ARCHETYPES["epyc-nps4-l40s"], "GPU_NOT_SUPPORTED")
REFUSING = [ADA, ADA_TR, L40S_REFUSED]


def finding(spec: HostSpec, check: str) -> Finding:
    result = audited(spec)
    return next(f for f in result.findings if f.check == check)


@pytest.mark.parametrize("spec", REFUSING, ids=[s.name for s in REFUSING])
def test_a_driver_refusing_p2p_on_every_pair_is_the_product_not_a_fault(spec: HostSpec) -> None:
    """Before: 'the GPU itself refuses P2P although the model supports it: a vGPU profile or a mode' (medium)."""
    p2p = finding(spec, "p2p.status")
    assert p2p.status == "not_applicable", p2p.observed
    assert "driver refuses PCIe peer-to-peer" in p2p.observed and "vGPU profile" not in p2p.observed


@pytest.mark.parametrize("spec", REFUSING, ids=[s.name for s in REFUSING])
def test_an_nccl_p2p_override_is_harmless_where_the_driver_refuses_p2p(spec: HostSpec) -> None:
    env = finding(faults.server_env(spec, NCCL_P2P_DISABLE="1"), "nccl.env")
    assert env.status == "ok" and "harmless" in env.observed, env.observed


@pytest.mark.parametrize(("spec", "want"), [(ADA, "low"), (ADA_TR, "low")], ids=["w790", "threadripper"])
def test_what_only_peers_would_use_is_cheap_where_the_driver_refuses_p2p(spec: HostSpec, want: str) -> None:
    assert finding(faults.bar1_small(spec), "firmware.rebar").severity == want
    assert finding(faults.iommu_translated(spec), "kernel.iommu").severity == want


@pytest.mark.parametrize("spec", [ADA, ADA_TR], ids=["w790", "threadripper"])
def test_a_driver_that_allows_p2p_on_the_same_boards_is_judged_as_p2p(spec: HostSpec) -> None:
    allowed = faults.p2p_driver(spec)
    assert finding(allowed, "p2p.status").status == "ok"
    assert finding(faults.server_env(allowed, NCCL_P2P_DISABLE="1"), "nccl.env").severity == "high"
