"""Image-based operating systems: Talos Linux and Bottlerocket, built over an archetype's hardware.

Talos 1.9: ``ID=talos``, a ``-talos`` kernel, ``/`` a read-only SquashFS, PID 1 ``machined`` (no systemd, no
systemctl, journalctl, apt or DKMS), NVIDIA from system extensions. Bottlerocket (an NVIDIA Kubernetes variant):
``ID=bottlerocket`` with its ``VARIANT_ID``, ``/`` a read-only dm-verity ext4, PID 1 systemd, no package manager.
RHEL 9 in image mode (bootc over rpm-ostree): ``/run/ostree-booted`` and ``ostree=`` on the boot line, ``/etc``
writable. Kept apart from :mod:`tests.hostgen.faults`; each helper returns a changed copy of a description.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from tests.hostgen.spec import Fault, HostSpec

if TYPE_CHECKING:
    from tests.hostgen.build import Built

TALOS_RELEASE = (
    'NAME="Talos"\nID=talos\nVERSION_ID=v1.9.5\nPRETTY_NAME="Talos (v1.9.5)"\nHOME_URL="https://www.talos.dev/"\n'
    'BUG_REPORT_URL="https://github.com/siderolabs/talos/issues"\nVENDOR_NAME="Sidero Labs"\n'
    'VENDOR_URL="https://www.siderolabs.com/"\n'
)
BOTTLEROCKET_RELEASE = (
    'NAME=Bottlerocket\nID=bottlerocket\nVERSION="1.29.0 (aws-k8s-1.31-nvidia)"\n'
    'PRETTY_NAME="Bottlerocket OS 1.29.0 (aws-k8s-1.31-nvidia)"\nVARIANT_ID=aws-k8s-1.31-nvidia\nVERSION_ID=1.29.0\n'
    'BUILD_ID=c3f5a1b2\nHOME_URL="https://github.com/bottlerocket-os/bottlerocket"\n'
    'SUPPORT_URL="https://github.com/bottlerocket-os/bottlerocket/discussions"\n'
    'BUG_REPORT_URL="https://github.com/bottlerocket-os/bottlerocket/issues"\n'
)
ROOT = r"^\S+ / \S+ \S+"


def _root(built: Built, line: str) -> None:
    t = built.tree
    for path in [p for p in t.files if p.startswith("/proc/") and p.endswith("/mounts")]:
        t.file(path, re.sub(ROOT, line, t.text(path) or "", count=1, flags=re.M))


def talos(spec: HostSpec, kernel: str = "6.12.18-talos") -> HostSpec:
    """The host as Talos 1.9 runs it."""

    def apply(built: Built) -> None:
        t = built.tree
        t.file("/etc/os-release", TALOS_RELEASE)
        for path in [p for p in t.files if p.startswith("/var/lib/dkms")]:
            t.remove(path)
        t.missing_program("systemctl", "dpkg-query", "dpkg", "apt-get", "dkms", "journalctl", "update-grub")
        for key in [k for k in t.commands if k and k[0] in ("systemctl", "dpkg-query", "journalctl", "dkms")]:
            del t.commands[key]
        t.file("/proc/1/cmdline", b"/sbin/init\x00")
        t.file("/proc/1/comm", "machined\n")
        _root(built, "/dev/loop0 / squashfs ro,relatime")

    summary = "Talos 1.9: read-only SquashFS root, PID 1 machined, no systemd/apt/DKMS"
    changed = replace(spec, os=replace(spec.os, kernel=kernel))
    return replace(
        changed,
        name=f"{spec.name}+talos",
        summary=f"{spec.summary}; OS: {summary}",
        faults=(*spec.faults, Fault("talos", summary, apply)),
    )


def bottlerocket(spec: HostSpec) -> HostSpec:
    """The host as a Bottlerocket NVIDIA variant runs it (audited from the host's namespaces, as ``sheltie`` gives)."""

    def apply(built: Built) -> None:
        t = built.tree
        t.file("/etc/os-release", BOTTLEROCKET_RELEASE)
        t.missing_program("dpkg-query", "dpkg", "apt-get", "dkms", "update-grub")
        for key in [k for k in t.commands if k and k[0] in ("dpkg-query", "dkms")]:
            del t.commands[key]
        _root(built, "/dev/dm-0 / ext4 ro,seclabel,relatime,nodelalloc")

    summary = "Bottlerocket 1.29 (aws-k8s-1.31-nvidia): read-only dm-verity root, settings by apiclient"
    return replace(
        spec,
        name=f"{spec.name}+bottlerocket",
        summary=f"{spec.summary}; OS: {summary}",
        faults=(*spec.faults, Fault("bottlerocket", summary, apply)),
    )


def rhel_image_mode(spec: HostSpec, deployment: str = "/ostree/boot.1/default/4f1c2e9a7b3d/0") -> HostSpec:
    """The host as RHEL image mode boots it: an ostree deployment (bootc), its kernel line changed by rpm-ostree."""

    def apply(built: Built) -> None:
        built.tree.file("/run/ostree-booted", "")

    summary = "RHEL image mode (bootc): an ostree deployment, /run/ostree-booted"
    changed = replace(spec, os=replace(spec.os, cmdline=f"{spec.os.cmdline} ostree={deployment}"))
    return replace(
        changed,
        name=f"{spec.name}+image-mode",
        summary=f"{spec.summary}; OS: {summary}",
        faults=(*spec.faults, Fault("image-mode", summary, apply)),
    )
