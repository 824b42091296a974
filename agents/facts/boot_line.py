"""How this host's kernel command line is changed: by distribution and boot loader.

Proxmox keeps the line in ``/etc/default/grub`` or ``/etc/kernel/cmdline`` (systemd-boot on ZFS/UEFI) and copies it
with ``proxmox-boot-tool refresh``; Debian and Ubuntu regenerate GRUB with ``update-grub``; RHEL, Rocky, Alma and
Fedora change every installed kernel's entry with ``grubby``; SUSE regenerates with ``grub2-mkconfig``. Image-based
systems keep it in their own configuration: Talos in the machine config (``machine.install.extraKernelArgs``, applied
by ``talosctl upgrade``), Bottlerocket in ``settings.boot.kernel-parameters``, Fedora CoreOS and RHCOS by
``rpm-ostree kargs``, as every rpm-ostree or bootc host (RHEL image mode: ``/run/ostree-booted``, ``ostree=`` on the
line), Flatcar in ``/oem/grub.cfg``. A VM guest's line is its own; a container has none (its host's).
"""

from __future__ import annotations

import re
from typing import Literal

from rigaudit.agents.facts.os_image import OSTREE_BOOTED, image_kind
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, file_ref
from rigaudit.tools.schema.finding import Action, CommandAction

Family = Literal["proxmox", "debian", "rhel", "suse", "talos", "bottlerocket", "coreos", "flatcar", "ostree", "unknown"]
IMAGES: dict[str, str] = {
    "talos": "in the machine config's machine.install.extraKernelArgs (talosctl patch machineconfig), then talosctl "
    "upgrade --nodes <node> (the installer writes the boot entry; Talos' boot line is not edited by hand)",
    "bottlerocket": "in settings.boot.kernel-parameters (apiclient set, from the admin or control container)",
    "coreos": "with rpm-ostree kargs (--append=PARAM to add, --delete=PARAM to remove)",
    "flatcar": "in the linux_append line of /oem/grub.cfg (or the Butane config's kernel_arguments)",
    "ostree": "with rpm-ostree kargs (--append=PARAM to add, --delete=PARAM to remove; the deployment's line "
    "is not the boot loader's; a bootc image: a file in /usr/lib/bootc/kargs.d of the image)",
}
"""How an image-based OS changes its kernel command line."""
REBOOT = {"talos": ("talosctl", "reboot", "--nodes", "<node>"), "bottlerocket": ("apiclient", "reboot")}
_RHEL = ("rhel", "centos", "rocky", "almalinux", "fedora", "ol", "amzn")


