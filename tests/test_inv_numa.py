"""The numa investigator: automatic NUMA balancing and GPU placement."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rigaudit.agents.investigators.numa import INVESTIGATOR
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.finding import CommandAction, Finding, SysctlAction
from tests.support.investigators import audit_snapshot
from tests.support.mutate import light_copy, ram_dir, remove_tree, set_command, set_file

GPU0 = "/sys/bus/pci/devices/0000:03:00.0"
GPU4 = "/sys/bus/pci/devices/0000:83:00.0"


@pytest.fixture
def seed(tmp_path: Path, seed_dir: Path) -> Iterator[Path]:
    with ram_dir(tmp_path) as base:
        yield light_copy(seed_dir, base / "seed")


def audit(root: Path) -> dict[str, Finding]:
    return audit_snapshot(INVESTIGATOR, root, evidence_read=True)


def _set_gpu_file(root: Path, path: str, value: str) -> None:
    """Write a file under a GPU's sysfs folder, following the snapshot's links to its real place."""
    set_file(root, SnapshotHost(root).resolve(path), value)


def _one_node(root: Path) -> None:
    remove_tree(root, "/sys/devices/system/node/node1")
    set_file(root, "/sys/devices/system/node/online", "0\n")


def test_seed_numa(seed_dir: Path) -> None:
    found = audit(seed_dir)
    balancing = found["numa.balancing"]
    assert (balancing.status, balancing.severity) == ("problem", "medium")
    assert balancing.observed == "kernel.numa_balancing=1 on 2 NUMA nodes"
    assert balancing.fix is not None
    assert (balancing.fix.kind, balancing.fix.where, balancing.fix.risk) == ("runtime", "host", "low")
    assert balancing.fix.actions == (SysctlAction(key="kernel.numa_balancing", value="0"),)
    assert "/etc/sysctl.d/" in balancing.fix.persist and "kernel.numa_balancing = 0" in balancing.fix.persist
    assert balancing.fix.revert == "sysctl -w kernel.numa_balancing=1"

    affinity = found["numa.gpu_affinity"]
    assert affinity.status == "ok"
    assert affinity.observed == (
        "node 0: GPU0, GPU1, GPU2, GPU3 (CPUs 0-31,64-95); node 1: GPU4, GPU5, GPU6, GPU7 (CPUs 32-63,96-127)"
    )
    assert "no binding is judged" in affinity.explanation


def test_balancing_off_is_ok(seed: Path) -> None:
    set_file(seed, "/proc/sys/kernel/numa_balancing", "0\n")
    assert audit(seed)["numa.balancing"].status == "ok"


def test_balancing_on_one_node_is_not_applicable(seed: Path) -> None:
    _one_node(seed)
    finding = audit(seed)["numa.balancing"]
    assert finding.status == "not_applicable" and "one NUMA node" in finding.observed


def test_balancing_fix_belongs_to_the_containers_host_inside_lxc(seed: Path) -> None:
    set_command(seed, ["systemd-detect-virt", "--container"], "lxc\n")
    fix = audit(seed)["numa.balancing"].fix
    assert fix is not None and fix.where == "container_host"


def test_gpu_without_numa_node_on_two_sockets_fires(seed: Path) -> None:
    _set_gpu_file(seed, f"{GPU0}/numa_node", "-1\n")
    _set_gpu_file(seed, f"{GPU4}/numa_node", "-1\n")
    finding = audit(seed)["numa.gpu_affinity"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert finding.subjects == ("GPU0 (0000:03:00.0)", "GPU4 (0000:83:00.0)")
    assert "node -1: GPU0, GPU4" in finding.observed
    assert finding.fix is not None and finding.fix.kind == "firmware"
    assert all(isinstance(a, CommandAction) for a in finding.fix.actions)
    assert "SRAT" in finding.fix.summary


def test_minus_one_on_a_single_node_is_normal(seed: Path) -> None:
    _one_node(seed)
    _set_gpu_file(seed, f"{GPU0}/numa_node", "-1\n")
    assert audit(seed)["numa.gpu_affinity"].status == "ok"


def test_minus_one_in_a_vm_guest_is_not_a_problem(seed: Path) -> None:
    set_command(seed, ["systemd-detect-virt", "--vm"], "kvm\n")
    _set_gpu_file(seed, f"{GPU0}/numa_node", "-1\n")
    finding = audit(seed)["numa.gpu_affinity"]
    assert finding.status == "ok" and "hypervisor" in finding.explanation
