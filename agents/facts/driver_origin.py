"""Where this host's NVIDIA kernel driver comes from, which decides what a driver fix may touch.

- ``operator``: the NVIDIA GPU Operator's driver container builds and loads the modules and runs the fabric manager
  and nvidia-persistenced inside it; its root is mounted on the host at ``/run/nvidia/driver`` (the Operator's
  ``driver.root``). A host package, DKMS build or systemd unit would put a second driver under it.
- ``vfio``: every NVIDIA GPU is bound to vfio-pci and passed through to a guest (NVIDIA's full-passthrough model):
  the driver, its daemons and the fabric manager run in the guest, none on this host.
- ``dkms``: a distribution's DKMS build (``/var/lib/dkms/nvidia``).
- ``precompiled``: Ubuntu's Canonical-signed modules of the ``linux-modules-nvidia-BRANCH-KERNEL`` packages
  (``/lib/modules/KERNEL/kernel/nvidia-550srv/``), with no DKMS: a newer kernel needs its package, not a build.
- ``unknown``: none of these is seen (a vendor's .run install, RHEL's kmod packages, an image without module tree).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from typing import Literal

from rigaudit.agents.facts.gpus import Gpu
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.nvml_local import OPERATOR_ROOT
from rigaudit.tools.hosts.probe import Probe, dir_ref, file_ref

Origin = Literal["operator", "vfio", "dkms", "precompiled", "unknown"]

OPERATOR_MARKS = (f"{OPERATOR_ROOT}/usr/bin/nvidia-smi", "/run/nvidia/validations/driver-ready")
"""The driver container's root as the host sees it, and the Operator validator's mark that the driver is up."""
OPERATOR_SOURCE = "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/index.html"
PASSTHROUGH_SOURCE = "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html"
"""The Fabric Manager user guide, 'Full Passthrough Virtualization Model': GPUs and NVSwitches go to the guest, and
the fabric manager runs there."""
_PRECOMPILED = r"(?m)^kernel/nvidia-(\d+)(srv)?/nvidia\.ko"
DAEMONS = {"nv-fabricmanage": "nv-fabricmanager", "nvidia-persiste": "nvidia-persistenced"}
"""The driver daemons by their ``/proc/PID/comm`` (the kernel keeps 15 characters of the name)."""
_SCAN = 4096
_SHOWN = 4


class DriverOrigin(Record):
    origin: Origin
    said: str
    """What the origin is, in words (``the GPU Operator's driver container (/run/nvidia/driver)``)."""
    evidence: tuple[str, ...] = ()
    branch: str | None = None
    """Ubuntu's precompiled modules: the package branch (``550-server``, ``550``)."""
    daemons: tuple[tuple[str, int], ...] = ()
    """(daemon, pid) of the driver daemons seen as processes (the Operator's run inside its container)."""

    def daemon(self, name: str) -> int | None:
        return next((pid for daemon, pid in self.daemons if daemon == name), None)


def versions_said(versions: Sequence[str]) -> str:
    """The newest few of DKMS's versions (oldest first), and how many older ones there are."""
    shown = ", ".join(versions[-_SHOWN:])
    return shown if len(versions) <= _SHOWN else f"{shown} and {len(versions) - _SHOWN} older"


async def _bound_to_vfio(probe: Probe, gpus: Sequence[Gpu]) -> bool:
    if not gpus:
        return False
    targets = await probe.gather(*[lambda g=g: probe.readlink(f"{g.sysfs}/driver") for g in gpus])
    return all(t is not None and posixpath.basename(t) == "vfio-pci" for t in targets)


async def _daemons(probe: Probe) -> tuple[tuple[str, int], ...]:
    listing = await probe.list_dir("/proc")
    pids = sorted(int(n) for n in listing.entries or () if n.isdecimal())[:_SCAN]
    comms = await probe.gather(*[lambda p=p: probe.text(f"/proc/{p}/comm") for p in pids])
    found = {DAEMONS[c.strip()]: p for p, c in zip(pids, comms, strict=True) if c and c.strip() in DAEMONS}
    return tuple(sorted(found.items()))


async def operator_node(probe: Probe) -> bool:
    """The GPU Operator's driver container runs this host's driver (its root or its validator's mark is there)."""
    return any(await probe.gather(*[lambda p=p: probe.exists(p) for p in OPERATOR_MARKS]))


async def read_origin(probe: Probe, gpus: Sequence[Gpu], modules_dep: str | None, dkms_versions: Sequence[str]) -> DriverOrigin:
    """The driver's origin from the GPUs' bound driver, the Operator's driver root, DKMS and the running kernel's
    ``modules.dep`` (memoized reads: other facts read most of them)."""
    if await _bound_to_vfio(probe, gpus):
        refs = tuple(f"link:{g.sysfs}/driver" for g in gpus)
        return DriverOrigin("vfio", f"every NVIDIA GPU bound to vfio-pci ({len(gpus)}): passed through to a guest", refs)
    marks = await probe.gather(*[lambda p=p: probe.exists(p) for p in OPERATOR_MARKS])
    if any(marks):
        daemons = await _daemons(probe)
        refs = (*(file_ref(p) for p, seen in zip(OPERATOR_MARKS, marks, strict=True) if seen), dir_ref("/proc"))
        return DriverOrigin("operator", f"the GPU Operator's driver container ({OPERATOR_ROOT})", refs, daemons=daemons)
    if dkms_versions:
        return DriverOrigin("dkms", f"DKMS (nvidia {versions_said(dkms_versions)})", (dir_ref("/var/lib/dkms/nvidia"),))
    if modules_dep is not None and (match := re.search(_PRECOMPILED, modules_dep)):
        branch = match.group(1) + ("-server" if match.group(2) else "")
        said = f"Ubuntu's precompiled modules (linux-modules-nvidia-{branch})"
        return DriverOrigin("precompiled", said, (), branch=branch)
    return DriverOrigin("unknown", "not seen (no DKMS tree, no precompiled module, no GPU Operator driver root)")


def precompiled_package(origin: DriverOrigin, kernel: str) -> str:
    """Ubuntu's package of the precompiled NVIDIA modules for ``kernel``."""
    return f"linux-modules-nvidia-{origin.branch}-{kernel}"


def precompiled_meta(origin: DriverOrigin, kernel: str) -> str:
    """The meta package that brings the precompiled modules of every later kernel of ``kernel``'s flavour."""
    flavour = kernel.rsplit("-", 1)[-1] if "-" in kernel else "generic"
    return f"linux-modules-nvidia-{origin.branch}-{flavour}"
