"""DGX Spark (GB10): a GPU that shares the system's memory, so NVML answers NOT_SUPPORTED for its framebuffer, BAR1
and power limits (the third review, G1-G2). NOT_SUPPORTED there is the product's answer, not a failed read: before
these fixes three checks stopped at it as `unknown`, and an other user's notebook holding 29 GiB went unseen by
cuda.memory_in_use."""

from __future__ import annotations

import json

from rigaudit.agents.facts.gpu_models import unified_memory
from rigaudit.agents.investigators.cuda import INVESTIGATOR as CUDA
from tests.hostgen import faults
from tests.hostgen.cache import snapshot
from tests.hostgen.kinds import DGX_SPARK
from tests.hostgen.spec import ProcessSpec
from tests.support.investigators import audit_snapshot
from tests.support.kinds import by_check, serious

NOTEBOOK = ProcessSpec(
    ("/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "/home/ana/.local/share/jupyter/runtime/kernel-1.json"),
    gpus=(0,),
    gpu_memory_mib=30000,
    user=1000,
)


def test_spark_prints_not_supported_where_a_discrete_gpu_prints_its_memory() -> None:
    smi = next(r for r in (snapshot(DGX_SPARK) / "commands.jsonl").read_text().splitlines() if '"argv": ["nvidia-smi"]' in r)
    assert "NVIDIA GB10" in smi and "Not Supported" in smi and "0000000F:01:00.0" in smi
    assert unified_memory("NVIDIA GB10") and not unified_memory("NVIDIA GH200 480GB")


def test_spark_query_prints_na_where_nvml_answers_not_supported() -> None:
    """Fourth review, R1: `nvidia-smi -q` printed a 122570 MiB framebuffer, a 256 MiB BAR1 and a 140 W cap that NVML and
    the table say the GB10 does not have."""
    rows = (snapshot(DGX_SPARK) / "commands.jsonl").read_text().splitlines()
    query = next(r for r in rows if '"argv": ["nvidia-smi", "-q"]' in r)
    for field in ("Total", "Current Power Limit", "Max Power Limit"):
        assert f"{field:<34}: N/A" in query.replace("\\n", "\n"), field
    assert " MiB\\n    BAR1" not in query


def test_the_healthy_spark_has_no_serious_problem() -> None:
    assert serious(DGX_SPARK) == {}


def test_unified_memory_is_judged_by_the_compute_processes() -> None:
    """G1. Before: unknown, 'nvmlDeviceGetMemoryInfo: NOT_SUPPORTED'."""
    found = by_check(DGX_SPARK)["cuda.memory_in_use"]
    assert found.status == "ok" and "shares the system's memory" in found.observed, found.observed


def test_another_users_notebook_on_unified_memory_is_found() -> None:
    """G1 with a fault: the notebook's 29 GiB come out of the server's memory. Before: unknown."""
    spec = faults.server(DGX_SPARK, NOTEBOOK)
    found = audit_snapshot(CUDA, snapshot(spec), evidence_read=True, problem_has_fix=True)["cuda.memory_in_use"]
    assert (found.status, found.severity) == ("problem", "medium"), found.observed
    assert "ipykernel_launcher" in found.observed


def test_a_soc_gpu_has_no_bar1_or_board_power_limit_to_judge() -> None:
    """G2. Before: both unknown ('not readable')."""
    found = by_check(DGX_SPARK)
    assert found["firmware.rebar"].status == "not_applicable", found["firmware.rebar"].observed
    assert found["power.gpu_power_limit"].status == "not_applicable", found["power.gpu_power_limit"].observed


def test_a_soc_gpu_has_no_gpudirect_rdma_to_load() -> None:
    """Fourth review, S1. NVIDIA: GB10's iGPU memory is not reachable by PCIe devices, so GPUDirect RDMA (nvidia-peermem,
    DMA-BUF) does not work on DGX Spark and NCCL stages through registered host buffers. Before: ok, 'GPUDirect RDMA
    over DMA-BUF', a path that does not exist."""
    found = by_check(DGX_SPARK)["driver.peermem"]
    assert found.status == "not_applicable", found.observed
    assert "GPUDirect RDMA is not supported" in found.observed and "DMA-BUF" not in found.observed.split(";")[0]
    assert "memlock" in found.explanation


def test_spark_rdma_devices_carry_the_names_dgx_os_gives_them() -> None:
    """Fourth review, R3: the inbox rdma-core names the ConnectX-7's functions by PCI address (NCCL's NET/IB lines on
    a Spark: rocep1s0f0, rocep1s0f1, roceP2p1s0f0, roceP2p1s0f1), where the generator wrote mlx5_0-mlx5_3."""
    links = json.loads((snapshot(DGX_SPARK) / "links.json").read_text())
    names = sorted(path.rsplit("/", 1)[1] for path in links if path.startswith("/sys/class/infiniband/"))
    assert names == ["roceP2p1s0f0", "roceP2p1s0f1", "rocep1s0f0", "rocep1s0f1"]
    assert serious(DGX_SPARK) == {}
