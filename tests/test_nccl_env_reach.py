"""nccl.env read where NCCL reads its variables and graded by what the override reaches (the fifth review,
docs/validation/archetypes-review.md, W4, W5 and W8): the environments of the GPUs' processes are read where no server
is recognized, unknown where none is there to read; NCCL_IB_DISABLE costs inter-node bandwidth only where a server's
collectives cross nodes (the premise driver.peermem reads, ``driver/internode.py``) and only on an IB NIC (EFA is
reached through aws-ofi-nccl, not NCCL's IB transport); NCCL_P2P_DISABLE costs nothing where every server instance runs
on one GPU."""

from __future__ import annotations

from rigaudit.agents.investigators.nccl import INVESTIGATOR as NCCL
from rigaudit.tools.schema.finding import Finding
from tests.hostgen import ARCHETYPES, engines, faults
from tests.hostgen.cache import snapshot
from tests.hostgen.kinds import KINDS
from tests.hostgen.spec import HostSpec
from tests.support.investigators import audit_snapshot

HGX = ARCHETYPES["hgx-h100-jammy"]
P2P_OFF = {"NCCL_P2P_DISABLE": "1"}


def nccl_env(spec: HostSpec) -> Finding:
    return audit_snapshot(NCCL, snapshot(spec), evidence_read=True, problem_has_fix=True)["nccl.env"]


def test_ib_disable_on_efa_is_harmless() -> None:
    """W5 (a). Before: medium 'InfiniBand present but disabled: inter-node traffic over TCP' on an AWS p5, whose 32
    EFA devices NCCL drives through the aws-ofi-nccl net plugin whatever NCCL_IB_DISABLE says."""
    finding = nccl_env(faults.server_env(ARCHETYPES["aws-p5-vm"], NCCL_IB_DISABLE="1"))
    assert finding.status == "ok", finding.observed
    assert "NCCL_IB_DISABLE=1 is harmless here (EFA" in finding.observed
    assert finding.observed.count("harmless") == 1 and "and 8 more source(s) alike" in finding.observed


def test_ib_disable_on_a_single_node_server_is_low() -> None:
    """W5 (b). Before: medium on a TP 8 server that serves from this node alone (no inter-node collective)."""
    finding = nccl_env(faults.ib_disabled_on_one_node(HGX))
    assert (finding.status, finding.severity) == ("problem", "low"), finding.observed
    assert "no server here talks to other nodes" in finding.explanation
    assert "loses about half its bandwidth" not in finding.explanation  # the P2P sentence is not about IB
    assert finding.fix is not None and "next restart" in finding.fix.summary


def test_ib_disable_where_a_server_talks_to_other_nodes_stays_medium() -> None:
    """The premise driver.peermem reads: a server that names its IB ports (NCCL_IB_HCA) crosses the NICs."""
    finding = nccl_env(faults.server_env(HGX, NCCL_IB_DISABLE="1"))
    assert (finding.status, finding.severity) == ("problem", "medium"), finding.observed
    assert "a server talks to other nodes (pid 3120: NCCL_IB_HCA" in finding.explanation


def test_ib_disable_on_a_ray_worker_node_stays_medium() -> None:
    """A worker node's raylet names the head's GCS on another host: its servers talk to other nodes, read, not assumed."""
    finding = nccl_env(engines.ray_worker_node(HGX, env={"NCCL_IB_DISABLE": "1"}))
    assert (finding.status, finding.severity) == ("problem", "medium"), finding.observed
    assert "talks to other nodes" in finding.explanation and "--gcs-address 10.40.0.11" in finding.explanation


def test_p2p_disable_on_tp1_replicas_is_low() -> None:
    """W8. Before: medium ('p2p_cost = medium if tp == 1') on eight vLLM replicas at TP 1 (with an MPS server holding
    the GPUs for them): at world size 1 NCCL builds no communicator, so the variable changes nothing yet."""
    finding = nccl_env(faults.server_env(KINDS["mps-h100pcie-replicas"], NCCL_P2P_DISABLE="1"))
    assert (finding.status, finding.severity) == ("problem", "low"), finding.observed
    assert "no effect now" in finding.explanation and "made tensor-parallel" in finding.explanation


def test_the_environments_of_unknown_gpu_processes_are_read() -> None:
    """W4, the class: where no server is recognized, the environments of the processes NVML lists are read."""
    nccl = nccl_env(engines.ray_worker_node(HGX, env=dict(P2P_OFF), actor="ray::TrainWorker.run"))
    assert (nccl.status, nccl.severity) == ("problem", "high"), nccl.observed
    assert "environment of pid 3120 (ray::TrainWorker.run on GPU0, not a server rigaudit knows)" in nccl.observed


def test_with_nothing_to_read_the_environment_is_unknown_never_ok() -> None:
    """W4: no server and no process on the GPUs: the variables a server will start with are unread."""
    nccl = nccl_env(faults.no_server(HGX))
    assert nccl.status == "unknown", nccl.observed
    assert "no inference server process found to read its environment" in nccl.observed
