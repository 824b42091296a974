"""Serving the archetypes do not run (the fifth review, docs/validation/archetypes-review.md, W3 and W4): NVIDIA NIM
containers beside a vLLM container, an in-house engine in a container, and a worker node of multi-node vLLM on Ray.
Server recognition is a list of command-line words; a process no word names must not be told to stop when it is shaped
like a server, and the checks that read a server's environment must read the GPUs' processes when no server is known."""

from __future__ import annotations

from rigaudit.agents.investigator import AnyInvestigator
from rigaudit.agents.investigators.cuda import INVESTIGATOR as CUDA
from rigaudit.agents.investigators.nccl import INVESTIGATOR as NCCL
from rigaudit.agents.investigators.runtime import INVESTIGATOR as RUNTIME
from rigaudit.tools.schema.finding import Finding
from tests.hostgen import ARCHETYPES, engines, faults
from tests.hostgen.cache import snapshot
from tests.hostgen.spec import HostSpec, ProcessSpec
from tests.support.investigators import audit_snapshot

DOCKER_HOST = ARCHETYPES["docker-host-h100"]
HGX = ARCHETYPES["hgx-h100-jammy"]
NIM = engines.beside_vllm(DOCKER_HOST)
IN_HOUSE = engines.beside_vllm(DOCKER_HOST, engines.IN_HOUSE)
NOTEBOOK = ProcessSpec(
    ("/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "/root/.local/share/jupyter/runtime/kernel-1.json"),
    gpus=(6,),
    gpu_memory_mib=3000,
)
RAY_ENV = engines.ray_worker_node(HGX, env={"NCCL_P2P_DISABLE": "1", "CUDA_LAUNCH_BLOCKING": "1"})


def found(investigator: AnyInvestigator, spec: HostSpec) -> dict[str, Finding]:
    return audit_snapshot(investigator, snapshot(spec), evidence_read=True, problem_has_fix=True)


def test_nim_containers_beside_vllm_are_servers() -> None:
    """W3. Before: medium 'Stop the processes that hold GPU memory but are not the inference server: pid 3132, 3140',
    the two NIM engines (nim_llm_sdk), because no server marker named NIM."""
    finding = found(CUDA, NIM)["cuda.memory_in_use"]
    assert finding.status == "ok", finding.observed
    assert "6 processes" in finding.observed


def test_an_unknown_engine_in_a_container_is_asked_about_never_stopped() -> None:
    """W3, the class: a process no marker names, in a container and holding most of its GPU, beside a known server.
    Before: the same medium stop fix as for a leftover notebook."""
    finding = found(CUDA, IN_HOUSE)["cuda.memory_in_use"]
    assert (finding.status, finding.fix) == ("unknown", None), finding.observed
    assert finding.observed.startswith("are pids 3132, 3140 servers?"), finding.observed
    assert "runs in docker" in finding.observed and "88% of GPU4's memory" in finding.observed
    assert "docker inspect" in finding.observed


def test_a_leftover_notebook_is_still_stopped_and_the_engine_left_unjudged() -> None:
    finding = found(CUDA, faults.server(IN_HOUSE, NOTEBOOK))["cuda.memory_in_use"]
    assert (finding.status, finding.severity) == ("problem", "medium"), finding.observed
    assert finding.fix is not None and [a.argv for a in finding.fix.actions] == [("kill", "3148")]
    assert "not judged, shaped like a server: pid 3132" in finding.observed


def test_vllm_ray_workers_are_the_server_of_a_ray_worker_node() -> None:
    """W4. Before: nccl.env ok 'no inference server process found to read its environment' (runtime.env unknown) on
    a node whose Ray workers run with NCCL_P2P_DISABLE=1: NVLink P2P off under a tensor-parallel server."""
    nccl = found(NCCL, RAY_ENV)["nccl.env"]
    assert (nccl.status, nccl.severity) == ("problem", "high"), nccl.observed
    assert "NCCL_P2P_DISABLE=1 in environment of pid 3120 (ray::rayworkerwrapper)" in nccl.observed
    runtime = found(RUNTIME, RAY_ENV)["runtime.env"]
    assert (runtime.status, runtime.severity) == ("problem", "medium"), runtime.observed
    assert found(CUDA, RAY_ENV)["cuda.memory_in_use"].status == "ok"


def test_a_ray_worker_node_whose_head_is_elsewhere_talks_to_other_nodes() -> None:
    """A worker node's raylet names the head's GCS (``--gcs-address=10.40.0.11:6379``) beside its own address: its
    servers' collectives cross nodes (what GPUDirect RDMA and NCCL's IB transport carry)."""
    import anyio

    from rigaudit.agents.investigators.driver.internode import collect_internode
    from rigaudit.tools.hosts.probe import Probe
    from rigaudit.tools.hosts.snapshot import SnapshotHost

    internode = anyio.run(lambda: collect_internode(Probe(SnapshotHost(snapshot(RAY_ENV)))))
    assert internode.used is True
    assert any("--gcs-address 10.40.0.11" in s for s in internode.signals), internode.signals
