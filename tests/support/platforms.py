"""Turn a copy of a snapshot into another platform: a VM guest, a Docker container, a Kubernetes pod.

Only the platform's own signals change (the CPU's hypervisor flag, DMI strings, container markers, mounts, PID 1's
environment and cgroup); the rest of the host stays as recorded, so a test sees one rule answer to one change.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.mutate import set_file

DOCKER_MOUNTS = (
    "overlay / overlay rw,relatime,lowerdir=/var/lib/docker/overlay2/l/A,upperdir=/var/lib/docker/overlay2/x/diff 0 0\n"
    "tmpfs /dev tmpfs rw,nosuid,size=65536k,mode=755 0 0\n"
    "shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k 0 0\n"
)


def _cpuinfo(root: Path) -> str:
    return (root / "files" / "proc" / "cpuinfo").read_text()


def as_vm(root: Path, vendor: str = "QEMU", product: str = "Standard PC (Q35 + ICH9, 2009)") -> None:
    """A KVM guest (or a cloud VM, by its DMI strings): the hypervisor flag and the VM's SMBIOS."""
    text = re.sub(r"^(flags\s*:.*)$", r"\1 hypervisor", _cpuinfo(root), flags=re.MULTILINE)
    set_file(root, "/proc/cpuinfo", text)
    set_file(root, "/sys/class/dmi/id/sys_vendor", vendor + "\n")
    set_file(root, "/sys/class/dmi/id/product_name", product + "\n")
    set_file(root, "/sys/class/dmi/id/bios_vendor", "EFI Development Kit II / OVMF\n")
    set_file(root, "/sys/class/dmi/id/board_vendor", vendor + "\n")


def as_docker(root: Path, shm: str = DOCKER_MOUNTS) -> None:
    """A Docker container on this machine: /.dockerenv, an overlay root, a tmpfs /dev and Docker's 64 MiB /dev/shm."""
    set_file(root, "/.dockerenv", "")
    set_file(root, "/proc/mounts", shm)
    set_file(root, "/proc/1/cgroup", "0::/\n")


def as_kubernetes(root: Path, cgroup_quota: str | None = None) -> None:
    """A Kubernetes pod (containerd): no /.dockerenv, no systemd; KUBERNETES_SERVICE_HOST and the kubelet's volumes."""
    set_file(root, "/proc/1/environ", b"PATH=/usr/bin\x00KUBERNETES_SERVICE_HOST=10.96.0.1\x00HOSTNAME=vllm-0\x00")
    set_file(root, "/proc/1/cgroup", "0::/\n")
    set_file(root, "/proc/mounts", DOCKER_MOUNTS.replace("/var/lib/docker/overlay2", "/var/lib/containerd/snapshots"))
    set_file(
        root,
        "/proc/self/mountinfo",
        "1 0 0:310 / / rw - overlay overlay rw\n"
        "2 1 259:2 /var/lib/kubelet/pods/5f1c/etc-hosts /etc/hosts rw - ext4 /dev/nvme0n1p2 rw\n",
    )
    if cgroup_quota is not None:
        set_file(root, "/sys/fs/cgroup/cpu.max", cgroup_quota)