class BootLine(Record):
    family: Family
    distro: str | None
    """PRETTY_NAME of /etc/os-release."""
    cmdline: str | None
    systemd_boot: bool | None
    """Proxmox on systemd-boot (``initrd=`` on the line, no ``BOOT_IMAGE=``)."""
    refs: tuple[str, ...]

    def add(self, param: str) -> tuple[Action, ...]:
        """Steps that put ``param`` on the kernel command line, then reboot."""
        return self._change(param, add=True)

    def remove(self, param: str) -> tuple[Action, ...]:
        return self._change(param, add=False)

    def words(self, what: str) -> str:
        """One sentence: how to change the line here (``what``: 'add iommu=pt', 'remove pcie_aspm=force')."""
        how = {
            "proxmox": "in /etc/default/grub (GRUB) or /etc/kernel/cmdline (systemd-boot), then proxmox-boot-tool refresh",
            "debian": "in GRUB_CMDLINE_LINUX_DEFAULT of /etc/default/grub, then update-grub",
            "rhel": "with grubby --update-kernel=ALL (--args to add, --remove-args to remove)",
            "suse": "in GRUB_CMDLINE_LINUX_DEFAULT of /etc/default/grub, then grub2-mkconfig -o /boot/grub2/grub.cfg",
            "unknown": "in the boot loader's configuration (GRUB: /etc/default/grub, then regenerate its config)",
            **IMAGES,
        }[self.family]
        return f"{what} on the kernel command line {how}, then reboot"

    def _change(self, param: str, *, add: bool) -> tuple[Action, ...]:
        verb = "append" if add else "remove"
        reboot = CommandAction(
            description=f"reboot, then check that {param} is {'in' if add else 'gone from'} /proc/cmdline",
            argv=REBOOT.get(self.family, ("systemctl", "reboot")),
        )
        if self.family in IMAGES:
            return (CommandAction(description=self.words(f"{verb} {param}").removesuffix(", then reboot")), reboot)
        if self.family == "rhel":
            flag = "--args" if add else "--remove-args"
            return (
                CommandAction(
                    description=f"{verb} {param} for every kernel", argv=("grubby", "--update-kernel=ALL", f"{flag}={param}")
                ),
                reboot,
            )
        grub_edit = (
            rf's/^GRUB_CMDLINE_LINUX_DEFAULT="\(.*\)"/GRUB_CMDLINE_LINUX_DEFAULT="\1 {param}"/'
            if add
            else rf"/^GRUB_CMDLINE_LINUX_DEFAULT=/s/ *{re.escape(param)}//"
        )
        grub = CommandAction(
            description=f"GRUB: {verb} {param} in GRUB_CMDLINE_LINUX_DEFAULT of /etc/default/grub",
            argv=("sed", "-i", grub_edit, "/etc/default/grub"),
        )
        if self.family == "proxmox":
            sdboot = CommandAction(
                description=f"systemd-boot: /etc/kernel/cmdline is one line; {verb} {param}",
                argv=("sed", "-i", f"1s/$/ {param}/" if add else f"1s/ *{re.escape(param)}//", "/etc/kernel/cmdline"),
            )
            refresh = CommandAction(
                description="copy the new line to every ESP / regenerate GRUB", argv=("proxmox-boot-tool", "refresh")
            )
            which = (sdboot,) if self.systemd_boot else (grub,) if self.systemd_boot is False else (grub, sdboot)
            status = CommandAction(description="see which boot loader this host uses", argv=("proxmox-boot-tool", "status"))
            return (status, *which, refresh, reboot)
        if self.family == "suse":
            mkconfig = CommandAction(
                description="regenerate GRUB's config", argv=("grub2-mkconfig", "-o", "/boot/grub2/grub.cfg")
            )
            return (grub, mkconfig, reboot)
        if self.family == "debian":
            return (grub, CommandAction(description="regenerate GRUB's config", argv=("update-grub",)), reboot)
        return (CommandAction(description=self.words(f"{verb} {param}")), reboot)


def _os_release(text: str | None) -> dict[str, str]:
    out = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip().strip('"')
    return out


async def collect_boot_line(probe: Probe) -> BootLine:
    os_release, cmdline, release = await probe.gather(
        lambda: probe.text("/etc/os-release"),
        lambda: probe.text("/proc/cmdline"),
        lambda: probe.text("/proc/sys/kernel/osrelease"),
    )
    pve, ostree = await probe.gather(lambda: probe.exists("/etc/pve"), lambda: probe.exists(OSTREE_BOOTED))
    fields = _os_release(os_release)
    ids = {fields.get("ID", ""), *fields.get("ID_LIKE", "").split()}
    family: Family
    image = image_kind(fields, release, ostree=ostree or any(w.startswith("ostree=") for w in (cmdline or "").split()))
    if image is not None:
        family = image
    elif pve or (release or "").strip().endswith("-pve"):
        family = "proxmox"
    elif ids & {"debian", "ubuntu"}:
        family = "debian"
    elif ids & set(_RHEL):
        family = "rhel"
    elif any(i.startswith(("suse", "opensuse", "sles")) for i in ids):
        family = "suse"
    else:
        family = "unknown"
    line = cmdline.strip() if cmdline else None
    systemd_boot = None if line is None else ("initrd=" in line and "BOOT_IMAGE=" not in line)
    refs = (file_ref("/etc/os-release"), file_ref("/proc/cmdline"))
    return BootLine(family, fields.get("PRETTY_NAME"), line, systemd_boot, refs)
