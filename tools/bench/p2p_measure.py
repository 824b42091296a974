"""What a P2P backend (``_p2p_torch``, ``_p2p_cuda``) measures and reports back to :mod:`rigaudit.tools.bench.p2p`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from rigaudit.tools.core.record import Record

__all__ = ["GpuInfo", "PairMeasurement", "Progress", "time_each_pair"]

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


class _Copies(Protocol):
    """A backend's three timed copies of one ordered pair: GB/s, and what went wrong (``None``: the data arrived)."""

    def unidir(self, s: int, d: int, iters: int, warmup: int) -> tuple[float, str | None]: ...
    def bidir(self, s: int, d: int, iters: int, warmup: int) -> tuple[float, str | None]: ...
    def staged(self, s: int, d: int, iters: int, warmup: int) -> tuple[float, str | None]: ...


def time_each_pair(
    rig: _Copies,
    pairs: Sequence[tuple[int, int]],
    access: Callable[[int, int], bool],
    iters: int,
    warmup: int,
    progress: Progress | None,
) -> list[PairMeasurement]:
    """Each ordered pair's peer access (as the backend tells it) and its three copies, in order, reported as it ends."""
    results: list[PairMeasurement] = []
    for done, (s, d) in enumerate(pairs, start=1):
        peer = access(s, d)
        uni, uni_err = rig.unidir(s, d, iters, warmup)
        bi, bi_err = rig.bidir(s, d, iters, warmup)
        staged, staged_err = rig.staged(s, d, iters, warmup)
        error = uni_err or bi_err or staged_err
        results.append(PairMeasurement(s, d, peer, uni, bi, staged, error is None, error))
        if progress is not None:
            progress(f"GPU{s}→GPU{d}", done, len(pairs))
    return results
