"""NVIDIA MPS run on purpose (the third review, docs/validation/archetypes-review.md, M1-M4): two vLLM replicas per
H100 as MPS clients, the control daemon from a unit that sets EXCLUSIVE_PROCESS. Before these fixes the audit told the
operator to kill the MPS server (medium), stop the daemon and set the compute mode back to Default."""

from __future__ import annotations

from dataclasses import replace

from rigaudit.agents.facts.deliberate import DELIBERATE, MPS_SHARING
from rigaudit.agents.facts.mps import MPS_CLIENTS_FN
from rigaudit.agents.investigators.cuda import INVESTIGATOR as CUDA
from rigaudit.agents.investigators.p2p import INVESTIGATOR as P2P
from rigaudit.tools.schema.finding import Finding
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.cache import snapshot
from tests.hostgen.kinds import MPS_H100
from tests.hostgen.mps import SERVER_PID
from tests.hostgen.spec import HostSpec
from tests.support.investigators import audit_snapshot
from tests.support.kinds import by_check, serious


def cuda(spec: HostSpec) -> dict[str, Finding]:
    return audit_snapshot(CUDA, snapshot(spec), evidence_read=True, problem_has_fix=True)


def test_the_mps_host_shows_its_server_and_clients_as_nvidia_smi_does() -> None:
    tree = snapshot(MPS_H100)
    smi = next(r for r in (tree / "commands.jsonl").read_text().splitlines() if '"argv": ["nvidia-smi"]' in r)
    assert "M+C" in smi and "nvidia-cuda-mps-server" in smi and "E. Process" in smi
    query = next(r for r in (tree / "commands.jsonl").read_text().splitlines() if '"argv": ["nvidia-smi", "-q"]' in r)
    assert "Type                          : M+C" in query  # fourth review, R2: the clients' -q rows said C


def test_the_healthy_mps_host_has_no_serious_problem() -> None:
    assert serious(MPS_H100) == {}
    found = by_check(MPS_H100)
    assert {c: found[c].status for c in ("cuda.mps", "cuda.compute_mode", "cuda.memory_in_use")} == dict.fromkeys(
        ("cuda.mps", "cuda.compute_mode", "cuda.memory_in_use"), "ok"
    )


def test_the_mps_server_is_the_clients_context_not_memory_another_program_holds() -> None:
    """M1. Before: medium, 'stop pid 2950 (nvidia-cuda-mps-server)', which ends all eight replicas."""
    found = by_check(MPS_H100)["cuda.memory_in_use"]
    assert found.status == "ok" and "MPS server" in found.observed, found.observed
    assert str(SERVER_PID) not in found.observed


def test_servers_nvml_lists_as_mps_clients_make_the_daemon_deliberate() -> None:
    """M2. The default pipe directory needs no CUDA_MPS_PIPE_DIRECTORY; NVML's MPS process list tells. Before: low,
    'stop the MPS control daemon'."""
    found = by_check(MPS_H100)["cuda.mps"]
    assert found.status == "ok" and "MPS clients" in found.observed, found.observed
    assert MPS_SHARING.key in found.explanation and MPS_SHARING in DELIBERATE


def test_exclusive_process_under_mps_is_the_mode_the_mps_guide_recommends() -> None:
    """M3. Before: low, 'nvidia-smi -c 0' on every GPU."""
    found = by_check(MPS_H100)["cuda.compute_mode"]
    assert found.status == "ok" and "MPS control daemon" in found.observed, found.observed
    assert MPS_SHARING.source in found.explanation


def test_mps_limits_on_clients_that_share_a_gpu_are_provisioning() -> None:
    """M4. Two replicas per GPU at 50 % each is MPS's documented provisioning. Before: medium, 'stop the MPS daemon'."""
    found = cuda(faults.server_env(MPS_H100, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="50"))["cuda.mps"]
    assert (found.status, found.severity) == ("problem", "low"), found.observed
    assert found.fix is not None and found.fix.summary.startswith("Keep MPS")
    assert not any("quit" in a.description for a in found.fix.actions)


def test_an_mps_limit_that_leaves_a_gpus_sms_to_no_client_is_medium() -> None:
    """Fourth review, M6. One replica per GPU at 50 %: half of every GPU's SMs serve no one (the MPS guide provisions n
    clients at 100/n % or more). Before: low, 'keep MPS', the same as two clients at 50 % each."""
    one_each = replace(MPS_H100, processes=MPS_H100.processes[::2])
    found = cuda(faults.server_env(one_each, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="50"))["cuda.mps"]
    assert (found.status, found.severity) == ("problem", "medium"), found.observed
    assert "GPU0: its 1 MPS client(s) may use 50 % of its SMs" in found.observed
    assert found.fix is not None and "100 %" in found.fix.actions[0].description


def test_an_mps_daemon_no_server_uses_is_still_told() -> None:
    found = cuda(faults.no_server(MPS_H100))["cuda.mps"]
    assert (found.status, found.severity) == ("problem", "low"), found.observed
    assert found.fix is not None and "unless the deployment relies on MPS" in found.fix.summary


def test_no_mps_seen_from_a_container_is_told_by_nvmls_client_list() -> None:
    """M5. A host's MPS daemon never shows in a container's /proc: NVML's MPS client list is what tells. Before: ok
    from the container's own processes, also where that list was not recorded."""
    healthy = cuda(ARCHETYPES["docker-h100-bm"])["cuda.mps"]
    assert healthy.status == "ok" and "NVML lists no MPS client" in healthy.observed, healthy.observed
    unread = cuda(faults.nvml_unrecorded(ARCHETYPES["docker-h100-bm"], MPS_CLIENTS_FN))["cuda.mps"]
    assert unread.status == "unknown" and MPS_CLIENTS_FN in unread.observed, unread.observed


def test_a_refusal_no_setting_can_lift_is_not_sent_to_let_p2p_through() -> None:
    """Fourth review, M7. Pairs across Intel's UPI refuse P2P by the platform's design. Before: 'Let peer-to-peer
    through: the pair crosses the CPU interconnect...', a summary that promised a setting."""
    found = audit_snapshot(P2P, snapshot(faults.no_server(MPS_H100)))["p2p.status"]
    assert found.fix is not None and found.fix.summary.startswith("No setting lets these pairs peer"), found.fix


def test_the_replicas_behind_the_mps_server_span_no_refused_pair() -> None:
    """Fifth review W8: the MPS server's NVML rows are its clients' context, not a job of its own. Before, they left
    the GPUs' server groups unknown, so p2p.status judged pairs no replica spans (TP 1, one GPU each)."""
    found = by_check(MPS_H100)["p2p.status"]
    assert found.status == "ok", found.observed
    assert "server GPU groups: GPU0, GPU1, GPU2, GPU3" in found.observed


def test_a_client_of_another_user_queued_behind_the_mps_server_is_told_with_its_way_out() -> None:
    """MPS runs one server per user: uid 1002's job waits on the control daemon's pending list while root's server
    has clients (the replicas never exit). Before: ok, 'MPS in use', and the job hung with nothing said."""
    found = cuda(faults.mps_client_of_another_user(MPS_H100))["cuda.mps"]
    assert (found.status, found.severity) == ("problem", "medium"), found.observed
    assert "pid 4410 of uid 1002 waits on the control daemon's pending list" in found.observed
    assert "MPS server(s) of uid 0" in found.observed and "push client to pending list" in found.observed
    assert found.fix is not None and found.fix.where == "host" and "as uid 0" in found.fix.actions[0].description
    assert "quit" not in found.fix.summary  # MPS stays: the replicas rely on it
