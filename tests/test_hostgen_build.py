"""The host generator: deterministic, complete snapshots whose files have the formats real hosts give."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace as dataclass_replace
from pathlib import Path

import anyio
import pytest

from rigaudit.agents.facts.platform import detect_platform
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.pci import ACS_ID, AER_ID, parse_config
from tests.hostgen import ARCHETYPES, build, faults
from tests.hostgen.cache import built as build_once
from tests.hostgen.cache import snapshot
from tests.hostgen.catalog import GPUS
from tests.hostgen.cpu import cpulist, cpumask
from tests.hostgen.pciconfig import ACS_KERNEL_ENABLES
from tests.hostgen.vgpu import name as vgpu_name

NAMES = sorted(ARCHETYPES)


def _digest(name: str) -> dict[str, object]:
    tree = build(ARCHETYPES[name]).tree  # a fresh build each time
    return {"files": tree.files, "links": tree.links, "commands": tree.commands, "nvml": tree.nvml, "dirs": tree.dirs}


@pytest.mark.parametrize("name", ["gcp-g2-2xl4-vm", "geforce-4x4090", "gh200-node"])
def test_generation_is_deterministic(name: str) -> None:
    assert _digest(name) == _digest(name)


def test_cpulist_and_mask_formats() -> None:
    assert cpulist([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"
    assert cpumask([0, 33], 64) == "00000002,00000001"


@pytest.mark.parametrize("name", NAMES)
def test_every_pci_function_has_a_real_config_space(name: str) -> None:
    built = build_once(ARCHETYPES[name])
    guest = built.guest
    for function in built.placed.topology.functions():
        data = built.tree.files[f"{function.path}/config"]
        config = parse_config(data)
        assert (config.vendor_id, config.device_id) == (function.vendor, function.device)
        assert config.capabilities_complete and not config.warnings, function.bdf
        if function.express is None:
            continue
        assert config.express is not None and config.express_known
        assert config.express.link_max_gen == function.express.link_speed
        if function.role == "gpu":
            assert config.express.max_read_request == built.spec.gpus.max_read_request
            assert config.extended_capability(AER_ID) is not None
            # vfio in the guest hides Resizable BAR; bare metal shows it with BAR1 at its full size
            assert (config.rebar is None) == guest, function.bdf
            if not guest:
                assert config.rebar is not None and max(b.current_size for b in config.rebar.bars) == built.bar1_bytes(
                    built.gpu_states_all[0]
                )
        if function.role == "downstream":
            assert config.acs is not None
            expected = ACS_KERNEL_ENABLES if built.spec.acs_redirect else 0
            assert config.acs.control.raw == expected
        if guest and function.role == "root_port":  # QEMU's pcie-root-port has ACS (at 0x148); no IOMMU sets it
            assert config.acs is not None and config.acs.control.raw == 0
        elif guest:
            assert config.extended_capability(ACS_ID) is None


@pytest.mark.skipif(shutil.which("lspci") is None, reason="lspci (pciutils) is not installed")
def test_lspci_decodes_the_config_spaces(tmp_path: Path) -> None:
    built = build_once(ARCHETYPES["l40s-pex-iommu"])
    lines = []
    for function in sorted(built.placed.topology.functions(), key=lambda f: f.bdf):
        data = built.tree.files[f"{function.path}/config"]
        lines.append(f"{function.bdf[5:]} x: y")
        lines += [f"{o:03x}: " + " ".join(f"{b:02x}" for b in data[o : o + 16]) for o in range(0, len(data), 16)]
        lines.append("")
    dump = tmp_path / "dump"
    dump.write_text("\n".join(lines))
    text = subprocess.run(["lspci", "-F", str(dump), "-vvv"], capture_output=True, text=True, check=True).stdout
    assert "Express (v2) Endpoint" in text and "Express (v2) Downstream Port" in text and "Express (v2) Root Port" in text
    assert "ACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+" in text
    assert "Physical Resizable BAR" in text and "Advanced Error Reporting" in text
    assert "MaxReadReq 4096 bytes" in text and "LnkSta:\tSpeed 16GT/s, Width x16" in text


@pytest.mark.parametrize("name", NAMES)
def test_snapshot_replays_cleanly(name: str) -> None:
    root = snapshot(ARCHETYPES[name])
    manifest = json.loads((root / "snapshot.json").read_text())
    assert manifest["format"] == "rigaudit.snapshot/1"
    host = SnapshotHost(root)
    assert host.warnings == []
    spec = ARCHETYPES[name]

    async def check() -> None:
        listing = await host.list_dir("/sys/bus/pci/devices")
        assert listing.entries
        for bdf in listing.entries:
            vendor = await host.read(f"/sys/bus/pci/devices/{bdf}/vendor")
            assert vendor.ok, bdf
        count = await host.nvml("nvmlDeviceGetCount")
        if spec.driver.userspace and spec.driver.userspace != spec.driver.version:
            assert (await host.nvml("nvmlInit")).error == "LIB_RM_VERSION_MISMATCH"
            return
        visible = spec.platform.visible_gpus
        assert count.value == (len(visible) if visible is not None else spec.gpus.count)
        name0 = await host.nvml("nvmlDeviceGetName", 0)
        model = GPUS[spec.gpus.model]
        assert name0.value == (vgpu_name(model, spec.gpus.vgpu) if spec.gpus.vgpu else model.name)
        info = await host.nvml("nvmlDeviceGetPciInfo", 0)
        assert isinstance(info.value, dict)
        config = await host.read(f"/sys/bus/pci/devices/{info.value['busIdLegacy'].lower()}/config")
        assert config.ok and parse_config(config.data or b"").vendor_id == 0x10DE
        driver = await host.readlink(f"/sys/bus/pci/devices/{info.value['busIdLegacy'].lower()}/driver")
        assert driver is not None and driver.endswith("/nvidia")
        for a in range(count.value or 0):
            for b in range(count.value or 0):
                if a != b:
                    assert (await host.nvml("nvmlDeviceGetP2PStatus", a, b, 0)).ok
        governor = await host.read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
        assert governor.ok == (spec.cpu.freq_driver is not None)

    anyio.run(check)


NVML_NAMES = {"h100-sxm": "NVIDIA H100 80GB HBM3", "h200-sxm": "NVIDIA H200", "a100-sxm-80": "NVIDIA A100-SXM4-80GB"}


def test_model_names_are_nvidias() -> None:
    for key, name in NVML_NAMES.items():
        assert GPUS[key].name == name
    assert GPUS["rtx4090"].name == "NVIDIA GeForce RTX 4090" and GPUS["gh200"].name == "NVIDIA GH200 480GB"


@pytest.mark.parametrize(
    ("name", "kind", "in_vm"),
    [
        ("hgx-h100-jammy", "bare_metal", False),
        ("aws-p5-vm", "vm", True),
        ("docker-h100-bm", "docker", False),
        ("docker-in-gcp-vm", "docker", True),
        ("k8s-pod-h100", "container", False),
        ("gh200-node", "bare_metal", False),
    ],
)
def test_platform_markers(name: str, kind: str, in_vm: bool) -> None:
    """The layers the platform facts find in each generated host (what the markers are made to show)."""
    host = SnapshotHost(snapshot(ARCHETYPES[name]))
    platform = anyio.run(lambda: detect_platform(Probe(host)))
    assert platform.kind == kind
    assert platform.in_vm == in_vm


def test_kubernetes_pod_looks_like_one() -> None:
    tree = build_once(ARCHETYPES["k8s-pod-h100"]).tree
    assert "/.dockerenv" not in tree.files
    assert b"KUBERNETES_SERVICE_HOST=10.96.0.1" in tree.files["/proc/1/environ"]
    assert tree.files["/proc/1/cgroup"] == b"0::/\n"
    assert tree.text("/run/secrets/kubernetes.io/serviceaccount/namespace") == "inference\n"
    assert tree.text("/sys/fs/cgroup/cpu.max") == "3200000 100000\n"
    assert not any(p.startswith("/lib/modules") for p in tree.files)
    assert "size=16777216k" in (tree.text("/proc/1/mounts") or "")
    assert tree.commands[("systemctl", "*")]["error"] == "not_found"
    # the driver's procfs shows every GPU of the node, NVML only the four the device plugin gave
    assert len([p for p in tree.files if p.startswith("/proc/driver/nvidia/gpus/") and p.endswith("/information")]) == 8
    assert tree.nvml_result("nvmlDeviceGetCount") == 4


def test_vm_guest_looks_like_one() -> None:
    tree = build_once(ARCHETYPES["aws-p5-vm"]).tree
    assert " hypervisor" in (tree.text("/proc/cpuinfo") or "")
    assert tree.text("/sys/devices/virtual/dmi/id/sys_vendor") == "Amazon EC2\n"
    assert tree.text("/sys/devices/virtual/dmi/id/product_name") == "p5.48xlarge\n"
    assert tree.commands[("systemd-detect-virt", "--vm")]["stdout"] == "amazon\n"
    assert not any(p.startswith("/sys/kernel/iommu_groups/") for p in tree.files)
    assert not any(p.startswith("/sys/devices/system/cpu/cpufreq/policy") for p in tree.files)


def test_sub_numa_clustering_gives_two_nodes_per_socket() -> None:
    built = build_once(ARCHETYPES["intel-snc-h100pcie"])
    tree = built.tree
    assert tree.text("/sys/devices/system/node/online") == "0-3\n"
    assert tree.text("/sys/devices/system/node/node1/cpulist") == "16-31,80-95\n"
    assert tree.text("/sys/devices/system/node/node0/distance") == "10 12 21 21\n"
    nodes = {built.numa_of(g.bdf) for g in built.gpu_states}
    assert len(nodes) > 2


def test_grace_hopper_has_a_memory_only_gpu_node() -> None:
    tree = build_once(ARCHETYPES["gh200-node"]).tree
    assert tree.text("/sys/devices/system/node/has_cpu") == "0\n"
    assert tree.text("/sys/devices/system/node/node1/cpulist") == "\n"
    assert "CPU part\t: 0xd4f" in (tree.text("/proc/cpuinfo") or "")
    assert tree.text("/sys/devices/system/cpu/cpufreq/policy0/scaling_driver") == "cppc_cpufreq\n"
    assert "Open Kernel Module for aarch64" in (tree.text("/proc/driver/nvidia/version") or "")


def test_mig_instances_are_recorded() -> None:
    tree = build_once(ARCHETYPES["dgx-a100-mig"]).tree
    assert tree.nvml_result("nvmlDeviceGetMigMode", 0) == [1, 1]
    assert tree.nvml_result("nvmlDeviceGetMigMode", 4) == [0, 0]
    handle = tree.nvml_result("nvmlDeviceGetMigDeviceHandleByIndex", 0, 1)
    assert handle["name"] == "NVIDIA A100-SXM4-80GB MIG 3g.40gb" and handle["gpuInstanceId"] == 2
    procs = tree.nvml_result("nvmlDeviceGetComputeRunningProcesses", 0)
    assert {p["gpuInstanceId"] for p in procs} == {1, 2}
    assert "MIG 3g.40gb" in tree.commands[("nvidia-smi", "-L")]["stdout"]


def test_nvswitch_hosts_show_their_switches_and_links() -> None:
    tree = build_once(ARCHETYPES["hgx-h100-jammy"]).tree
    classes = [data for path, data in tree.files.items() if path.endswith("/class") and data == b"0x068000\n"]
    assert len(classes) == 4
    assert all(tree.nvml_result("nvmlDeviceGetNvLinkState", g, link) == 1 for g in range(8) for link in range(18))
    assert tree.nvml_result("nvmlDeviceGetGpuFabricInfo", 0)["state"] == 3
    topo = tree.commands[("nvidia-smi", "topo", "-m")]["stdout"]
    assert "NV18" in topo and "NIC7: mlx5_7" in topo
    assert tree.text("/sys/class/infiniband/mlx5_0/ports/1/rate") is None  # a link: resolved by the reader, not stored twice
    assert tree.links["/sys/class/infiniband/mlx5_0"].startswith("../../devices/pci")


def test_geforce_reports_no_p2p() -> None:
    tree = build_once(ARCHETYPES["geforce-4x4090"]).tree
    # GPU_NOT_SUPPORTED: what `nvidia-smi topo -p2p r` prints as GNS on GeForce RTX 40/50 cards.
    assert tree.nvml_result("nvmlDeviceGetP2PStatus", 0, 1, 0) == 2
    assert tree.nvml["nvmlDeviceGetEccMode", (0,)]["error"] == "NOT_SUPPORTED"


def test_fabric_manager_down_leaves_hopper_nvlinks_untrained() -> None:
    """On an NVSwitch system of the Hopper generation the fabric manager trains the GPUs' NVLinks: with it down every
    link reads inactive, NVML's fabric state is not started, no pair peers over NVLink or PCIe (CUDA refuses work
    until the fabric is completed: cudaErrorSystemNotReady) and no compute process holds GPU memory."""
    tree = build_once(faults.fabricmanager_down(ARCHETYPES["hgx-h100-jammy"])).tree
    assert tree.nvml_result("nvmlDeviceGetNvLinkState", 0, 0) == 0
    assert tree.nvml_result("nvmlDeviceGetGpuFabricInfo", 0)["state"] == 1
    assert tree.nvml_result("nvmlDeviceGetP2PStatus", 0, 1, 2) == 5
    assert tree.nvml_result("nvmlDeviceGetP2PStatus", 0, 1, 0) == 5
    assert tree.nvml_result("nvmlDeviceGetP2PStatus", 0, 4, 0) == 5
    assert tree.nvml_result("nvmlDeviceGetComputeRunningProcesses", 0) == []
    assert "NV18" not in tree.commands[("nvidia-smi", "topo", "-m")]["stdout"]
    assert "<inactive>" in tree.commands[("nvidia-smi", "nvlink", "-s")]["stdout"]


def test_a100_nvlinks_train_without_the_fabric_manager() -> None:
    tree = build_once(faults.fabricmanager_down(ARCHETYPES["dgx-a100-mig"])).tree
    assert tree.nvml_result("nvmlDeviceGetNvLinkState", 4, 0) == 1
    assert tree.nvml_result("nvmlDeviceGetP2PStatus", 4, 5, 2) == 5


def test_bridged_pairs_show_nv12_within_a_pair_and_pcie_across() -> None:
    """H100 NVL in two bridged pairs: topo -m NV12 within a pair (three bridges, 12 links at 26.562 GB/s), the PCIe
    level across; each link's remote device is the partner GPU (NVML_NVLINK_DEVICE_TYPE_GPU), not an NVSwitch."""
    built = build_once(ARCHETYPES["h100nvl-bridged-pairs"])
    tree = built.tree
    rows = {
        line.split("\t")[0]: line.split("\t")[1:5]
        for line in tree.commands[("nvidia-smi", "topo", "-m")]["stdout"].splitlines()[1:5]
    }
    assert rows["GPU0"][:4] == [" X ", "NV12", "SYS", "SYS"] and rows["GPU2"][:4] == ["SYS", "SYS", " X ", "NV12"]
    assert tree.commands[("nvidia-smi", "nvlink", "-s")]["stdout"].count("26.562 GB/s") == 4 * 12
    assert tree.nvml_result("nvmlDeviceGetNvLinkRemoteDeviceType", 0, 0) == 0
    assert tree.nvml_result("nvmlDeviceGetNvLinkRemotePciInfo", 0, 0)["busId"] == built.gpu_states[1].busid
    assert tree.nvml_result("nvmlDeviceGetP2PStatus", 0, 1, 2) == 0  # NVLink P2P within the pair
    assert tree.nvml_result("nvmlDeviceGetP2PStatus", 0, 2, 2) == 5  # none across
    assert tree.nvml_result("nvmlDeviceGetP2PStatus", 0, 2, 0) == 3  # PCIe across the Intel sockets: TNS


