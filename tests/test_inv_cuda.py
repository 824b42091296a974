"""The cuda investigator: compute mode, MIG, memory in use, ECC mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.agents.investigators.cuda import INVESTIGATOR
from rigaudit.tools.schema.finding import CommandAction, Finding
from tests.support.investigators import audit_snapshot
from tests.support.mutate import add_process, light_copy, remove_nvml, set_nvml, set_nvml_many

GIB = 2**30


@pytest.fixture
def snap(seed_dir: Path, tmp_path: Path) -> Path:
    return light_copy(seed_dir, tmp_path / "snap")


def audit(root: Path) -> dict[str, Finding]:
    return audit_snapshot(INVESTIGATOR, root)


def test_seed_is_all_ok(seed_dir: Path) -> None:
    found = audit(seed_dir)
    expected = dict.fromkeys(INVESTIGATOR.check_ids, "ok") | {"cuda.mps": "unknown"}
    assert {c: f.status for c, f in found.items()} == expected
    assert "process list is not recorded" in found["cuda.mps"].observed
    assert found["cuda.compute_mode"].observed.startswith("Default on 8/8 GPUs")
    assert "MIG off" in found["cuda.mig"].observed
    assert "no compute process" in found["cuda.memory_in_use"].observed
    assert "ECC on (current = pending) on 8/8" in found["cuda.ecc_mode"].observed
    assert "nvml:nvmlDeviceGetComputeMode(0)" in found["cuda.compute_mode"].evidence


def test_prohibited_compute_mode_is_high_with_command_only_fix(snap: Path) -> None:
    set_nvml(snap, "nvmlDeviceGetComputeMode", [3], 2)
    finding = audit(snap)["cuda.compute_mode"]
    assert finding.status == "problem" and finding.severity == "high"
    assert finding.subjects == ("GPU3 (0000:44:00.0)",)
    assert "Prohibited" in finding.observed
    assert finding.fix is not None and finding.fix.kind == "runtime" and finding.fix.where == "host"
    assert all(isinstance(a, CommandAction) for a in finding.fix.actions)
    assert finding.fix.actions[0].argv == ("nvidia-smi", "-i", "3", "-c", "0")
    assert "nvidia-smi -i 3 -c 2" in finding.fix.revert


def test_exclusive_process_is_low(snap: Path) -> None:
    set_nvml(snap, "nvmlDeviceGetComputeMode", [1], 3)
    finding = audit(snap)["cuda.compute_mode"]
    assert (finding.status, finding.severity) == ("problem", "low")
    assert "Exclusive_Process" in finding.observed


def test_mig_on_is_high_and_pending_is_medium(snap: Path) -> None:
    set_nvml(snap, "nvmlDeviceGetMigMode", [0], [1, 1])
    on = audit(snap)["cuda.mig"]
    assert (on.status, on.severity) == ("problem", "high")
    assert on.fix is not None and on.fix.kind == "reboot"
    set_nvml(snap, "nvmlDeviceGetMigMode", [0], [0, 1])
    pending = audit(snap)["cuda.mig"]
    assert (pending.status, pending.severity) == ("problem", "medium")
    assert "current off, pending on" in pending.observed


def test_mig_not_supported_is_not_applicable(snap: Path) -> None:
    set_nvml_many(snap, [("nvmlDeviceGetMigMode", [i], {"error": "NOT_SUPPORTED"}) for i in range(8)])
    assert audit(snap)["cuda.mig"].status == "not_applicable"


def _server_on_gpu0(snap: Path) -> None:
    add_process(snap, 1000, ["/opt/venv/bin/python3", "-m", "vllm.entrypoints.openai.api_server", "--tp", "2"])
    set_nvml(snap, "nvmlDeviceGetComputeRunningProcesses", [0], [{"pid": 1000, "usedGpuMemory": 80 * GIB}])


def test_memory_held_by_a_foreign_process_is_a_problem(snap: Path) -> None:
    _server_on_gpu0(snap)
    set_nvml(snap, "nvmlDeviceGetComputeRunningProcesses", [2], [{"pid": 4242, "usedGpuMemory": 20 * GIB}])
    add_process(snap, 4242, ["python3", "train.py", "--epochs", "3"])
    finding = audit(snap)["cuda.memory_in_use"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert "pid 4242 (python3 train.py --epochs 3) 20.0 GiB on GPU2" in finding.observed
    assert finding.fix is not None and finding.fix.kind == "restart"
    assert finding.subjects == ("GPU2 (0000:43:00.0)",)


@pytest.mark.parametrize(
    "argv", [["python3", "serve_model.py", "--port", "8000"], ["/usr/local/bin/python3", "-m", "my_company.api"]]
)
def test_with_no_server_known_a_gpu_process_may_be_the_server_itself(snap: Path, argv: list[str]) -> None:
    """A custom server is a process rigaudit does not know: never told to stop it, nor called foreign."""
    set_nvml(snap, "nvmlDeviceGetComputeRunningProcesses", [0], [{"pid": 513, "usedGpuMemory": GIB}])
    add_process(snap, 513, argv)
    finding = audit(snap)["cuda.memory_in_use"]
    assert finding.status == "unknown" and finding.fix is None, finding.observed
    assert "none is an inference server rigaudit knows" in finding.observed and "if one is your server" in finding.observed


def test_a_client_named_after_ollama_is_no_server(snap: Path) -> None:
    _server_on_gpu0(snap)
    set_nvml(snap, "nvmlDeviceGetComputeRunningProcesses", [1], [{"pid": 701, "usedGpuMemory": GIB}])
    add_process(snap, 701, ["python3", "ollama_benchmark.py"])
    assert audit(snap)["cuda.memory_in_use"].status == "problem"


def test_an_ollama_runner_is_a_server(snap: Path) -> None:
    add_process(
        snap, 700, ["/usr/local/bin/ollama", "runner", "--model", "/root/.ollama/models/blobs/sha256-x", "--port", "41633"]
    )
    set_nvml(snap, "nvmlDeviceGetComputeRunningProcesses", [0], [{"pid": 700, "usedGpuMemory": 9 * GIB}])
    assert audit(snap)["cuda.memory_in_use"].status == "ok"


def test_memory_held_by_the_server_and_its_spawned_workers_is_ok(snap: Path) -> None:
    add_process(snap, 1000, ["/opt/venv/bin/python3", "-m", "sglang.launch_server", "--tp", "8"])
    add_process(
        snap,
        1001,
        ["/opt/venv/bin/python3", "-c", "from multiprocessing.spawn import spawn_main; spawn_main()"],
        ppid=1000,
    )
    set_nvml(snap, "nvmlDeviceGetComputeRunningProcesses", [0], [{"pid": 1001, "usedGpuMemory": 80 * GIB}])
    finding = audit(snap)["cuda.memory_in_use"]
    assert finding.status == "ok"
    assert "inference server only" in finding.observed


def test_memory_used_without_visible_process_on_a_host_is_the_nodes(snap: Path) -> None:
    """NVML on the host lists every process with a context (a container's too): memory none holds is orphaned."""
    set_nvml(snap, "nvmlDeviceGetMemoryInfo", [5], {"total": 96 * GIB, "free": 56 * GIB, "used": 40 * GIB})
    finding = audit(snap)["cuda.memory_in_use"]
    assert (finding.status, finding.severity, finding.layer) == ("problem", "high", "node")
    assert "GPU5 (0000:84:00.0) 40.0 GiB" in finding.observed
    assert finding.fix is not None and finding.fix.actions[0].argv == ("nvidia-smi", "-r", "-i", "5")


def test_ecc_pending_change_needs_reboot(snap: Path) -> None:
    set_nvml(snap, "nvmlDeviceGetEccMode", [6], [1, 0])
    finding = audit(snap)["cuda.ecc_mode"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert finding.fix is not None and finding.fix.kind == "reboot"
    assert "GPU6 (0000:c3:00.0): current on, pending off" in finding.observed


def test_no_nvml_makes_every_check_unknown(snap: Path) -> None:
    set_nvml(snap, "nvmlInit", [], error="LIBRARY_NOT_FOUND")
    found = audit(snap)
    assert all(f.status == "unknown" for f in found.values())
    assert found["cuda.mig"].observed.startswith("NVML unavailable: LIBRARY_NOT_FOUND (libnvidia-ml.so.1 is not installed")


def test_unrecorded_calls_are_unknown_not_guessed(snap: Path) -> None:
    remove_nvml(snap, "nvmlDeviceGetEccMode")
    finding = audit(snap)["cuda.ecc_mode"]
    assert finding.status == "unknown"
    assert "not recorded in this snapshot" in finding.observed


def test_foreign_process_command_line_is_redacted(snap: Path) -> None:
    _server_on_gpu0(snap)
    set_nvml(snap, "nvmlDeviceGetComputeRunningProcesses", [1], [{"pid": 4343, "usedGpuMemory": GIB}])
    add_process(snap, 4343, ["python3", "bot.py", "--api-key", "s3cr3t-value"])
    finding = audit(snap)["cuda.memory_in_use"]
    assert finding.status == "problem"
    assert "s3cr3t-value" not in finding.observed and "--api-key <redacted>" in finding.observed
