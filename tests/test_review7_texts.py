"""What a verdict says must be what was read (the seventh review's text defects s12, s03, s05).

- kernel.swappiness said the serving process's pages were swapped without reading its VmSwap;
- container.cgroup_cpu's verify named cgroup v2's cpu.max on a cgroup v1 host;
- driver.peermem counted SR-IOV VFs as InfiniBand NICs and named a lexicographic first-last range.
"""

from __future__ import annotations

from rigaudit.agents.facts.rdma import name_span
from rigaudit.agents.investigators.container import INVESTIGATOR as CONTAINER
from rigaudit.agents.investigators.driver import INVESTIGATOR as DRIVER
from rigaudit.agents.investigators.kernel import INVESTIGATOR as KERNEL
from tests.hostgen import ARCHETYPES, legacy_io
from tests.hostgen.cache import snapshot
from tests.support.investigators import audit_snapshot

H200 = ARCHETYPES["hgx-h200-noble"]


def test_swap_of_other_processes_is_not_said_to_be_the_servers() -> None:
    finding = audit_snapshot(KERNEL, snapshot(legacy_io.swap_used(H200)))["kernel.swappiness"]
    assert (finding.status, finding.severity) == ("problem", "low"), finding.observed
    assert "The servers swap nothing (VmSwap 0 kB" in finding.explanation
    assert "are not theirs" in finding.explanation


def test_a_server_with_swapped_pages_is_named() -> None:
    spec = legacy_io.swap_used(H200, server_kib=2 * 2**20)
    finding = audit_snapshot(KERNEL, snapshot(spec))["kernel.swappiness"]
    assert (finding.status, finding.severity) == ("problem", "low"), finding.observed
    assert "Servers' pages are swapped out (VmSwap: pid 3120 (sglang) 2048 MiB)" in finding.explanation


def test_a_cgroup_v1_quota_is_verified_by_v1_files() -> None:
    spec = legacy_io.cgroup_v1_quota(ARCHETYPES["docker-h100-bm"])
    finding = audit_snapshot(CONTAINER, snapshot(spec))["container.cgroup_cpu"]
    assert (finding.status, finding.severity) == ("problem", "high"), finding.observed
    assert "throttled in 412877 of 918234 periods" in finding.observed
    assert finding.fix is not None
    assert "cpu.max" not in finding.fix.verify
    assert "cpu.cfs_quota_us inside the container -> -1" in finding.fix.verify


def test_sriov_vfs_are_counted_apart_from_the_nics() -> None:
    spec = legacy_io.sriov_vfs(ARCHETYPES["hgx-h100-jammy"])
    finding = audit_snapshot(DRIVER, snapshot(spec))["driver.peermem"]
    assert finding.status == "ok", finding.observed
    assert "8 InfiniBand NICs (mlx5_0–mlx5_7), 8 active; 32 SR-IOV VFs (mlx5_8–mlx5_39), 0 active" in finding.observed


def test_a_name_span_is_a_numeric_run_or_the_names() -> None:
    assert name_span([f"mlx5_{n}" for n in range(12)]) == "mlx5_0–mlx5_11"
    assert name_span(["mlx5_0", "mlx5_2", "mlx5_3", "mlx5_9", "mlx5_10"]) == "mlx5_0, mlx5_2, mlx5_3 and 2 more"
    assert name_span(["mlx5_1", "mlx5_0"]) == "mlx5_0, mlx5_1"


def test_numbers_no_kernel_writes_read_as_no_number() -> None:
    """A crafted snapshot's 5,000-digit PPid or cgroup quota (or another script's digits) is no number, not a
    ValueError that ends the investigator."""
    from rigaudit.agents.facts.numbers import count
    from rigaudit.agents.facts.proc_info import status_ppid

    assert status_ppid("PPid:\t" + "9" * 5000) is None and status_ppid("PPid:\t٨") is None
    assert status_ppid("PPid:\t1") == 1 and count("9223372036854775807") == 9223372036854775807
    assert count("9" * 20) is None and count("") is None and count(None) is None
