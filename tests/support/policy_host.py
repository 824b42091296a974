"""A model GPU host for judging policy lines: links, device nodes and user-writable directories as on a real one.

The corpus and the property tests judge on it, so their verdicts never depend on the machine that runs them.
It has merged /usr, udev's disk links, sysfs device links, alternatives, and what an attacker could plant:
links into secrets, a link through /proc/1/root, a link loop, logs in a directory a user owns.
"""

from __future__ import annotations

from rigaudit.tools.policy import ModelFileSystem
from rigaudit.tools.policy.fsview import KERNEL_LINKS, Kind

_GPU = "/sys/devices/pci0000:00/0000:00:01.0/0000:03:00.0"

LINKS: dict[str, str] = {
    **KERNEL_LINKS,
    # merged /usr, distribution links
    "/bin": "usr/bin",
    "/sbin": "usr/sbin",
    "/lib": "usr/lib",
    "/lib64": "usr/lib64",
    "/etc/mtab": "../proc/self/mounts",
    "/etc/os-release": "../usr/lib/os-release",
    "/etc/localtime": "/usr/share/zoneinfo/Etc/UTC",
    "/etc/resolv.conf": "../run/systemd/resolve/stub-resolv.conf",
    "/etc/alternatives/cuda": "/usr/local/cuda-12.8",
    "/usr/local/cuda": "/etc/alternatives/cuda",
    "/var/run": "../run",
    # sysfs and udev
    "/sys/bus/pci/devices/0000:03:00.0": "../../../devices/pci0000:00/0000:00:01.0/0000:03:00.0",
    "/sys/class/drm/card0": "../../devices/pci0000:00/0000:00:01.0/0000:03:00.0/drm/card0",
    f"{_GPU}/driver": "../../../../bus/pci/drivers/nvidia",
    "/sys/class/net/eth0": "../../devices/pci0000:00/0000:00:1c.0/0000:05:00.0/net/eth0",
    "/dev/disk/by-id/nvme-SAMSUNG_1": "../../nvme0n1",
    "/dev/disk/by-uuid/1234": "../../sda1",
    "/dev/mapper/pve-root": "../dm-1",
    "/dev/pve/root": "../dm-1",
    "/dev/block/8:0": "../sda",
    "/dev/char/195:0": "../nvidia0",
    "/dev/log": "/run/systemd/journal/dev-log",
    # planted
    "/var/log/gpu-report": "/root/.ssh/id_rsa",
    "/etc/modprobe.d/zz-evil.conf": "/etc/shadow",
    "/etc/nvidia/token-link": "/etc/nvidia/ClientConfigToken/client.tok",
    "/var/log/app/current": "../../../etc/shadow",
    "/var/log/container-root": "/proc/1/root",
    "/var/log/loop": "/var/log/loop",
    "/opt/app/log": "/proc/4242/cwd/log",
    "/usr/local/bin/helper": "/home/alice/bin/helper",
    "/etc/sysctl.d/99-disk.conf": "/dev/sda",
}

KINDS: dict[str, Kind] = {
    **{f"/dev/{d}": "block" for d in ("sda", "sda1", "sdb", "nvme0n1", "nvme0n1p1", "dm-0", "dm-1", "md0", "loop0", "vda")},
    **{f"/dev/{d}": "char" for d in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "tty", "tty1", "console", "ttyS0")},
    **{f"/dev/{d}": "char" for d in ("null", "zero", "urandom", "random", "full", "kmsg", "rtc0", "hpet", "sg0", "nvme0")},
    **{f"/etc/{f}": "file" for f in ("default/grub", "kernel/cmdline", "hostname", "fstab", "passwd", "modprobe.d/nvidia.conf")},
    **{f"/var/log/{f}": "file" for f in ("syslog", "kern.log", "kern.log.1", "fabricmanager.log", "dmesg")},
    "/run/app.sock": "socket",
    "/run/systemd/journal/dev-log": "socket",
    "/var/log/app/pipe": "fifo",
    "/etc/initctl": "fifo",
}

WRITERS: dict[str, str] = {
    "/var/log/app": "owned by uid 1000",
    "/home/alice": "owned by uid 1000",
    "/home/alice/bin": "owned by uid 1000",
    "/srv/shared": "writable by everyone",
    "/opt/app": "owned by uid 1001",
    "/var/log/ml": "writable by group 1002",
}

MODEL_HOST = ModelFileSystem(links=LINKS, kinds=KINDS, writers=WRITERS)