def test_a_vgpu_guest_shows_what_nvidia_documents() -> None:
    """nvidia-smi -q: the vGPU's name, Virtualization Mode VGPU, N/A for the physical board's readings, the licensed
    product; NVML: virtualization mode 2, NOT_SUPPORTED for sensors, power and link; no P2P; nvidia-gridd."""
    tree = build_once(ARCHETYPES["kvm-vgpu-h100-guest"]).tree
    query = tree.commands[("nvidia-smi", "-q")]["stdout"]
    assert "Product Name                          : NVIDIA H100-80C" in query
    assert "Virtualization Mode               : VGPU" in query and "GPU Current Temp                  : N/A" in query
    assert "vGPU Software Licensed Product" in query and "License Status                    : Licensed (Expiry:" in query
    assert tree.nvml_result("nvmlDeviceGetVirtualizationMode", 0) == 2
    for fn in ("nvmlDeviceGetPowerUsage", "nvmlDeviceGetCurrPcieLinkWidth", "nvmlDeviceGetMigMode"):
        assert tree.nvml[fn, (0,)]["error"] == "NOT_SUPPORTED"
    assert tree.nvml_result("nvmlDeviceGetP2PStatus", 0, 1, 0) == 5
    assert tree.commands[("systemctl", "is-active", "nvidia-gridd")]["stdout"] == "active\n"
    unlicensed = build_once(faults.vgpu_unlicensed(ARCHETYPES["kvm-vgpu-h100-guest"])).tree
    assert "Unlicensed (Restricted)" in unlicensed.commands[("nvidia-smi", "-q")]["stdout"]
    assert unlicensed.nvml_result("nvmlDeviceGetGridLicensableFeatures_v4", 0)["gridLicensableFeatures"][0]["featureState"] == 0


