"""The layers the audit runs in: bare metal, a VM guest (KVM, a cloud's Nitro or GCE), a container (Docker, a
Kubernetes pod under containerd), and their combinations. DMI, systemd-detect-virt, PID 1, cgroups, mounts, /dev."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.hostgen import podman
from tests.hostgen.tree import Tree

if TYPE_CHECKING:
    from tests.hostgen.build import Built

CLOUD_DMI = {
    "aws": {
        "sys_vendor": "Amazon EC2",
        "bios_vendor": "Amazon EC2",
        "bios_version": "1.0",
        "bios_date": "10/16/2017",
        "board_vendor": "Amazon EC2",
        "board_name": "",
        "chassis_vendor": "Amazon EC2",
        "chassis_type": "1",
        "chassis_asset_tag": "Amazon EC2",
    },
    "gcp": {
        "sys_vendor": "Google",
        "product_name": "Google Compute Engine",
        "bios_vendor": "Google",
        "bios_version": "Google",
        "bios_date": "08/14/2024",
        "board_vendor": "Google",
        "board_name": "Google Compute Engine",
        "chassis_vendor": "Google",
        "chassis_type": "1",
    },
    "azure": {
        # Hyper-V's UEFI firmware as an Azure VM shows it; Azure's fixed chassis asset tag marks its VMs.
        "sys_vendor": "Microsoft Corporation",
        "product_name": "Virtual Machine",
        "product_version": "7.0",
        "bios_vendor": "Microsoft Corporation",
        "bios_version": "Hyper-V UEFI Release v4.1",
        "bios_date": "04/06/2022",
        "board_vendor": "Microsoft Corporation",
        "board_name": "Virtual Machine",
        "chassis_vendor": "Microsoft Corporation",
        "chassis_type": "3",
        "chassis_asset_tag": "7783-7084-3265-9085-8269-3286-77",
    },
    "kvm": {
        "sys_vendor": "QEMU",
        "product_name": "Standard PC (i440FX + PIIX, 1996)",
        "product_version": "pc-i440fx-8.1",
        "bios_vendor": "SeaBIOS",
        "bios_version": "rel-1.16.2-0-gea1b7a073390-prebuilt.qemu.org",
        "bios_date": "04/01/2014",
        "board_vendor": "",
        "chassis_vendor": "QEMU",
        "chassis_type": "1",
    },
}

DETECT_VIRT = {"aws": "amazon", "gcp": "google", "kvm": "kvm", "azure": "microsoft"}

SYSTEMD_ENV = {
    "HOME": "/",
    "init": "/sbin/init",
    "NETWORK_SKIP_ENSLAVED": "",
    "TERM": "linux",
    "BOOT_IMAGE": "",
    "drop_caps": "",
    "PATH": "/sbin:/usr/sbin:/bin:/usr/bin",
    "PWD": "/",
    "rootmnt": "/root",
}

HOST_MOUNTS = (
    "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\n"
    "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
    "udev /dev devtmpfs rw,nosuid,relatime,size={half}k,nr_inodes=131988716,mode=755,inode64 0 0\n"
    "devpts /dev/pts devpts rw,nosuid,noexec,relatime,gid=5,mode=620,ptmxmode=000 0 0\n"
    "tmpfs /run tmpfs rw,nosuid,nodev,noexec,relatime,size={tenth}k,mode=755,inode64 0 0\n"
    "/dev/nvme0n1p2 / ext4 rw,relatime 0 0\n"
    "securityfs /sys/kernel/security securityfs rw,nosuid,nodev,noexec,relatime 0 0\n"
    "tmpfs /dev/shm tmpfs rw,nosuid,nodev,inode64 0 0\n"
    "tmpfs /run/lock tmpfs rw,nosuid,nodev,noexec,relatime,size=5120k,inode64 0 0\n"
    "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate,memory_recursiveprot 0 0\n"
    "efivarfs /sys/firmware/efi/efivars efivarfs rw,nosuid,nodev,noexec,relatime 0 0\n"
    "bpf /sys/fs/bpf bpf rw,nosuid,nodev,noexec,relatime,mode=700 0 0\n"
    "hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n"
    "mqueue /dev/mqueue mqueue rw,nosuid,nodev,noexec,relatime 0 0\n"
    "debugfs /sys/kernel/debug debugfs rw,nosuid,nodev,noexec,relatime 0 0\n"
    "tracefs /sys/kernel/tracing tracefs rw,nosuid,nodev,noexec,relatime 0 0\n"
    "fusectl /sys/fs/fuse/connections fusectl rw,nosuid,nodev,noexec,relatime 0 0\n"
    "configfs /sys/kernel/config configfs rw,nosuid,nodev,noexec,relatime 0 0\n"
    "/dev/nvme0n1p1 /boot/efi vfat rw,relatime,fmask=0077,dmask=0077,codepage=437,iocharset=iso8859-1,"
    "shortname=mixed,errors=remount-ro "
    "0 0\n"
)


def guest_dmi(cloud: str | None, instance_type: str) -> dict[str, str]:
    """The DMI strings of a VM guest: its cloud's (KVM's when none); only EC2 shows the instance type as the product
    name, Azure shows ``Virtual Machine`` and GCP ``Google Compute Engine`` whatever the size."""
    dmi = dict(CLOUD_DMI.get(cloud or "kvm", CLOUD_DMI["kvm"]))
    if instance_type and cloud == "aws":
        dmi["product_name"] = instance_type
    return dmi


def write_dmi(tree: Tree, values: dict[str, str]) -> None:
    base = "/sys/devices/virtual/dmi/id"
    tree.attrs(base, {k: v for k, v in values.items()})
    for private in ("product_serial", "product_uuid", "board_serial", "chassis_serial"):
        tree.deny(f"{base}/{private}")
    tree.link("/sys/class/dmi/id", "../../devices/virtual/dmi/id")


def container_mounts(built: Built) -> str:
    spec = built.spec.platform
    shm = "shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size={}k,inode64 0 0\n"
    if spec.container == "k8s":
        root = (
            "overlay / overlay rw,relatime,lowerdir=/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/4312/fs:"
            "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/4311/fs,upperdir=/var/lib/containerd/"
            "io.containerd.snapshotter.v1.overlayfs/snapshots/4519/fs,workdir=/var/lib/containerd/io.containerd.snapshotter.v1."
            "overlayfs/snapshots/4519/work,uuid=on 0 0\n"
        )
    elif spec.container == "podman":
        root = podman.root_mount(built)
    else:
        root = (
            "overlay / overlay rw,relatime,"
            "lowerdir=/var/lib/docker/overlay2/l/3JQZ4N6PXBCMCF3FYRF3VGQW3K:/var/lib/docker/overlay2/l/"
            "WS3WHFPSKMDR2XKBEQGBZVNMJ5,"
            "upperdir=/var/lib/docker/overlay2/8f0f4e9d6a51b7bd4a2e1f1d8d0ed0c4a9b0a51c2e6d2fa5f9d16a3b2c7d8e9f/diff,"
            "workdir=/var/lib/docker/overlay2/8f0f4e9d6a51b7bd4a2e1f1d8d0ed0c4a9b0a51c2e6d2fa5f9d16a3b2c7d8e9f/work,"
            "nouserxattr 0 0\n"
        )
    lines = [
        root,
        "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n",
        "tmpfs /dev tmpfs rw,nosuid,size=65536k,mode=755,inode64 0 0\n",
        "devpts /dev/pts devpts rw,nosuid,noexec,relatime,gid=5,mode=620,ptmxmode=666 0 0\n",
        "sysfs /sys sysfs ro,nosuid,nodev,noexec,relatime 0 0\n",
        "cgroup /sys/fs/cgroup cgroup2 ro,nosuid,nodev,noexec,relatime,nsdelegate,memory_recursiveprot 0 0\n",
        "mqueue /dev/mqueue mqueue rw,nosuid,nodev,noexec,relatime 0 0\n",
    ]
    if spec.shm_bytes is None:
        lines.append("tmpfs /dev/shm tmpfs rw,nosuid,nodev,inode64 0 0\n")
    else:
        lines.append(shm.format(spec.shm_bytes // 1024))
    if spec.container == "k8s":
        lines += [
            "/dev/nvme0n1p2 /etc/hosts ext4 rw,relatime 0 0\n",
            "/dev/nvme0n1p2 /dev/termination-log ext4 rw,relatime 0 0\n",
            "/dev/nvme0n1p2 /etc/hostname ext4 rw,relatime 0 0\n",
            "/dev/nvme0n1p2 /etc/resolv.conf ext4 rw,relatime 0 0\n",
            "tmpfs /run/secrets/kubernetes.io/serviceaccount tmpfs ro,relatime,size=2097152000k,inode64 0 0\n",
            "/dev/nvme1n1 /models xfs ro,relatime,attr2,inode64,logbufs=8,logbsize=32k,noquota 0 0\n",
        ]
    else:
        lines += [
            "/dev/nvme0n1p2 /etc/resolv.conf ext4 rw,relatime 0 0\n",
            "/dev/nvme0n1p2 /etc/hostname ext4 rw,relatime 0 0\n",
            "/dev/nvme0n1p2 /etc/hosts ext4 rw,relatime 0 0\n",
            "/dev/nvme1n1 /root/.cache/huggingface xfs rw,relatime,attr2,inode64,logbufs=8,logbsize=32k,noquota 0 0\n",
        ]
    version = built.spec.driver.userspace or built.spec.driver.version
    libdir = driver_libdir(built)
    for lib in (
        "libnvidia-ml.so",
        "libcuda.so",
        "libcudadebugger.so",
        "libnvidia-opencl.so",
        "libnvidia-ptxjitcompiler.so",
        "libnvidia-nvvm.so",
    ):
        lines.append(f"/dev/nvme0n1p2 {libdir}/{lib}.{version} ext4 ro,nosuid,nodev,relatime 0 0\n")
    for binary in ("nvidia-smi", "nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-control", "nvidia-cuda-mps-server"):
        lines.append(f"/dev/nvme0n1p2 /usr/bin/{binary} ext4 ro,nosuid,nodev,relatime 0 0\n")
    lines.append(
        f"tmpfs /run/nvidia-persistenced/socket tmpfs rw,nosuid,nodev,noexec,"
        f"size={built.spec.os.memory_kib // 10}k,mode=755,inode64 "
        "0 0\n"
    )
    for minor in built.visible_gpu_minors:
        lines.append(
            f"udev /dev/nvidia{minor} devtmpfs ro,nosuid,noexec,relatime,size={built.spec.os.memory_kib // 2}k,"
            "nr_inodes=131988716,mode=755,inode64 "
            "0 0\n"
        )
    for node in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"):
        lines.append(
            f"udev /dev/{node} devtmpfs ro,nosuid,noexec,relatime,size={built.spec.os.memory_kib // 2}k,"
            "nr_inodes=131988716,mode=755,inode64 "
            "0 0\n"
        )
    lines += [
        "proc /proc/bus proc ro,nosuid,nodev,noexec,relatime 0 0\n",
        "proc /proc/fs proc ro,nosuid,nodev,noexec,relatime 0 0\n",
        "proc /proc/irq proc ro,nosuid,nodev,noexec,relatime 0 0\n",
        "proc /proc/sys proc ro,nosuid,nodev,noexec,relatime 0 0\n",
        "proc /proc/sysrq-trigger proc ro,nosuid,nodev,noexec,relatime 0 0\n",
        "tmpfs /proc/driver/nvidia tmpfs rw,nosuid,nodev,noexec,relatime,mode=555,inode64 0 0\n",
        "tmpfs /proc/acpi tmpfs ro,relatime,inode64 0 0\n",
        "tmpfs /proc/scsi tmpfs ro,relatime,inode64 0 0\n",
        "tmpfs /sys/firmware tmpfs ro,relatime,inode64 0 0\n",
    ]
    return "".join(lines)


def driver_libdir(built: Built) -> str:
    """Where the driver's libraries are in the process's filesystem: the distribution's multiarch folder, or the host
    path a CDI container gets them at."""
    return podman.libdir(built) or ("/usr/lib/aarch64-linux-gnu" if built.arch == "aarch64" else "/usr/lib/x86_64-linux-gnu")


def mountinfo(mounts: str) -> str:
    """/proc/PID/mountinfo for the same mounts (ids and parents numbered in order)."""
    out = []
    for n, line in enumerate(mounts.splitlines()):
        source, point, fstype, options = line.split()[:4]
        mount_id, parent = 1200 + n, 1199 + n if n else 1150
        out.append(
            f"{mount_id} {parent} 0:{40 + n} / {point} {options.split(',size')[0]} master:{n + 1} - {fstype} {source} {options}"
        )
    return "\n".join(out) + "\n"


def host_mounts(built: Built) -> str:
    return HOST_MOUNTS.format(half=built.spec.os.memory_kib // 2, tenth=built.spec.os.memory_kib // 10)


def k8s_cgroup(built: Built) -> str:
    spec = built.spec.platform
    qos = "burstable" if spec.cpu_quota else "besteffort"
    return (
        f"/kubepods.slice/kubepods-{qos}.slice/kubepods-{qos}-pod3f9c2d4e_8a1b_4c7d_9e2f_6a5b4c3d2e1f.slice/"
        "cri-containerd-9b1e7c3f5a2d4e6f8a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f.scope"
    )


def docker_cgroup() -> str:
    return "/system.slice/docker-5e8a2b9c7d1f3e4a6b8c0d2e4f6a8b0c1d3e5f7a9b1c3d5e7f9a0b2c4d6e8f0a1b.scope"


def write_cgroup(built: Built) -> None:
    """/sys/fs/cgroup as the audit sees it: the host's root, or the container's own (cgroup namespace)."""
    tree, spec = built.tree, built.spec.platform
    base = "/sys/fs/cgroup"
    controllers = "cpuset cpu io memory hugetlb pids rdma misc"
    if podman.rootless(built):  # systemd delegates memory and pids to a user's cgroups unless told otherwise
        tree.attrs(base, {"cgroup.controllers": "memory pids", "cgroup.subtree_control": ""})
        tree.attrs(base, {"memory.max": "max", "memory.current": str(41 * 2**30), "pids.max": "max"})
        return
    tree.attrs(base, {"cgroup.controllers": controllers, "cgroup.subtree_control": "" if spec.container else controllers})
    if spec.container:
        quota = "max 100000" if spec.cpu_quota is None else f"{int(spec.cpu_quota * 100000)} 100000"
        throttled, periods = spec.throttled
        tree.attrs(
            base,
            {
                "cpu.max": quota,
                "cpu.weight": 100 if spec.cpu_quota is None else max(1, int(spec.cpu_quota * 39)),
                "cpu.stat": (
                    f"usage_usec 91823412345\nuser_usec 81234123412\nsystem_usec 10589288933\nnr_periods {periods}\n"
                    f"nr_throttled {throttled}\nthrottled_usec {throttled * 38211}\nnr_bursts 0\nburst_usec 0\n"
                ),
                "cpuset.cpus.effective": built.all_cpus,
                "cpuset.mems.effective": f"0-{built.spec.cpu.nodes - 1}" if built.spec.cpu.nodes > 1 else "0",
                "memory.max": "max" if spec.container == "docker" else str(256 * 2**30),
                "memory.current": str(41 * 2**30),
                "pids.max": "max" if spec.container == "docker" else "4194304",
            },
        )
    else:
        tree.attrs(
            base,
            {
                "cpu.stat": "usage_usec 9182341234512\nuser_usec 8123412341234\nsystem_usec 1058928893312\n",
                "cpuset.cpus.effective": built.all_cpus,
            },
        )
