"""cuda: other users' processes on the serving GPUs; the MPS daemon."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.agents.investigators.cuda import INVESTIGATOR
from rigaudit.tools.schema.finding import Finding
from tests.support.investigators import audit_snapshot
from tests.support.mutate import add_dir, add_process, light_copy, set_nvml_many

GIB = 2**30


@pytest.fixture
def snap(seed_dir: Path, tmp_path: Path) -> Path:
    return light_copy(seed_dir, tmp_path / "snap")


def audit(root: Path) -> dict[str, Finding]:
    return audit_snapshot(INVESTIGATOR, root)


def status(uid: int) -> str:
    return f"Name:\tpython3\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\nThreads:\t120\n"


def server(root: Path, pid: int = 5000, uid: int = 1000, env: dict[str, str] | None = None) -> None:
    add_process(
        root, pid, ["/usr/bin/python3", "-m", "sglang.launch_server", "--tp", "8"], files={"status": status(uid)}, environ=env
    )


def on_gpus(root: Path, extra: dict[int, list[dict[str, int]]] | None = None) -> None:
    """The server (pid 5000) on every GPU, plus ``extra`` processes per GPU."""
    set_nvml_many(
        root,
        [
            ("nvmlDeviceGetComputeRunningProcesses", [i], [{"pid": 5000, "usedGpuMemory": 80 * GIB}, *(extra or {}).get(i, [])])
            for i in range(8)
        ],
    )


def test_seed(seed_dir: Path) -> None:
    found = audit(seed_dir)
    assert found["cuda.foreign_processes"].status == "ok"
    assert found["cuda.foreign_processes"].observed == "no compute process on 8 GPUs"
    assert found["cuda.mps"].status == "unknown"


def test_another_users_process_on_a_serving_gpu_is_medium(snap: Path) -> None:
    server(snap)
    add_process(snap, 6000, ["python3", "train.py"], files={"status": status(1001)})
    on_gpus(snap, {2: [{"pid": 6000, "usedGpuMemory": 6 * GIB}]})
    finding = audit(snap)["cuda.foreign_processes"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert finding.observed.startswith("pid 6000 (uid 1001, python3 train.py) on GPU2")
    assert finding.observed.endswith("the server runs as uid 1000")
    assert finding.subjects == ("GPU2 (0000:43:00.0)",)
    assert "file:/proc/6000/status" in finding.evidence


def test_another_users_server_is_high(snap: Path) -> None:
    server(snap)
    server(snap, pid=7000, uid=1002)
    on_gpus(snap, {0: [{"pid": 7000, "usedGpuMemory": 2 * GIB}]})
    finding = audit(snap)["cuda.foreign_processes"]
    assert (finding.status, finding.severity) == ("problem", "high")


def test_same_user_processes_are_ok(snap: Path) -> None:
    server(snap)
    add_process(snap, 6000, ["python3", "bench.py"], files={"status": status(1000)})
    on_gpus(snap, {2: [{"pid": 6000, "usedGpuMemory": GIB}]})
    finding = audit(snap)["cuda.foreign_processes"]
    assert finding.status == "ok" and "uid 1000" in finding.observed


def test_mps_daemon_is_low(snap: Path) -> None:
    server(snap)
    add_process(snap, 900, ["nvidia-cuda-mps-control", "-d"], comm="nvidia-cuda-mps")
    add_dir(snap, "/tmp/nvidia-mps")
    finding = audit(snap)["cuda.mps"]
    assert (finding.status, finding.severity) == ("problem", "low")
    assert "nvidia-cuda-mps processes: pids 900" in finding.observed
    assert finding.fix is not None and finding.fix.kind == "restart"


def test_mps_limits_on_the_server_are_medium(snap: Path) -> None:
    server(snap, env={"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "50", "PATH": "/usr/bin"})
    finding = audit(snap)["cuda.mps"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50" in finding.observed


def test_no_mps_in_a_recorded_process_list_is_ok(snap: Path) -> None:
    server(snap)
    finding = audit(snap)["cuda.mps"]
    assert finding.status == "ok" and "no nvidia-cuda-mps process among 1 /proc entries" in finding.observed


def test_mps_the_server_is_set_up_for_is_ok(snap: Path) -> None:
    server(snap, env={"CUDA_MPS_PIPE_DIRECTORY": "/run/mps"})
    add_process(snap, 900, ["nvidia-cuda-mps-control", "-d"], comm="nvidia-cuda-mps")
    assert audit(snap)["cuda.mps"].status == "ok"
