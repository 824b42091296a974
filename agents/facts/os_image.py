"""The OS kind: a general-purpose distribution, or an image-based one whose configuration lives elsewhere.

Talos (no systemd, a read-only SquashFS root, set by its machine config through ``talosctl``), Bottlerocket (a
read-only root, set by its API: ``apiclient``, or its user data) and Flatcar / Fedora CoreOS / RHCOS (a read-only
``/usr``, provisioned by Ignition from a Butane config) cannot take a fix persisted by ``systemctl enable`` or a file
in ``/etc/sysctl.d`` the way a distribution can. Read from ``/etc/os-release`` (``ID``, ``VARIANT_ID``), the kernel's
release (``-talos``, ``-flatcar``), the ``/`` mount's options and PID 1's name. An rpm-ostree or bootc host (RHEL
image mode, Fedora Silverblue/Kinoite/IoT: ``/run/ostree-booted``, ``ostree=`` on the boot line) keeps ``/etc`` and
its units, but changes its kernel command line with ``rpm-ostree kargs``, never ``grubby``. Inside a container the files are the
image's, not the host's (PID 1's root too: the container's own init): only the kernel release tells.
"""

from __future__ import annotations

from typing import Literal

from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe

ImageKind = Literal["talos", "bottlerocket", "flatcar", "coreos", "ostree"]
OSTREE_VARIANTS = frozenset({"silverblue", "kinoite", "iot", "sericea", "onyx"})
"""Fedora's rpm-ostree desktops and IoT (``VARIANT_ID``): ostree hosts even where ``/run/ostree-booted`` is not read."""
OS_RELEASE = "/etc/os-release"
OSTREE_BOOTED = "/run/ostree-booted"


class OsImage(Record):
    id: str | None
    """``ID`` of os-release (``ubuntu``, ``talos``, ``bottlerocket``, ``flatcar``, ``fedora``, ``rhcos``)."""
    variant: str | None
    """``VARIANT_ID`` (``coreos`` on Fedora CoreOS; Bottlerocket's variant, ``aws-k8s-1.31-nvidia``)."""
    kind: ImageKind | None
    """The image-based OS it is, when it is one rigaudit knows."""
    root_ro: bool | None
    """``/`` is mounted read-only."""
    init: str | None
    """PID 1's name (``systemd``, ``machined``)."""
    how: str

    @property
    def image_based(self) -> bool:
        """Settings persist only through the OS's own configuration: a known image, or a read-only ``/`` under an
        init that is not systemd. An rpm-ostree host is not: its ``/etc`` and units persist (its boot line is
        changed with ``rpm-ostree kargs``: :mod:`rigaudit.agents.facts.boot_line`)."""
        if self.kind is not None:
            return self.kind != "ostree"
        return self.root_ro is True and self.init is not None and self.init != "systemd"

    @property
    def label(self) -> str:
        if self.kind is not None:
            return f"{NAMES[self.kind]} ({'image-based: ' if self.image_based else ''}{self.how})"
        if self.image_based:
            return f"image-based OS ({self.how})"
        return self.id or "unknown OS"


NAMES: dict[str, str] = {
    "talos": "Talos Linux",
    "bottlerocket": "Bottlerocket",
    "flatcar": "Flatcar",
    "coreos": "CoreOS",
    "ostree": "an rpm-ostree (bootc) host",
}


def parse_os_release(text: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip():
            out[key.strip()] = value.strip().strip("\"'")
    return out


def image_kind(fields: dict[str, str], release: str | None, *, ostree: bool = False) -> ImageKind | None:
    """The image-based OS that os-release ``fields`` and the kernel ``release`` name, if any (``ostree``: the host
    booted an ostree deployment, ``/run/ostree-booted`` or ``ostree=`` on its boot line)."""
    os_id, variant = fields.get("ID", "").lower(), fields.get("VARIANT_ID", "").lower()
    if os_id == "talos" or "-talos" in (release or ""):
        return "talos"
    if os_id == "bottlerocket":
        return "bottlerocket"
    if os_id == "flatcar" or "-flatcar" in (release or ""):
        return "flatcar"
    if os_id in ("rhcos", "fedora-coreos") or (os_id == "fedora" and variant == "coreos"):
        return "coreos"
    if ostree or variant in OSTREE_VARIANTS:
        return "ostree"
    return None


def _root_ro(mounts: str | None) -> bool | None:
    for line in (mounts or "").splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[1] == "/":
            return "ro" in fields[3].split(",")
    return None


async def detect_os_image(probe: Probe, in_container: bool) -> OsImage:
    """The OS the fixes of this host's kernel and services persist on (:class:`OsImage`)."""
    release = await probe.text("/proc/sys/kernel/osrelease")
    if in_container:  # the files here, /proc/1's root too, are the image's: only the host's kernel tells
        kind = image_kind({}, release)
        how = f"kernel {release.strip()}" if release else "the container's host is not read"
        return OsImage(None, None, kind, None, None, how)
    text, mounts, init = await probe.gather(
        lambda: probe.text(OS_RELEASE), lambda: probe.text("/proc/mounts"), lambda: probe.text("/proc/1/comm")
    )
    ostree = await probe.exists(OSTREE_BOOTED)
    fields = parse_os_release(text)
    root_ro = _root_ro(mounts)
    shown = [f"ID={fields['ID']}" if "ID" in fields else "no os-release"]
    if root_ro:
        shown.append("/ read-only")
    if init:
        shown.append(f"PID 1 {init.strip()}")
    return OsImage(
        fields.get("ID"),
        fields.get("VARIANT_ID"),
        image_kind(fields, release, ostree=ostree),
        root_ro,
        init.strip() if init else None,
        ", ".join(shown),
    )