def test_a_workstation_board_the_driver_refuses_p2p_on_reports_gns() -> None:
    tree = build_once(ARCHETYPES["ws-rtx6000ada"]).tree
    assert tree.nvml_result("nvmlDeviceGetName", 0) == "NVIDIA RTX 6000 Ada Generation"
    assert tree.nvml_result("nvmlDeviceGetP2PStatus", 0, 3, 0) == 2
    assert tree.nvml_result("nvmlDeviceGetEccMode", 0) == [0, 0]  # ECC supported, off by default


def test_a_q35_guest_gpu_on_the_root_bus_shows_no_link_in_sysfs() -> None:
    built = build_once(faults.on_root_bus(ARCHETYPES["proxmox-q35-h100pcie-vm"]))
    bdf = built.gpu_states[0].bdf
    assert bdf.startswith("0000:00:")
    assert built.tree.files[f"/sys/devices/pci0000:00/{bdf}/current_link_width"].strip() == b"0"
    assert built.tree.nvml_result("nvmlDeviceGetCurrPcieLinkWidth", 0) == 16


def test_bridges_only_on_nvlink_pcie_boards() -> None:
    from tests.hostgen.build import ImpossibleHost, check_possible
    from tests.hostgen.spec import GpuSpec

    for gpus in (GpuSpec("l40s", 2, nvlink_bridges=((0, 1),)), GpuSpec("h100-sxm", 8, nvswitches=4, nvlink_bridges=((0, 1),))):
        with pytest.raises(ImpossibleHost):
            check_possible(dataclass_replace(ARCHETYPES["h100nvl-bridged-pairs"], gpus=gpus))
    with pytest.raises(ImpossibleHost):
        check_possible(dataclass_replace(ARCHETYPES["ws-rtx6000ada"], gpus=GpuSpec("rtx4090", 2, vgpu="24Q")))
