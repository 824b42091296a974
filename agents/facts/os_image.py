"""The OS kind: a general-purpose distribution, or an image-based one whose configuration lives elsewhere.

Talos (no systemd, a read-only SquashFS root, set by its machine config through ``talosctl``), Bottlerocket (a
read-only root, set by its API: ``apiclient``, or its user data) and Flatcar / Fedora CoreOS / RHCOS (a read-only
``/usr``, provisioned by Ignition from a Butane config) cannot take a fix persisted by ``systemctl enable`` or a file
in ``/etc/sysctl.d`` the way a distribution can. Read from ``/etc/os-release`` (``ID``, ``VARIANT_ID``), the kernel's
release (``-talos``, ``-flatcar``), the ``/`` mount's options and PID 1's name. Inside a container the files are the
image's, not the host's: only the kernel release and PID 1's root (``/proc/1/root``, when PID 1 is the host's) tell.
"""

from __future__ import annotations

from typing import Literal

from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe

ImageKind = Literal["talos", "bottlerocket", "flatcar", "coreos"]
OS_RELEASE = "/etc/os-release"


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
        init that is not systemd."""
        return self.kind is not None or (self.root_ro is True and self.init is not None and self.init != "systemd")

    @property
    def label(self) -> str:
        if self.kind is not None:
            return f"{NAMES[self.kind]} (image-based: {self.how})"
        if self.image_based:
            return f"image-based OS ({self.how})"
        return self.id or "unknown OS"


NAMES: dict[str, str] = {"talos": "Talos Linux", "bottlerocket": "Bottlerocket", "flatcar": "Flatcar", "coreos": "CoreOS"}


def parse_os_release(text: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip():
            out[key.strip()] = value.strip().strip("\"'")
    return out


def image_kind(fields: dict[str, str], release: str | None) -> ImageKind | None:
    """The image-based OS that os-release ``fields`` and the kernel ``release`` name, if any."""
    os_id, variant = fields.get("ID", "").lower(), fields.get("VARIANT_ID", "").lower()
    if os_id == "talos" or "-talos" in (release or ""):
        return "talos"
    if os_id == "bottlerocket":
        return "bottlerocket"
    if os_id == "flatcar" or "-flatcar" in (release or ""):
        return "flatcar"
    if os_id in ("rhcos", "fedora-coreos") or (os_id == "fedora" and variant == "coreos"):
        return "coreos"
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
    if in_container:
        text = await probe.text(f"/proc/1/root{OS_RELEASE}")
        fields = parse_os_release(text)
        kind = image_kind(fields, release)
        how = f"kernel {release.strip()}" if release else "the container's host is not read"
        return OsImage(fields.get("ID"), fields.get("VARIANT_ID"), kind, None, None, how)
    text, mounts, init = await probe.gather(
        lambda: probe.text(OS_RELEASE), lambda: probe.text("/proc/mounts"), lambda: probe.text("/proc/1/comm")
    )
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
        image_kind(fields, release),
        root_ro,
        init.strip() if init else None,
        ", ".join(shown),
    )
