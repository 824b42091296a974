"""Platform layers: bare metal, VM guests, containers and their combinations, told from the files each one has."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from rigaudit.agents.facts.platform import Platform, detect_platform, fix_where
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.snapshot import SnapshotHost
from tests.support.fakesnap import write_snapshot

FIXTURES = Path(__file__).parent / "fixtures"
FLAGS = "fpu vme de pse tsc msr pae mce cx8 apic sep"
HOST_MOUNTS = "/dev/nvme0n1p2 / ext4 rw,relatime 0 0\ndevtmpfs /dev devtmpfs rw,nosuid,size=1000k 0 0\n"
DOCKER_MOUNTS = (
    "overlay / overlay rw,relatime,lowerdir=/var/lib/docker/overlay2/l/ABC,upperdir=/var/lib/docker/overlay2/x/diff 0 0\n"
    "tmpfs /dev tmpfs rw,nosuid,size=65536k,mode=755 0 0\nshm /dev/shm tmpfs rw,size=65536k 0 0\n"
)
K8S_MOUNTINFO = (
    "1234 1200 0:310 / / rw,relatime master:1 - overlay overlay rw,lowerdir=/var/lib/containerd/io.containerd.snapshotter\n"
    "1250 1234 259:2 /var/lib/kubelet/pods/5f1c/etc-hosts /etc/hosts rw,relatime - ext4 /dev/nvme0n1p2 rw\n"
)


def _cpuinfo(hypervisor: bool) -> str:
    flags = FLAGS + (" hypervisor" if hypervisor else "")
    return f"processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nflags\t\t: {flags}\n\n"


def _snapshot(
    root: Path,
    files: dict[str, str | bytes],
    *,
    commands: dict[tuple[str, ...], str] | None = None,
    exists: tuple[str, ...] = (),
) -> Path:
    return write_snapshot(root, files, commands=commands, exists=exists)


def _detect(root: Path) -> Platform:
    return anyio.run(lambda: detect_platform(Probe(SnapshotHost(root))))


def _dmi(vendor: str, product: str, **extra: str) -> dict[str, str | bytes]:
    out: dict[str, str | bytes] = {
        "/sys/class/dmi/id/sys_vendor": vendor + "\n",
        "/sys/class/dmi/id/product_name": product + "\n",
    }
    out.update({f"/sys/class/dmi/id/{k}": v + "\n" for k, v in extra.items()})
    return out


def test_bare_metal_server(tmp_path: Path) -> None:
    p = _detect(_snapshot(tmp_path, {"/proc/cpuinfo": _cpuinfo(False), **_dmi("Supermicro", "AS -4125GS-TNRT")}))
    assert [layer.kind for layer in p.layers] == ["bare_metal"]
    assert (p.kind, p.label, p.in_container, p.in_vm) == ("bare_metal", "bare metal", False, False)
    assert "Supermicro" in p.how


@pytest.mark.parametrize(
    ("dmi", "name", "cloud"),
    [
        (_dmi("QEMU", "Standard PC (Q35 + ICH9, 2009)", bios_vendor="EFI Development Kit II / OVMF"), "kvm", None),
        (_dmi("Amazon EC2", "p5.48xlarge", bios_vendor="Amazon EC2"), "amazon", "aws"),
        (_dmi("Google", "Google Compute Engine"), "google", "gcp"),
        (
            _dmi("Microsoft Corporation", "Virtual Machine", chassis_asset_tag="7783-7084-3265-9085-8269-3286-77"),
            "microsoft",
            "azure",
        ),
        (_dmi("QEMU", "Standard PC (i440FX + PIIX, 1996)", chassis_asset_tag="OracleCloud.com"), "kvm", "oci"),
        (_dmi("VMware, Inc.", "VMware20,1"), "vmware", None),
        (_dmi("Xen", "HVM domU"), "xen", None),
    ],
)
def test_vm_guests_name_their_hypervisor_and_cloud(tmp_path: Path, dmi: dict[str, str | bytes], name: str, cloud: str) -> None:
    p = _detect(_snapshot(tmp_path, {"/proc/cpuinfo": _cpuinfo(True), **dmi}))
    assert [layer.kind for layer in p.layers] == ["vm"]
    assert (p.kind, p.vm.name if p.vm else None, p.cloud) == ("vm", name, cloud)


def test_cloud_bare_metal_instance_is_bare_metal(tmp_path: Path) -> None:
    p = _detect(_snapshot(tmp_path, {"/proc/cpuinfo": _cpuinfo(False), **_dmi("Amazon EC2", "c6i.metal")}))
    assert p.kind == "bare_metal" and p.cloud == "aws" and p.label == "bare metal (aws)"


def test_hidden_hypervisor_flag_still_shows_in_dmi(tmp_path: Path) -> None:
    p = _detect(_snapshot(tmp_path, {"/proc/cpuinfo": _cpuinfo(False), **_dmi("QEMU", "Standard PC (Q35 + ICH9, 2009)")}))
    assert p.kind == "vm" and "hides the hypervisor flag" in p.how


def test_firecracker_microvm_without_dmi(tmp_path: Path) -> None:
    cmdline = "console=ttyS0 reboot=k panic=1 pci=off virtio_mmio.device=4K@0xd0000000:5\n"
    p = _detect(_snapshot(tmp_path, {"/proc/cpuinfo": _cpuinfo(True), "/proc/cmdline": cmdline}))
    assert p.kind == "vm" and p.vm is not None and p.vm.name == "microvm"


def test_docker_on_bare_metal(tmp_path: Path) -> None:
    files = {"/proc/cpuinfo": _cpuinfo(False), "/proc/mounts": DOCKER_MOUNTS, "/proc/1/cgroup": "0::/\n"}
    p = _detect(_snapshot(tmp_path, files, exists=("/.dockerenv",)))
    assert [layer.kind for layer in p.layers] == ["bare_metal", "container"]
    assert (p.kind, p.container_runtime, p.vm_below, p.label) == ("docker", "docker", None, "docker container")


def test_docker_in_a_cloud_vm_is_two_layers(tmp_path: Path) -> None:
    files = {"/proc/cpuinfo": _cpuinfo(True), "/proc/mounts": DOCKER_MOUNTS, **_dmi("Amazon EC2", "g6e.48xlarge")}
    p = _detect(_snapshot(tmp_path, files, exists=("/.dockerenv",)))
    assert [layer.kind for layer in p.layers] == ["vm", "container"]
    assert (p.kind, p.vm_below, p.cloud) == ("docker", "amazon", "aws")
    assert p.label == "docker container in VM (amazon, aws)"


def test_kubernetes_pod_without_dockerenv_or_systemd(tmp_path: Path) -> None:
    files = {
        "/proc/cpuinfo": _cpuinfo(False),
        "/proc/1/environ": b"PATH=/usr/bin\x00KUBERNETES_SERVICE_HOST=10.96.0.1\x00HOME=/root\x00",
        "/proc/1/cgroup": "0::/\n",
        "/proc/self/mountinfo": K8S_MOUNTINFO,
        "/proc/mounts": "overlay / overlay rw 0 0\ntmpfs /dev tmpfs rw 0 0\n",
    }
    p = _detect(_snapshot(tmp_path, files, exists=("/var/run/secrets/kubernetes.io",)))
    assert p.container_runtime == "kubernetes" and p.kind == "container" and p.in_container
    assert "KUBERNETES_SERVICE_HOST" in p.how


def test_kubernetes_from_a_cgroup_v1_path(tmp_path: Path) -> None:
    cgroup = "12:cpu,cpuacct:/kubepods/burstable/pod5f1c/cri-containerd-0123456789abcdef\n"
    p = _detect(_snapshot(tmp_path, {"/proc/cpuinfo": _cpuinfo(True), "/proc/1/cgroup": cgroup}))
    assert p.container_runtime == "kubernetes" and p.container is not None and p.container.engine == "containerd"
    assert p.in_vm


def test_podman_and_lxc(tmp_path: Path) -> None:
    podman = _detect(
        _snapshot(tmp_path / "podman", {"/proc/cpuinfo": _cpuinfo(False), "/run/.containerenv": 'engine="podman-4.9.3"\n'})
    )
    assert (podman.kind, podman.container_runtime) == ("docker", "podman")
    lxc = _detect(_snapshot(tmp_path / "lxc", {"/proc/cpuinfo": _cpuinfo(False), "/proc/1/environ": b"container=lxc\x00"}))
    assert (lxc.kind, lxc.container_runtime) == ("lxc", "lxc")
    boot_id = _detect(_snapshot(tmp_path / "lxc2", {"/proc/cpuinfo": _cpuinfo(False)}, exists=("/dev/.lxc-boot-id",)))
    assert boot_id.kind == "lxc"


def test_systemd_detect_virt_is_heard_when_installed(tmp_path: Path) -> None:
    commands = {("systemd-detect-virt", "--container"): "none\n", ("systemd-detect-virt", "--vm"): "kvm\n"}
    p = _detect(_snapshot(tmp_path, {"/proc/cpuinfo": _cpuinfo(False)}, commands=commands))
    assert p.kind == "vm" and p.vm is not None and p.vm.name == "kvm"


def test_a_vm_image_built_with_docker_is_not_a_container() -> None:
    p = _detect(FIXTURES / "h200x2-vm")
    assert p.kind == "vm" and not p.in_container and p.vm is not None and p.vm.name == "firecracker"
    assert "not a container" in p.notes[0]


def test_seed_is_a_bare_metal_proxmox_host_of_lxc_containers() -> None:
    p = _detect(FIXTURES / "seed-lxc-8x-rtxpro6000")
    assert p.kind == "bare_metal" and p.lxc_configs == ("/etc/pve/lxc/101.conf",)


def test_nothing_readable_is_unknown(tmp_path: Path) -> None:
    p = _detect(_snapshot(tmp_path, {}))
    assert (p.kind, p.layers, p.label) == ("unknown", (), "unknown")


def test_fix_layers(tmp_path: Path) -> None:
    metal = _detect(_snapshot(tmp_path / "m", {"/proc/cpuinfo": _cpuinfo(False)}))
    vm = _detect(_snapshot(tmp_path / "v", {"/proc/cpuinfo": _cpuinfo(True)}))
    docker_metal = _detect(_snapshot(tmp_path / "d", {"/proc/cpuinfo": _cpuinfo(False)}, exists=("/.dockerenv",)))
    docker_vm = _detect(_snapshot(tmp_path / "dv", {"/proc/cpuinfo": _cpuinfo(True)}, exists=("/.dockerenv",)))
    table = {
        "kernel": ("host", "host", "container_host", "container_host"),
        "firmware": ("host", "hypervisor", "container_host", "hypervisor"),
        "hardware": ("host", "hypervisor", "container_host", "hypervisor"),
        "gpu_driver": ("host", "host", "container_host", "container_host"),
        "vm_definition": ("host", "hypervisor", "host", "hypervisor"),
        "container_config": ("container_config",) * 4,
        "workload": ("host", "host", "container", "container"),
    }
    for target, expected in table.items():
        got = tuple(fix_where(p, target) for p in (metal, vm, docker_metal, docker_vm))  # type: ignore[arg-type]
        assert got == expected, target
    assert fix_where(metal, "workload", workload_in_container=True) == "container"
