"""What a P2P backend (``_p2p_torch``, ``_p2p_cuda``) measures and reports back to :mod:`rigaudit.tools.bench.p2p`."""

from __future__ import annotations

from collections.abc import Callable

from rigaudit.tools.core.record import Record

__all__ = ["GpuInfo", "PairMeasurement", "Progress"]

Progress = Callable[[str, int, int], None]


class GpuInfo(Record):
    index: int
    name: str
    pci_bus_id: str | None
    compute_major: int | None = None


class PairMeasurement(Record):
    """What a backend measured for one ordered pair (GB/s = 1e9 bytes/s, per direction except bidir)."""

    src: int
    dst: int
    p2p_access: bool
    unidir_gbps: float
    bidir_gbps: float
    staged_gbps: float
    data_ok: bool
    data_error: str | None = None
