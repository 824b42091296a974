"""MPS inside a container: a pod given a GPU the NVIDIA device plugin shares by MPS (the plugin's daemon runs on the
node, sets EXCLUSIVE_PROCESS and hands its clients CUDA_MPS_PIPE_DIRECTORY: from the pod only NVML's MPS client list
and the server's environment show it), and a container that runs its own daemon."""

from __future__ import annotations

from rigaudit.agents.investigators.cuda import INVESTIGATOR as CUDA
from rigaudit.tools.schema.finding import Finding
from tests.hostgen import faults
from tests.hostgen.cache import snapshot
from tests.hostgen.kinds import DOCKER_MPS_INSIDE, K8S_POD_MPS
from tests.hostgen.mps import PLUGIN_PIPE
from tests.hostgen.spec import HostSpec
from tests.support.investigators import audit_snapshot
from tests.support.kinds import by_check, serious


def cuda(spec: HostSpec) -> dict[str, Finding]:
    return audit_snapshot(CUDA, snapshot(spec), evidence_read=True, problem_has_fix=True)


def test_the_pod_sees_the_plugins_pipe_and_its_server_as_an_mps_client() -> None:
    root = snapshot(K8S_POD_MPS)
    assert f"CUDA_MPS_PIPE_DIRECTORY={PLUGIN_PIPE}".encode() in (root / "files/proc/1/environ").read_bytes()
    smi = next(r for r in (root / "commands.jsonl").read_text().splitlines() if '"argv": ["nvidia-smi"]' in r)
    assert "M+C   /usr/bin/python3" in smi and "E. Process" in smi


def test_exclusive_process_set_by_the_nodes_mps_is_no_problem_in_the_pod() -> None:
    """Before: low @container_host, 'nvidia-smi -c 0', which would let processes open the GPU beside the node's MPS
    server; and cuda.mps named 'nvidia-cuda-mps-server pid ?'."""
    assert serious(K8S_POD_MPS) == {}
    found = by_check(K8S_POD_MPS)
    assert found["cuda.compute_mode"].status == "ok", found["cuda.compute_mode"].observed
    assert "daemon outside this container" in found["cuda.compute_mode"].observed
    assert found["cuda.mps"].status == "ok" and f"CUDA_MPS_PIPE_DIRECTORY={PLUGIN_PIPE}" in found["cuda.mps"].observed


def test_a_pipe_no_daemon_serves_is_sent_to_the_nodes_mps_daemon() -> None:
    """The plugin's MPS daemon is not up: the pod's server fails CUDA init. Before: cuda.mps ok ('NVML lists no MPS
    client') and cuda.compute_mode low 'nvidia-smi -c 0': neither named the cause."""
    found = cuda(faults.mps_daemon_not_serving(K8S_POD_MPS))
    mps = found["cuda.mps"]
    assert (mps.status, mps.severity) == ("problem", "high"), mps.observed
    assert f"{PLUGIN_PIPE}: no control socket" in mps.observed
    assert mps.fix is not None and mps.fix.where == "container_host" and "mps-control-daemon" in mps.fix.summary
    assert found["cuda.compute_mode"].status == "ok", found["cuda.compute_mode"].observed


def test_an_mps_daemon_run_inside_the_container_is_its_servers_context() -> None:
    assert serious(DOCKER_MPS_INSIDE) == {}
    found = by_check(DOCKER_MPS_INSIDE)
    assert {c: found[c].status for c in ("cuda.mps", "cuda.compute_mode", "cuda.memory_in_use")} == dict.fromkeys(
        ("cuda.mps", "cuda.compute_mode", "cuda.memory_in_use"), "ok"
    )
    assert "with the MPS control daemon running" in found["cuda.compute_mode"].observed
    assert "MPS server that holds the GPUs" in found["cuda.memory_in_use"].observed
