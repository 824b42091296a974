"""The facts rules depend on: GPU model capabilities, frequency drivers of the kernel, RDMA path, MIG use,
a pending driver reboot, tensor parallelism of the servers."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from rigaudit.agents.facts.cpufreq_drivers import FrequencyDrivers, collect_frequency_drivers
from rigaudit.agents.facts.gpu_models import has_mig, p2p_support, product_line
from rigaudit.agents.facts.gpus import collect_gpus
from rigaudit.agents.facts.mig import GpuMig, collect_mig, mig_devices
from rigaudit.agents.facts.pending_reboot import PendingReboot, collect_pending_reboot
from rigaudit.agents.facts.rdma import RdmaFacts, collect_rdma, describe_nics
from rigaudit.agents.facts.serving import largest_tp, tensor_parallel
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.snapshot import SnapshotHost
from tests.support.fakesnap import write_snapshot


@pytest.mark.parametrize(
    ("name", "line", "p2p", "mig"),
    [
        ("NVIDIA H200", "datacenter", "yes", True),
        ("NVIDIA A100-SXM4-80GB", "datacenter", "yes", True),
        ("NVIDIA L40S", "datacenter", "yes", False),
        ("NVIDIA RTX 6000 Ada Generation", "workstation", "yes", False),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "workstation", "yes", True),
        ("NVIDIA GeForce RTX 4090", "geforce", "no", False),
        ("NVIDIA GeForce RTX 5090", "geforce", "no", False),
        ("NVIDIA GeForce RTX 3090", "geforce", "nvlink_bridge", False),
        ("Tesla T4", "datacenter", "yes", False),
        ("Mystery Board", "unknown", "unknown", False),
    ],
)
def test_gpu_models(name: str, line: str, p2p: str, mig: bool) -> None:
    assert (product_line(name), p2p_support(name), has_mig(name)) == (line, p2p, mig)


@pytest.mark.parametrize(
    ("argv", "tp"),
    [
        (("python3", "-m", "vllm.entrypoints.openai.api_server", "--tensor-parallel-size", "8"), 8),
        (("vllm", "serve", "m", "-tp", "4"), 4),
        (("python", "-m", "sglang.launch_server", "--tp-size=2"), 2),
        (("python", "-m", "sglang.launch_server", "--tp", "8"), 8),
        (("text-generation-launcher", "--num-shard", "2"), 2),
        (("vllm", "serve", "m"), None),
        (("vllm", "serve", "--tensor-parallel-size"), None),
    ],
)
def test_tensor_parallel(argv: tuple[str, ...], tp: int | None) -> None:
    assert tensor_parallel(argv) == tp


def test_largest_tp() -> None:
    assert largest_tp([("x", "--tp", "2"), ("y", "--tensor-parallel-size", "8"), ("z",)]) == 8
    assert largest_tp([("z",)]) is None


def _drivers(root: Path, files: dict[str, str | bytes], exists: tuple[str, ...] = ()) -> FrequencyDrivers:
    write_snapshot(root, files, exists=exists)
    return anyio.run(lambda: collect_frequency_drivers(Probe(SnapshotHost(root))))


def test_ubuntu_22_04_ga_kernel_has_no_amd_pstate(tmp_path: Path) -> None:
    f = _drivers(tmp_path, {"/proc/sys/kernel/osrelease": "5.15.0-105-generic\n"})
    assert (f.amd_pstate, f.amd_pstate_active, f.version) == ("no", "no", (5, 15, 0))


def test_the_kernel_config_decides_over_the_version(tmp_path: Path) -> None:
    release = "5.14.0-427.13.1.el9_4.x86_64"
    rhel = _drivers(tmp_path / "a", {"/proc/sys/kernel/osrelease": release})
    assert rhel.amd_pstate == "unknown" and "enterprise kernel" in rhel.how
    config = "CONFIG_X86_AMD_PSTATE=y\nCONFIG_X86_AMD_PSTATE_DEFAULT_MODE=3\n"
    backported = _drivers(tmp_path / "b", {"/proc/sys/kernel/osrelease": release, f"/boot/config-{release}": config})
    assert (backported.amd_pstate, backported.amd_pstate_active, backported.config_read) == ("yes", "yes", True)
    absent = _drivers(
        tmp_path / "c",
        {"/proc/sys/kernel/osrelease": "6.8.0-1\n", "/boot/config-6.8.0-1": "# CONFIG_X86_AMD_PSTATE is not set\n"},
    )
    assert absent.amd_pstate == "no"


def test_registered_driver_and_versions(tmp_path: Path) -> None:
    passive = _drivers(
        tmp_path / "a", {"/proc/sys/kernel/osrelease": "6.1.0-18-amd64\n"}, exists=("/sys/devices/system/cpu/amd_pstate",)
    )
    assert (passive.amd_pstate, passive.amd_pstate_registered, passive.amd_pstate_active) == ("yes", True, "no")
    modern = _drivers(tmp_path / "b", {"/proc/sys/kernel/osrelease": "6.8.12-11-pve\n"})
    assert (modern.amd_pstate, modern.amd_pstate_active, modern.amd_pstate_registered) == ("yes", "yes", False)


def _rdma(root: Path, files: dict[str, str | bytes], dirs: tuple[str, ...] = ()) -> RdmaFacts:
    write_snapshot(root, files, dirs=dirs)
    return anyio.run(lambda: collect_rdma(Probe(SnapshotHost(root))))


IB = {
    "/sys/class/infiniband/mlx5_0/ports/1/link_layer": "InfiniBand\n",
    "/sys/class/infiniband/mlx5_0/ports/1/state": "4: ACTIVE\n",
    "/sys/class/infiniband/mlx5_0/ports/1/rate": "400 Gb/sec (4X NDR)\n",
    "/sys/class/infiniband/mlx5_1/ports/1/link_layer": "Ethernet\n",
    "/sys/class/infiniband/mlx5_1/ports/1/state": "1: DOWN\n",
}
OPEN = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.127.05  Release Build\n"
PROPRIETARY = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.127.05  Release Build\n"


def test_gpudirect_paths(tmp_path: Path) -> None:
    base = {"/proc/sys/kernel/osrelease": "6.8.0-45-generic\n", **IB}
    peermem = _rdma(
        tmp_path / "a",
        {**base, "/proc/modules": "nvidia_peermem 16384 0 - Live\nmlx_compat 1 0\n", "/proc/driver/nvidia/version": PROPRIETARY},
    )
    assert (peermem.path, peermem.ofed) == ("peermem", True)
    assert describe_nics(peermem.nics or ()) == "2 InfiniBand/RoCE NICs (mlx5_0, mlx5_1), 1 active"
    dmabuf = _rdma(tmp_path / "b", {**base, "/proc/modules": "ib_core 1 0\n", "/proc/driver/nvidia/version": OPEN})
    assert (dmabuf.path, dmabuf.ofed, len(dmabuf.active_nics)) == ("dmabuf", False, 1)
    none = _rdma(tmp_path / "c", {**base, "/proc/modules": "ib_core 1 0\n", "/proc/driver/nvidia/version": PROPRIETARY})
    assert none.path == "none" and "proprietary" in none.path_text()
    old = _rdma(
        tmp_path / "d",
        {**IB, "/proc/sys/kernel/osrelease": "5.4.0-1\n", "/proc/modules": "", "/proc/driver/nvidia/version": OPEN},
    )
    assert old.path == "none" and "5.12" in old.path_text()
    no_nic = _rdma(tmp_path / "e", {"/proc/modules": ""})
    assert no_nic.nics == () and no_nic.path == "unknown"


def test_pending_reboot_after_a_driver_upgrade(tmp_path: Path) -> None:
    dmesg = (
        "[ 10.1] NVRM: API mismatch: the client has the version 550.127.05, but\n"
        "NVRM: this kernel module has the version 550.90.07.  Please\n"
    )
    root = write_snapshot(
        tmp_path,
        {
            "/proc/driver/nvidia/version": PROPRIETARY.replace("550.127.05", "550.90.07"),
            "/var/run/reboot-required.pkgs": "nvidia-dkms-550\nlinux-image-6.8.0-45-generic\n",
        },
        links={"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1": "libnvidia-ml.so.550.127.05"},
        commands={("dmesg",): dmesg},
    )
    f: PendingReboot = anyio.run(lambda: collect_pending_reboot(Probe(SnapshotHost(root))))
    assert (f.loaded, f.installed, f.driver_upgraded, f.new_version) == ("550.90.07", "550.127.05", True, "550.127.05")
    assert f.api_mismatch == ("550.127.05", "550.90.07") and f.nvidia_packages == ("nvidia-dkms-550",)


def test_no_pending_reboot_when_versions_agree(tmp_path: Path) -> None:
    root = write_snapshot(
        tmp_path,
        {"/proc/driver/nvidia/version": PROPRIETARY},
        links={"/usr/lib64/libnvidia-ml.so.1": "libnvidia-ml.so.550.127.05"},
    )
    f: PendingReboot = anyio.run(lambda: collect_pending_reboot(Probe(SnapshotHost(root))))
    assert not f.driver_upgraded and f.reboot_packages is None


def test_mig_instances_and_their_users(tmp_path: Path) -> None:
    gpu = "/sys/devices/pci0000:00/0000:00:01.0/0000:07:00.0"
    files: dict[str, str | bytes] = {
        f"{gpu}/vendor": "0x10de\n",
        f"{gpu}/class": "0x030200\n",
        "/proc/driver/nvidia/gpus/0000:07:00.0/information": "Model: A100\nDevice Minor: \t 0\n",
        "/proc/driver/nvidia/capabilities/gpu0/mig/gi1/access": "1\n",
        "/proc/driver/nvidia/capabilities/gpu0/mig/gi2/access": "1\n",
        "/proc/driver/nvidia/capabilities/gpu0/mig/config": "1\n",
    }
    nvml = {
        ("nvmlDeviceGetCount", ()): 1,
        ("nvmlDeviceGetPciInfo", (0,)): {"busId": "00000000:07:00.0"},
        ("nvmlDeviceGetName", (0,)): "NVIDIA A100-SXM4-80GB",
        ("nvmlDeviceGetMigMode", (0,)): [1, 1],
        ("nvmlDeviceGetComputeRunningProcesses", (0,)): [
            {"pid": 7, "usedGpuMemory": 1, "gpuInstanceId": 1, "computeInstanceId": 0}
        ],
    }
    root = write_snapshot(
        tmp_path,
        files,
        links={"/sys/bus/pci/devices/0000:07:00.0": "../../../devices/pci0000:00/0000:00:01.0/0000:07:00.0"},
        nvml=nvml,
    )

    async def main() -> tuple[GpuMig, ...]:
        probe = Probe(SnapshotHost(root))
        return await collect_mig(probe, await collect_gpus(probe))

    (state,) = anyio.run(main)
    assert (state.enabled, state.instances, state.processes, state.in_use) == (True, (1, 2), 1, True)
    assert mig_devices({"CUDA_VISIBLE_DEVICES": "MIG-1a2b,MIG-3c4d", "NVIDIA_VISIBLE_DEVICES": "MIG-1a2b"}) == (
        "MIG-1a2b",
        "MIG-3c4d",
    )
