"""The p2p and nccl investigators: P2P status and topology, the P2P benchmark's verdict, NCCL overrides."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigaudit.agents.investigators.nccl import INVESTIGATOR as NCCL
from rigaudit.agents.investigators.p2p import INVESTIGATOR as P2P
from rigaudit.agents.investigators.p2p.facts import BENCH_FILE
from rigaudit.tools.schema.finding import Finding
from tests.support.investigators import audit_snapshot
from tests.support.mutate import add_dir, add_process, light_copy, remove_nvml, set_file, set_nvml, set_unreadable


@pytest.fixture
def snap(seed_dir: Path, tmp_path: Path) -> Path:
    return light_copy(seed_dir, tmp_path / "snap")


def audit(root: Path) -> dict[str, Finding]:
    return audit_snapshot((P2P, NCCL), root)


def bench(pairs: list[dict[str, Any]]) -> str:
    return json.dumps({"schema": "rigaudit.p2p/1", "pairs": pairs})


def pair(src: int, dst: int, unidir: float = 52.0, *, staged: float = 24.0, data_ok: bool = True) -> dict[str, Any]:
    return {
        "src": src,
        "dst": dst,
        "unidir_gbps": unidir,
        "bidir_gbps": unidir * 1.8,
        "staged_gbps": staged,
        "limit_gbps": 63.0,
        "data_ok": data_ok,
    }


def test_seed(seed_dir: Path) -> None:
    found = audit(seed_dir)
    status = found["p2p.status"]
    assert status.status == "ok"
    assert status.observed.startswith("28/28 pairs OK for read and write")
    assert "4 pairs through one PCIe switch (GPU0–GPU1, GPU2–GPU3, GPU4–GPU5, GPU6–GPU7)" in status.observed
    assert "16 pairs through the CPU interconnect" in status.observed
    assert "nvml:nvmlDeviceGetP2PStatus(0, 7, 1)" in status.evidence
    assert found["p2p.bandwidth"].status == "unknown"
    assert found["p2p.bandwidth"].observed == "needs the P2P micro-benchmark: run `rigaudit bench p2p`"
    env = found["nccl.env"]  # no server runs: what it will start with is unread (fifth review W4)
    assert env.status == "unknown" and "no inference server process found" in env.observed, env.observed
    assert "/etc/pve/lxc/101.conf" in env.observed and "/etc/nccl.conf" in env.observed


def test_refused_pair_is_high_and_names_the_cause(snap: Path) -> None:
    set_nvml(snap, "nvmlDeviceGetP2PStatus", [0, 4, 0], 3)
    finding = audit(snap)["p2p.status"]
    assert (finding.status, finding.severity) == ("problem", "high")
    assert "1/28 pairs refuse P2P: GPU0–GPU4: read IOH_TOPOLOGY_NOT_SUPPORTED, write OK" in finding.observed
    assert finding.subjects == ("GPU0 (0000:03:00.0)", "GPU4 (0000:83:00.0)")
    # IOMMU in passthrough, no ACS redirect, the other 15 cross-socket pairs fine on this AMD host: the path itself
    # (root complex, BIOS) is what is left, not "iommu=pt and ACS" by reflex.
    assert finding.fix is not None and finding.fix.kind == "firmware" and "BIOS" in finding.explanation


def test_regkey_disabled_points_at_the_driver_option(snap: Path) -> None:
    set_nvml(snap, "nvmlDeviceGetP2PStatus", [2, 3, 1], 4)
    finding = audit(snap)["p2p.status"]
    assert "write DISABLED_BY_REGKEY" in finding.observed
    assert finding.fix is not None and "registry key" in finding.fix.summary


def test_unrecorded_p2p_is_unknown(snap: Path) -> None:
    remove_nvml(snap, "nvmlDeviceGetP2PStatus")
    finding = audit(snap)["p2p.status"]
    assert finding.status == "unknown" and "not recorded in this snapshot" in finding.observed


def test_benchmark_healthy_is_ok(snap: Path) -> None:
    set_file(snap, BENCH_FILE, bench([pair(0, 1), pair(0, 4, 40.0)]))
    finding = audit(snap)["p2p.bandwidth"]
    assert finding.status == "ok"
    assert "2 pairs: unidirectional 40.0–52.0 GB/s (limit 63 GB/s); data check passed" in finding.observed


def test_corrupt_copy_is_critical(snap: Path) -> None:
    set_file(snap, BENCH_FILE, bench([pair(0, 1), pair(2, 5, data_ok=False)]))
    finding = audit(snap)["p2p.bandwidth"]
    assert (finding.status, finding.severity) == ("problem", "critical")
    assert "data check FAILED on 1 pairs (GPU2→GPU5)" in finding.observed
    assert finding.fix is not None and finding.fix.kind == "reboot"


@pytest.mark.parametrize("entry", [pair(0, 4, 20.0), pair(0, 4, 35.0, staged=40.0)])
def test_slow_pair_is_high(snap: Path, entry: dict[str, Any]) -> None:
    set_file(snap, BENCH_FILE, bench([pair(0, 1), entry]))
    finding = audit(snap)["p2p.bandwidth"]
    assert (finding.status, finding.severity) == ("problem", "high")
    assert finding.observed.startswith("1 slow pairs: GPU0→GPU4")


def test_wrong_schema_is_unknown(snap: Path) -> None:
    set_file(snap, BENCH_FILE, json.dumps({"schema": "other/1", "pairs": []}))
    assert "not a rigaudit.p2p/1 result" in audit(snap)["p2p.bandwidth"].observed
    set_file(snap, BENCH_FILE, "{broken")
    assert audit(snap)["p2p.bandwidth"].status == "unknown"


def test_p2p_disable_in_nccl_conf_is_high_host_restart(snap: Path) -> None:
    set_file(snap, "/etc/nccl.conf", "# left from debugging\nNCCL_P2P_DISABLE=1\n")
    finding = audit(snap)["nccl.env"]
    assert (finding.status, finding.severity) == ("problem", "high")
    assert finding.observed == "NCCL_P2P_DISABLE=1 in /etc/nccl.conf"
    assert finding.fix is not None and (finding.fix.kind, finding.fix.where) == ("restart", "host")


def test_lxc_environment_override_belongs_to_the_containers_config(snap: Path) -> None:
    conf = (snap / "files/etc/pve/lxc/101.conf").read_text() + "lxc.environment: NCCL_SHM_DISABLE=1\n"
    set_file(snap, "/etc/pve/lxc/101.conf", conf)
    finding = audit(snap)["nccl.env"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert "NCCL_SHM_DISABLE=1 in /etc/pve/lxc/101.conf" in finding.observed
    assert finding.fix is not None and finding.fix.where == "container_config"


def test_ib_disable_matters_only_with_an_ib_nic(snap: Path) -> None:
    set_file(snap, "/root/.nccl.conf", "NCCL_IB_DISABLE=1\n")
    assert audit(snap)["nccl.env"].status == "unknown"  # no IB: harmless; no server: its environment unread
    add_dir(snap, "/sys/class/infiniband/mlx5_0")
    finding = audit(snap)["nccl.env"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert "NCCL_IB_DISABLE=1 in /root/.nccl.conf" in finding.observed


def test_a_server_environment_that_cannot_be_read_is_no_ok(snap: Path) -> None:
    """No override seen where none could be read is unknown, never ok; an override in a file read still counts."""
    add_process(snap, 3100, ["python3", "-m", "vllm.entrypoints.openai.api_server"], environ={"NCCL_P2P_DISABLE": "1"})
    set_unreadable(snap, "/proc/3100/environ")
    finding = audit(snap)["nccl.env"]
    assert finding.status == "unknown", finding.observed
    assert "environment of pid 3100 (vllm): EACCES" in finding.observed and "as root" in finding.observed
    set_file(snap, "/etc/nccl.conf", "NCCL_SHM_DISABLE=1\n")
    assert audit(snap)["nccl.env"].status == "problem"


def test_server_process_environment_is_read(snap: Path) -> None:
    add_process(
        snap,
        3100,
        ["python3", "-m", "vllm.entrypoints.openai.api_server"],
        environ={"NCCL_P2P_LEVEL": "LOC", "HOME": "/root"},
        cgroup="0::/lxc/101/ns/system.slice/vllm.service\n",
    )
    finding = audit(snap)["nccl.env"]
    assert (finding.status, finding.severity) == ("problem", "high")
    assert "NCCL_P2P_LEVEL=LOC in environment of pid 3100 (vllm in lxc 101)" in finding.observed
    assert finding.fix is not None and finding.fix.where == "container"
