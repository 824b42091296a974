"""pcie.acs: ACS redirect on a switch costs what the GPU traffic under that switch is, read off the host.

Redirect on the downstream ports between two GPUs sends their peer writes up to the root complex. That costs only
where those two GPUs exchange traffic over PCIe: a pair the driver lets peer over PCIe (not GeForce on the stock
driver, not NVLinked, not MIG slices), held by one server instance (a tensor-parallel group, or expert / pipeline
parallelism). GPUs of different instances exchange nothing; a TP group that spans two switches crosses the root
complex anyway. When the servers cannot be traced (no server, a job that is not a server), it is judged by what
the GPUs can do.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from rigaudit.tools.schema.finding import Finding
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.archetypes import vllm
from tests.hostgen.spec import GpuSpec, HostSpec, ProcessSpec
from tests.support.audits import audited

MODEL = "/models/Llama-3.1-8B-Instruct"
L40S = ARCHETYPES["l40s-pex-iommu"]
REPLICAS = replace(L40S, name="l40s-8-replicas", processes=tuple(vllm(MODEL, (g,), mib=40000, port=8000 + g) for g in range(8)))
ACROSS_SWITCHES = replace(
    L40S, name="l40s-tp2-across", processes=tuple(vllm(MODEL, (g, g + 4), mib=40000, port=8000 + g) for g in range(4))
)
EXPERT_PARALLEL = replace(
    L40S,
    name="l40s-dp4-ep",
    processes=(
        replace(
            vllm(MODEL, (0, 1, 2, 3), mib=40000),
            argv=(
                "/usr/bin/python3",
                "-m",
                "vllm.entrypoints.openai.api_server",
                "--model",
                "/models/Qwen3-30B-A3B",
                "--tensor-parallel-size",
                "1",
                "--data-parallel-size",
                "4",
                "--enable-expert-parallel",
            ),
        ),
    ),
)
TRAINING = faults.server(REPLICAS, ProcessSpec(("/usr/bin/python3", "train.py"), gpus=(0, 1, 2, 3), gpu_memory_mib=9000))
GEFORCE_SWITCHED = replace(L40S, name="4090-pex", gpus=GpuSpec("rtx4090", 8))


def acs(spec: HostSpec) -> Finding:
    result = audited(spec)
    return next(f for f in result.findings if f.check == "pcie.acs")


def severity(finding: Finding) -> str:
    return f"{finding.status}:{finding.severity}"


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        (L40S, "problem:high"),  # TP 4 within each switch: the redirect is on their path
        (EXPERT_PARALLEL, "problem:high"),  # TP 1 but experts all-to-all across the four GPUs of one switch
        (TRAINING, "problem:high"),  # a job that is not a server holds four GPUs: cannot tell, judged by capability
        (faults.p2p_driver(GEFORCE_SWITCHED), "problem:high"),  # GeForce on a P2P driver peers over PCIe
    ],
    ids=["tp4-per-switch", "dp-expert-parallel", "training-job", "geforce-p2p-driver"],
)
def test_the_redirect_is_high_where_gpus_under_one_switch_exchange_traffic(spec: HostSpec, want: str) -> None:
    assert severity(acs(spec)) == want


def test_a_high_judged_by_capability_says_so() -> None:
    assert "could not be told" in acs(TRAINING).explanation
    assert "could not be told" not in acs(L40S).explanation


@pytest.mark.parametrize(
    "spec",
    [faults.no_server(L40S), faults.no_server(faults.p2p_driver(GEFORCE_SWITCHED)), faults.no_server(REPLICAS)],
    ids=["l40s", "geforce-p2p-driver", "l40s-replicas"],
)
def test_a_node_between_jobs_is_a_latent_medium_that_says_so(spec: HostSpec) -> None:
    """No GPU process at all (a node drained between jobs, or the gate run in a job's prolog): the redirect costs the
    next job whose TP group spans one switch, not the node now: medium (the default gate passes it) and said so."""
    finding = acs(spec)
    assert severity(finding) == "problem:medium", finding.explanation
    assert "between jobs" in finding.explanation and "latent" in finding.explanation
    assert finding.fix is not None and finding.fix.kind == "runtime"


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        (REPLICAS, "no server instance holds two GPUs under these ports"),
        (ACROSS_SWITCHES, "no server instance holds two GPUs under these ports"),
        (GEFORCE_SWITCHED, "no PCIe peer-to-peer"),
    ],
    ids=["tp1-replicas", "tp2-across-switches", "geforce-stock-driver"],
)
def test_the_redirect_is_low_where_no_gpu_traffic_crosses_it(spec: HostSpec, why: str) -> None:
    finding = acs(spec)
    assert severity(finding) == "problem:low", finding.explanation
    assert why in finding.explanation
    assert finding.fix is not None and finding.fix.kind == "runtime"  # still fixable, at the same step


def test_the_groups_are_named_so_a_person_can_check_them() -> None:
    explanation = acs(ACROSS_SWITCHES).explanation
    assert "GPU0,GPU4" in explanation and "GPU3,GPU7" in explanation
