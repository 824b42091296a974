"""Fault helpers change a copy of a host, and every fact the fault changes on a real host changes together."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import FrozenInstanceError, replace
from pathlib import Path

import pytest

from tests.hostgen import ARCHETYPES, build, faults, write
from tests.hostgen.build import ImpossibleHost
from tests.hostgen.cache import built as build_once
from tests.hostgen.cache import snapshot
from tests.hostgen.pciconfig import ACS_KERNEL_ENABLES
from tests.hostgen.spec import HostSpec

HGX = ARCHETYPES["hgx-h100-jammy"]


def test_faults_return_copies() -> None:
    changed = faults.fabricmanager_down(HGX)
    assert HGX.driver.fabricmanager == "active" and changed.driver.fabricmanager == "failed"
    assert changed.name == "hgx-h100-jammy+fabricmanager-down"
    with pytest.raises(FrozenInstanceError):
        HGX.driver.fabricmanager = "failed"  # type: ignore[misc]


def test_fabric_manager_down_shows_everywhere() -> None:
    tree = build(faults.fabricmanager_down(HGX)).tree
    assert tree.commands[("systemctl", "is-active", "nvidia-fabricmanager")]["stdout"] == "failed\n"
    assert tree.nvml_result("nvmlDeviceGetGpuFabricInfo", 0)["state"] == 1
    assert "fabric manager failed to initialize" in (tree.text("/var/log/fabricmanager.log") or "")
    assert "nv-fabricmanager" not in " ".join(tree.text(p) or "" for p in tree.files if p.endswith("/comm"))


def test_upgrade_without_reboot_is_consistent() -> None:
    tree = build_once(ARCHETYPES["hgx-h100-upgraded-no-reboot"]).tree
    assert "550.127.05" in (tree.text("/proc/driver/nvidia/version") or "")
    assert tree.text("/sys/module/nvidia/version") == "550.127.05\n"
    assert tree.links["/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"] == "libnvidia-ml.so.550.144.03"
    assert tree.commands[("modinfo", "-F", "version", "nvidia")]["stdout"] == "550.144.03\n"
    assert tree.nvml["nvmlInit", ()]["error"] == "LIB_RM_VERSION_MISMATCH"
    assert tree.commands[("nvidia-smi",)]["exit_code"] == 18
    assert "NVRM: API mismatch: the client has the version 550.144.03" in tree.commands[("dmesg",)]["stdout"]
    assert tree.commands[("dpkg-query", "-W", "nvidia-fabricmanager*")]["stdout"] == "nvidia-fabricmanager-550\t550.144.03-1\n"


def test_container_shm_and_quota() -> None:
    pod = faults.cpu_throttled(faults.shm(ARCHETYPES["k8s-pod-h100"]), cpus=4)
    tree = build(pod).tree
    assert "size=65536k" in (tree.text("/proc/1/mounts") or "")
    assert tree.text("/sys/fs/cgroup/cpu.max") == "400000 100000\n"
    assert "nr_throttled 81234" in (tree.text("/sys/fs/cgroup/cpu.stat") or "")


def test_acs_and_iommu_faults_change_config_space() -> None:
    from rigaudit.tools.pci import parse_config

    spec = faults.iommu_translated(HGX)
    b = build(spec)
    dsp = next(f for f in b.placed.topology.functions() if f.role == "downstream")
    config = parse_config(b.tree.files[f"{dsp.path}/config"])
    assert config.acs is not None and config.acs.control.raw == ACS_KERNEL_ENABLES
    groups = {p for p in b.tree.files if p.startswith("/sys/kernel/iommu_groups/") and p.endswith("/type")}
    assert groups and all(b.tree.files[p] == b"DMA-FQ\n" for p in groups)
    assert "intel_iommu=on" in (b.tree.text("/proc/cmdline") or "")


def test_link_mrrs_bar1_and_nvlink_faults() -> None:
    from rigaudit.tools.pci import parse_config

    spec = faults.nvlink_down(faults.bar1_small(faults.max_read_request(faults.link_degraded(HGX, gpu=2), 512)), ((3, 5),))
    b = build(spec)
    gpu2 = b.gpu_states[2]
    config = parse_config(b.tree.files[f"{b.function(gpu2.bdf).path}/config"])
    assert config.express is not None and (config.express.link_gen, config.express.link_width) == (4, 8)
    assert config.express.max_read_request == 512
    assert b.tree.text(f"{b.function(gpu2.bdf).path}/current_link_speed") == "16.0 GT/s PCIe\n"
    assert b.tree.nvml_result("nvmlDeviceGetCurrPcieLinkWidth", 2) == 8
    assert b.tree.nvml_result("nvmlDeviceGetBAR1MemoryInfo", 0)["bar1Total"] == 256 << 20
    assert b.tree.nvml_result("nvmlDeviceGetNvLinkState", 3, 5) == 0
    assert "Link 5: <inactive>" in b.tree.commands[("nvidia-smi", "nvlink", "-s")]["stdout"]


def test_xid_lands_in_the_kernel_log() -> None:
    tree = build(faults.xid(HGX, gpu=1, code=79)).tree
    log = tree.commands[("dmesg",)]["stdout"]
    gpu1 = build_once(HGX).gpu_states[1].bdf.rsplit(".", 1)[0]
    assert f"NVRM: Xid (PCI:{gpu1}): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus." in log


def test_server_env_and_memlock() -> None:
    spec = faults.memlock(faults.server_env(HGX, NCCL_P2P_DISABLE="1"), "65536")
    tree = build(spec).tree
    pid = next(p for p in tree.files if p.endswith("/cmdline") and b"vllm" in tree.files[p]).split("/")[2]
    assert b"NCCL_P2P_DISABLE=1\x00" in tree.files[f"/proc/{pid}/environ"]
    assert "Max locked memory         65536                65536" in (tree.text(f"/proc/{pid}/limits") or "")


def test_mig_faults() -> None:
    tree = build(faults.mig_pending(ARCHETYPES["dgx-a100-mig"], (0,))).tree
    assert tree.nvml_result("nvmlDeviceGetMigMode", 0) == [1, 0]
    unused = build(faults.mig_unused(HGX, (0, 1))).tree
    assert unused.nvml_result("nvmlDeviceGetMigMode", 1) == [1, 1]
    assert unused.nvml_result("nvmlDeviceGetComputeRunningProcesses", 1) == []


def test_a_fault_variant_is_written_as_its_archetype_with_shared_files(tmp_path: Path) -> None:
    spec = faults.persistence_off(ARCHETYPES["gcp-g2-2xl4-vm"])
    light, full = snapshot(spec), write(spec, tmp_path / "full")

    def contents(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}

    assert contents(light) == contents(full)
    shared = [p for p in (light / "files").rglob("*") if p.is_file() and p.stat().st_nlink > 1]
    assert shared, "unchanged files are hard links into the archetype's snapshot"
    assert (light / "files/proc/driver/nvidia/version").stat().st_nlink > 1
    assert b'"result": 0' in (light / "nvml.jsonl").read_bytes()  # persistence mode 0 recorded


def test_a_changed_archetype_under_its_name_gets_its_own_folder() -> None:
    """A spec changed with ``replace`` keeps its archetype's name: it was written into the folder its archetype, written
    first to link from, had just taken."""
    base = ARCHETYPES["gcp-g2-2xl4-vm"]
    spec = replace(base, os=replace(base.os, numa_balancing=1 - base.os.numa_balancing))
    changed = snapshot(spec)
    assert changed != snapshot(base) and (changed / "snapshot.json").is_file()
    balancing = "files/proc/sys/kernel/numa_balancing"
    assert (changed / balancing).read_text() != (snapshot(base) / balancing).read_text()


@pytest.mark.parametrize(
    ("name", "change", "why"),
    [
        ("l40s-pex-iommu", faults.mig_unused, "has no MIG"),
        ("geforce-4x4090", faults.mig_pending, "has no MIG"),
        ("dgx-a100-mig", lambda s: faults.link_degraded(s, gen=5, width=16), "at most Gen4"),
        ("l40s-pex-iommu", faults.nvlink_down, "has no NVLink"),
        ("geforce-4x4090", lambda s: replace(s, gpus=replace(s.gpus, nvswitches=4)), "has no NVLink"),
    ],
)
def test_a_host_no_machine_can_be_is_refused(name: str, change: Callable[[HostSpec], HostSpec], why: str) -> None:
    """MIG on a GPU without MIG, a link faster than the GPU's generation, NVLink on a PCIe-only card: refused."""
    with pytest.raises(ImpossibleHost, match=why):
        build(change(ARCHETYPES[name]))


def test_mig_left_on_takes_the_models_whole_gpu_profile() -> None:
    spec = faults.mig_unused(ARCHETYPES["hgx-h200-noble"])
    assert spec.gpus.mig[0] is not None and spec.gpus.mig[0][0].profile == "7g.141gb"
