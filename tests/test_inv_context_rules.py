"""Rules that look at the facts they depend on: P2P capability, NVLink, MIG, RDMA, the platform, the servers."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.agents.investigators.cuda import INVESTIGATOR as CUDA
from rigaudit.agents.investigators.kernel import INVESTIGATOR as KERNEL
from rigaudit.agents.investigators.nccl import INVESTIGATOR as NCCL
from rigaudit.agents.investigators.p2p import INVESTIGATOR as P2P
from rigaudit.agents.investigators.pcie import INVESTIGATOR as PCIE
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.pci.sysfs import config_path
from rigaudit.tools.schema.finding import CommandAction, Finding
from tests.support.apply import GPUS
from tests.support.investigators import audit_snapshot
from tests.support.mutate import add_process, light_copy, set_file, set_nvml
from tests.support.platforms import as_kubernetes, as_vm


@pytest.fixture
def seed(seed_dir: Path, tmp_path: Path) -> Path:
    return light_copy(seed_dir, tmp_path / "seed")


def one(investigator: object, root: Path, check: str) -> Finding:
    return audit_snapshot(investigator, root, evidence_read=True, problem_has_fix=True)[check]  # type: ignore[arg-type]


def _translated(root: Path) -> None:
    """Every GPU's IOMMU group translates DMA (DMA-FQ), no iommu= option on the line."""
    set_file(root, "/proc/cmdline", "BOOT_IMAGE=/boot/vmlinuz-6.8.12-11-pve root=/dev/mapper/pve-root ro quiet\n")
    for group in range(10, 34):  # the seed's GPU groups
        set_file(root, f"/sys/kernel/iommu_groups/{group}/type", "DMA-FQ\n")


def _geforce(root: Path, name: str = "NVIDIA GeForce RTX 4090") -> None:
    """GeForce cards as the stock driver reports them: every pair GPU_NOT_SUPPORTED (GNS) for read and write (a driver
    that reports OK there has P2P for them, and the rules then believe it)."""
    for i in range(8):
        set_nvml(root, "nvmlDeviceGetName", [i], name)
        for j in range(i + 1, 8):
            set_nvml(root, "nvmlDeviceGetP2PStatus", [i, j, 0], 2)
            set_nvml(root, "nvmlDeviceGetP2PStatus", [i, j, 1], 2)


def _nvlink_everywhere(root: Path) -> None:
    for i in range(8):
        set_nvml(root, "nvmlDeviceGetNvLinkState", [i, 0], 1)
        for j in range(i + 1, 8):
            set_nvml(root, "nvmlDeviceGetP2PStatus", [i, j, 2], 0)


def _rdma(root: Path) -> None:
    set_file(root, "/sys/class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n")
    set_file(root, "/sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n")


def test_translated_iommu_costs_little_where_gpus_do_not_peer_over_pcie(seed: Path) -> None:
    _translated(seed)
    assert one(KERNEL, seed, "kernel.iommu").severity == "high"
    _geforce(seed)
    finding = one(KERNEL, seed, "kernel.iommu")
    assert (finding.status, finding.severity) == ("problem", "low")
    assert "GeForce RTX 4090 have no PCIe peer-to-peer" in finding.explanation


def test_translated_iommu_on_nvlink_matters_for_rdma_only(seed: Path) -> None:
    _translated(seed)
    _nvlink_everywhere(seed)
    assert one(KERNEL, seed, "kernel.iommu").severity == "low"
    _rdma(seed)
    finding = one(KERNEL, seed, "kernel.iommu")
    assert finding.severity == "medium" and "GPUDirect RDMA" in finding.explanation


def test_p2p_refused_on_geforce_is_not_a_fault(seed: Path) -> None:
    _geforce(seed)
    for i in range(8):
        for j in range(i + 1, 8):
            set_nvml(seed, "nvmlDeviceGetP2PStatus", [i, j, 0], 2)
            set_nvml(seed, "nvmlDeviceGetP2PStatus", [i, j, 1], 2)
    finding = one(P2P, seed, "p2p.status")
    assert finding.status == "not_applicable" and "28/28 pairs refuse P2P" in finding.observed


def test_p2p_refused_in_a_vm_points_at_the_hypervisor_in_words(seed: Path) -> None:
    as_vm(seed)
    set_nvml(seed, "nvmlDeviceGetP2PStatus", [0, 1, 0], 1)
    finding = one(P2P, seed, "p2p.status")
    assert (finding.status, finding.severity) == ("problem", "high")
    assert finding.fix is not None and finding.fix.where == "hypervisor"
    actions = [a for a in finding.fix.actions if isinstance(a, CommandAction)]
    assert all(a.argv == () for a in actions)  # nothing a hypervisor could run with this guest's addresses
    assert "x-nv-gpudirect-clique" in actions[0].description


def test_p2p_across_intel_sockets_is_a_topology_note(seed: Path) -> None:
    cpuinfo = (seed / "files/proc/cpuinfo").read_text().replace("AuthenticAMD", "GenuineIntel")
    set_file(seed, "/proc/cpuinfo", cpuinfo)
    set_nvml(seed, "nvmlDeviceGetP2PStatus", [0, 4, 0], 3)
    set_nvml(seed, "nvmlDeviceGetTopologyCommonAncestor", [0, 4], 50)
    finding = one(P2P, seed, "p2p.status")
    assert (finding.status, finding.severity) == ("problem", "low")
    assert finding.fix is not None and finding.fix.kind == "restart" and "CPU interconnect" in finding.explanation


