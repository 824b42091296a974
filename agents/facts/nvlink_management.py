"""The RDMA devices a host lists, less the NVLink management ports of an NVLink 5 baseboard.

On HGX/DGX B200 and later the GPU baseboard carries a ConnectX bridge whose physical functions the host lists among its
RDMA devices (``mlx5_8``-``mlx5_11`` on an HGX B200 with eight data NICs). NVLSM and the fabric manager drive the
NVSwitches through them; they carry no network traffic. NVIDIA's Fabric Manager user guide (release 2.3, "NVIDIA HGX
B200/B100 GPU Baseboard") tells them apart by their VPD: a vendor-specific field SMDL with the value SW_MNG, which
nvidia-fabricmanager-start.sh reads to find the port it hands NVLSM. Rules that count, place or judge RDMA NICs use
:func:`rdma_devices`, never the bare listing. A device whose VPD cannot be read stays an RDMA device (its role unread).
"""

from __future__ import annotations

from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe

INFINIBAND = "/sys/class/infiniband"
SW_MNG = b"SMDL=SW_MNG"
SOURCE = "NVIDIA Fabric Manager user guide (release 2.3): the baseboard bridge's VPD field SMDL=SW_MNG"


class RdmaDevices(Record):
    """``/sys/class/infiniband`` as a directory listing (``entries`` None with ``error``), management ports apart."""

    entries: tuple[str, ...] | None
    error: str | None
    management: tuple[str, ...] = ()
    """The NVLink management ports left out of ``entries``."""


def management_text(management: tuple[str, ...]) -> str:
    """``; NVLink management ports mlx5_8–mlx5_11 left out (...)``, or nothing when there are none."""
    if not management:
        return ""
    names = sorted(management, key=_number)
    shown = f"{names[0]}–{names[-1]}" if len(names) > 2 else ", ".join(names)
    return f"; NVLink management ports {shown} left out (the NVSwitches' ports, VPD SMDL=SW_MNG: no network NIC)"


def _number(name: str) -> tuple[str, int]:
    stem, _, tail = name.rpartition("_")
    return (stem, int(tail)) if tail.isdecimal() else (name, -1)


async def rdma_devices(probe: Probe) -> RdmaDevices:
    listing = await probe.list_dir(INFINIBAND)
    if listing.entries is None:
        return RdmaDevices(entries=None, error=listing.error)
    names = listing.entries
    vpds = await probe.gather(*[lambda n=n: probe.read(f"{INFINIBAND}/{n}/device/vpd") for n in names])
    management = tuple(n for n, vpd in zip(names, vpds, strict=True) if vpd.data is not None and SW_MNG in vpd.data)
    return RdmaDevices(entries=tuple(n for n in names if n not in management), error=None, management=management)
