"""The kernel investigator (command line and runtime knobs) on the seed and on mutated copies of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigaudit.agents.investigators.kernel import INVESTIGATOR
from rigaudit.agents.investigators.kernel.params import selected
from rigaudit.tools.schema.finding import CommandAction, Finding, SysctlAction, SysfsWriteAction
from tests.support.investigators import audit_snapshot
from tests.support.mutate import light_copy, remove_file, remove_link, remove_tree, set_command, set_file

GPU_GROUPS = (13, 15, 19, 21, 25, 27, 31, 33)
SEED_CMDLINE = "BOOT_IMAGE=/boot/vmlinuz-6.8.12-11-pve root=/dev/mapper/pve-root ro quiet"


@pytest.fixture
def seed(seed_dir: Path, tmp_path: Path) -> Path:
    return light_copy(seed_dir, tmp_path / "seed")


def audit(root: Path) -> dict[str, Finding]:
    return audit_snapshot(INVESTIGATOR, root, evidence_read=True, problem_has_fix=True)


def _translated(root: Path) -> None:
    set_file(root, "/proc/cmdline", SEED_CMDLINE + "\n")
    for group in range(10, 34):
        set_file(root, f"/sys/kernel/iommu_groups/{group}/type", "DMA-FQ\n")


def test_seed(seed_dir: Path) -> None:
    found = audit(seed_dir)
    assert found.pop("kernel.grace_boot").status == "not_applicable"  # an EPYC host: the Grace guide's options do not apply
    assert all(f.status == "ok" for f in found.values()), [(f.check, f.status) for f in found.values()]
    assert found["kernel.iommu"].observed == "amd_iommu=on iommu=pt; 8/8 GPU IOMMU groups identity (passthrough)"
    assert found["kernel.thp"].observed == "enabled=madvise, defrag=madvise"
    assert found["kernel.swappiness"].observed == "vm.swappiness=60; swap 0 MiB used of 8191 MiB"


def test_gpu_groups_are_the_ones_read(seed_dir: Path) -> None:
    refs = audit(seed_dir)["kernel.iommu"].evidence
    assert {f"file:/sys/kernel/iommu_groups/{g}/type" for g in GPU_GROUPS} <= set(refs)


def test_translated_dma_on_bare_metal(seed: Path) -> None:
    _translated(seed)
    iommu = audit(seed)["kernel.iommu"]
    assert (iommu.status, iommu.severity) == ("problem", "high")
    assert "no IOMMU options; 8/8 GPU IOMMU groups translated (DMA-FQ)" in iommu.observed
    assert iommu.fix is not None and (iommu.fix.kind, iommu.fix.where) == ("reboot", "host")
    edits = [a for a in iommu.fix.actions if isinstance(a, CommandAction) and "amd_iommu=on iommu=pt" in a.description]
    assert edits and ("proxmox-boot-tool", "refresh") in [a.argv for a in iommu.fix.actions if isinstance(a, CommandAction)]


def test_translated_dma_inside_a_vm_is_normal(seed: Path) -> None:
    _translated(seed)
    set_command(seed, ["systemd-detect-virt", "--vm"], "kvm\n")
    iommu = audit(seed)["kernel.iommu"]
    assert iommu.status == "ok" and "VM" in iommu.explanation


def test_no_iommu_at_all_is_ok(seed: Path) -> None:
    links = json.loads((seed / "links.json").read_text())
    for path in [p for p in links if p.endswith("/iommu_group")]:
        remove_link(seed, path)
    remove_tree(seed, "/sys/kernel/iommu_groups")
    iommu = audit(seed)["kernel.iommu"]
    assert iommu.status == "ok" and iommu.observed.startswith("no IOMMU groups")


def test_thp_always_with_stalls(seed: Path) -> None:
    set_file(seed, "/sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n")
    set_file(seed, "/sys/kernel/mm/transparent_hugepage/defrag", "[always] defer defer+madvise madvise never\n")
    thp = audit(seed)["kernel.thp"]
    assert thp.status == "ok" and "compaction stalls unknown" in thp.observed  # no /proc/vmstat in the seed
    set_file(seed, "/proc/vmstat", "nr_free_pages 100\ncompact_stall 1234\ncompact_fail 10\n")
    thp = audit(seed)["kernel.thp"]
    assert (thp.status, thp.severity) == ("problem", "low")
    assert thp.fix is not None and thp.fix.kind == "runtime"
    assert thp.fix.actions == (SysfsWriteAction(paths=("/sys/kernel/mm/transparent_hugepage/defrag",), value="madvise"),)
    assert thp.fix.revert == "echo always > /sys/kernel/mm/transparent_hugepage/defrag"
    set_file(seed, "/proc/vmstat", "compact_stall 0\n")
    assert audit(seed)["kernel.thp"].status == "ok"


def test_swap_in_use(seed: Path) -> None:
    meminfo = (seed / "files/proc/meminfo").read_text().replace("SwapFree:        8388604 kB", "SwapFree:        4194304 kB")
    set_file(seed, "/proc/meminfo", meminfo)
    swap = audit(seed)["kernel.swappiness"]
    assert (swap.status, swap.severity) == ("problem", "low")
    assert swap.fix is not None and swap.fix.actions == (SysctlAction(key="vm.swappiness", value="10"),)
    assert swap.fix.revert == "sysctl -w vm.swappiness=60" and "/etc/sysctl.d/" in swap.fix.persist
    set_file(seed, "/proc/sys/vm/swappiness", "10\n")
    assert audit(seed)["kernel.swappiness"].status == "ok"


def test_harmful_pcie_options(seed: Path) -> None:
    set_file(seed, "/proc/cmdline", SEED_CMDLINE + " amd_iommu=on iommu=pt pci=noaer,pcie_bus_perf pcie_aspm=force\n")
    found = audit(seed)["kernel.cmdline_pcie"]
    assert (found.status, found.severity) == ("problem", "medium")
    assert found.observed == "pci=noaer,pcie_bus_perf pcie_aspm=force"
    assert found.fix is not None and found.fix.kind == "reboot"
    set_file(seed, "/proc/cmdline", SEED_CMDLINE + " pci=realloc pcie_aspm=off\n")
    quiet = audit(seed)["kernel.cmdline_pcie"]
    assert quiet.status == "ok" and "pci=realloc pcie_aspm=off" in quiet.observed


def test_unreadable_files_are_unknown(seed: Path) -> None:
    remove_file(seed, "/proc/cmdline")
    remove_file(seed, "/proc/sys/vm/swappiness")
    remove_tree(seed, "/sys/kernel/mm/transparent_hugepage")
    found = audit(seed)
    assert found["kernel.cmdline_pcie"].status == "unknown"
    assert found["kernel.swappiness"].status == "unknown"
    assert found["kernel.thp"].status == "unknown"
    assert found["kernel.iommu"].status == "ok"  # the GPUs' group types still say identity


def test_selected() -> None:
    assert selected("always [madvise] never\n") == "madvise"
    assert selected("madvise") == "madvise"
    assert selected(None) is None
