"""numa: huge page reservations, zone reclaim, GPU interrupt affinity, RDMA NIC placement."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.agents.investigators.numa import INVESTIGATOR
from rigaudit.tools.schema.finding import Finding, SysctlAction
from tests.support.investigators import audit_snapshot
from tests.support.mutate import add_dir, light_copy, set_command, set_file

MEMINFO = (
    "MemTotal:       1610612736 kB\nMemFree:        1127428915 kB\n"
    "HugePages_Total:  {total}\nHugePages_Free:   {free}\nHugepagesize:       2048 kB\n"
)


@pytest.fixture
def snap(seed_dir: Path, tmp_path: Path) -> Path:
    return light_copy(seed_dir, tmp_path / "snap")


def audit(root: Path) -> dict[str, Finding]:
    return audit_snapshot(INVESTIGATOR, root, evidence_read=True)


def test_seed(seed_dir: Path) -> None:
    found = audit(seed_dir)
    assert found["numa.hugepages"].status == "ok"
    assert found["numa.hugepages"].observed == "no huge pages reserved (RAM 1536.0 GiB)"
    assert found["numa.zone_reclaim"].status == "ok"
    assert found["numa.irq_affinity"].status == "unknown"
    assert found["numa.nic_affinity"].status == "not_applicable"


def test_large_unused_hugepage_reservation_is_medium(snap: Path) -> None:
    pages = 400 * 1024 * 1024 // 2048  # 400 GiB of 2 MiB pages
    set_file(snap, "/proc/meminfo", MEMINFO.format(total=pages, free=pages))
    finding = audit(snap)["numa.hugepages"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert finding.observed.startswith("400.0 GiB reserved (26% of 1536.0 GiB RAM)")
    assert finding.fix is not None and finding.fix.actions == (SysctlAction(key="vm.nr_hugepages", value="0"),)
    assert finding.fix.revert == "echo 204800 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"


def test_moderate_reservation_is_low_and_one_in_use_is_ok(snap: Path) -> None:
    pages = 100 * 1024 * 1024 // 2048
    set_file(snap, "/proc/meminfo", MEMINFO.format(total=pages, free=pages))
    assert audit(snap)["numa.hugepages"].severity == "low"
    set_file(snap, "/proc/meminfo", MEMINFO.format(total=pages, free=pages // 10))
    finding = audit(snap)["numa.hugepages"]
    assert finding.status == "ok" and "in use" in finding.observed


def test_zone_reclaim_on_is_low(snap: Path) -> None:
    set_file(snap, "/proc/sys/vm/zone_reclaim_mode", "1\n")
    finding = audit(snap)["numa.zone_reclaim"]
    assert (finding.status, finding.severity) == ("problem", "low")
    assert finding.fix is not None and finding.fix.actions == (SysctlAction(key="vm.zone_reclaim_mode", value="0"),)


def irqs(root: Path, affinity: dict[int, str]) -> None:
    for gpu, cpus in affinity.items():
        set_file(root, f"/proc/irq/{200 + gpu}/effective_affinity_list", cpus + "\n")


def test_gpu_interrupt_on_the_far_node_is_low(snap: Path) -> None:
    irqs(snap, {0: "40", 4: "33"})
    set_command(snap, ["systemctl", "is-active", "irqbalance"], "active\n")
    finding = audit(snap)["numa.irq_affinity"]
    assert (finding.status, finding.severity) == ("problem", "low")
    assert finding.observed == "GPU0 (0000:03:00.0): IRQ 200 on cpu40, GPU local cpu0-31,64-95; irqbalance active"
    assert finding.fix is not None and finding.fix.actions[0].model_dump()["argv"] == (
        "sh",
        "-c",
        "echo 0-31,64-95 > /proc/irq/200/smp_affinity_list",
    )


def test_local_gpu_interrupts_are_ok(snap: Path) -> None:
    irqs(snap, {0: "5"})
    finding = audit(snap)["numa.irq_affinity"]
    assert finding.status == "ok" and finding.observed.startswith("interrupts of 1/8 GPUs")


def nic(root: Path, name: str, node: int) -> None:
    add_dir(root, f"/sys/class/infiniband/{name}")
    set_file(root, f"/sys/class/infiniband/{name}/device/numa_node", f"{node}\n")


def test_gpu_node_without_an_rdma_nic_is_low(snap: Path) -> None:
    nic(snap, "mlx5_0", 0)
    finding = audit(snap)["numa.nic_affinity"]
    assert (finding.status, finding.severity) == ("problem", "low")
    assert finding.observed == "mlx5_0 node 0; GPUs on node(s) 1 have no local RDMA NIC"
    assert finding.subjects[0] == "GPU4 (0000:83:00.0)"
    assert finding.fix is not None and finding.fix.kind == "hardware"


def test_a_nic_on_every_gpu_node_is_ok(snap: Path) -> None:
    nic(snap, "mlx5_0", 0)
    nic(snap, "mlx5_1", 1)
    assert audit(snap)["numa.nic_affinity"].status == "ok"