def test_p2p_disable_is_harmless_without_p2p_and_costly_on_nvlink(seed: Path) -> None:
    set_file(seed, "/etc/nccl.conf", "NCCL_P2P_DISABLE=1\n")
    assert one(NCCL, seed, "nccl.env").severity == "high"
    _geforce(seed)
    harmless = one(NCCL, seed, "nccl.env")
    assert harmless.status == "unknown" and "NCCL_P2P_DISABLE=1 is harmless here" in harmless.observed  # no server
    set_file(seed, "/etc/nccl.conf", "NCCL_SHM_DISABLE=1\n")
    assert one(NCCL, seed, "nccl.env").severity == "high"  # no P2P and no SHM: sockets


def test_acs_inside_a_vm_is_the_hypervisors(seed: Path) -> None:
    as_vm(seed)
    finding = one(PCIE, seed, "pcie.acs")
    assert finding.status == "not_applicable" and "hypervisor's emulation" in finding.observed


def _ext_tags_on(root: Path) -> None:
    host = SnapshotHost(root)
    for bdf in GPUS:
        path = host.resolve(config_path(bdf))
        data = bytearray((root / "files" / path.lstrip("/")).read_bytes())
        devctl = int.from_bytes(data[0x80:0x82], "little") | 0x0100
        data[0x80:0x82] = devctl.to_bytes(2, "little")
        set_file(root, path, bytes(data))


def test_small_max_read_request_with_extended_tags_costs_little(seed: Path) -> None:
    assert one(PCIE, seed, "pcie.mrrs").severity == "medium"  # the seed: ExtTag- and 512 bytes
    _ext_tags_on(seed)
    finding = one(PCIE, seed, "pcie.mrrs")
    assert (finding.status, finding.severity) == ("problem", "low")
    assert "256 reads can be outstanding" in finding.explanation


def _mig(root: Path, gpus: range, instances: bool) -> None:
    for i in gpus:
        set_nvml(root, "nvmlDeviceGetMigMode", [i], [1, 1])
        if instances:
            set_file(root, f"/proc/driver/nvidia/capabilities/gpu{i}/mig/gi1/access", "1\n")
            set_file(root, f"/proc/driver/nvidia/capabilities/gpu{i}/mig/gi2/access", "1\n")


def test_mig_slices_in_use_are_deliberate(seed: Path) -> None:
    _mig(seed, range(8), instances=True)
    set_nvml(
        seed,
        "nvmlDeviceGetComputeRunningProcesses",
        [0],
        [{"pid": 4100, "usedGpuMemory": 2**30, "gpuInstanceId": 1, "computeInstanceId": 0}],
    )
    finding = one(CUDA, seed, "cuda.mig")
    assert finding.status == "ok" and "deliberate" in finding.explanation


def test_mig_on_without_instances_runs_nothing(seed: Path) -> None:
    _mig(seed, range(2), instances=False)
    finding = one(CUDA, seed, "cuda.mig")
    assert (finding.status, finding.severity) == ("problem", "high")
    assert "no GPU instance created on GPU0 (0000:03:00.0), GPU1 (0000:04:00.0)" in finding.observed


def test_mig_under_a_tensor_parallel_server_of_whole_gpus(seed: Path) -> None:
    _mig(seed, range(8), instances=True)
    add_process(seed, 4200, ["python3", "-m", "vllm.entrypoints.openai.api_server", "--tensor-parallel-size", "8"])
    finding = one(CUDA, seed, "cuda.mig")
    assert (finding.status, finding.severity) == ("problem", "high")
    assert "tensor parallelism 8" in finding.observed


def test_kubernetes_pod_small_shm_fix_is_the_pod_spec(seed: Path) -> None:
    from rigaudit.agents.investigators.container import INVESTIGATOR as CONTAINER

    as_kubernetes(seed)
    finding = one(CONTAINER, seed, "container.shm")
    assert (finding.status, finding.severity) == ("problem", "high")
    assert finding.fix is not None and finding.fix.where == "container_config"
    assert "emptyDir" in finding.fix.summary and "medium: Memory" in finding.fix.summary


def test_gpu_not_supported_on_a_p2p_capable_model_is_its_mode(seed: Path) -> None:
    set_nvml(seed, "nvmlDeviceGetP2PStatus", [0, 1, 0], 2)
    finding = one(P2P, seed, "p2p.status")
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert "vGPU profile" in finding.explanation


def test_geforce_on_a_driver_with_p2p_is_believed(seed: Path) -> None:
    """NVML says OK between GeForce cards (a driver built with P2P for them): P2P is in use, so turning it off costs."""
    for i in range(8):
        set_nvml(seed, "nvmlDeviceGetName", [i], "NVIDIA GeForce RTX 4090")
    set_file(seed, "/etc/nccl.conf", "NCCL_P2P_DISABLE=1\n")
    assert one(P2P, seed, "p2p.status").status == "ok"
    assert one(NCCL, seed, "nccl.env").severity == "high"


def test_bridged_geforce_pairs_peer_only_over_their_bridge(seed: Path) -> None:
    _geforce(seed, "NVIDIA GeForce RTX 3090")
    assert one(P2P, seed, "p2p.status").status == "not_applicable"
