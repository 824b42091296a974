"""The P2P micro-benchmark's records and report (``rigaudit.p2p/1``), which the ``p2p.bandwidth`` check reads.

A backend (``_p2p_torch``, ``_p2p_cuda``) measures each ordered GPU pair: a one-way peer copy, both
ways at once, and the same bytes staged through a pinned host buffer, then checks the data: the
destination must hold exactly the pattern written at the source. A copy that "works" but corrupts
(the IOMMU failure mode) is a failure, not a number.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

from rigaudit.tools.bench.links import GpuLinks, LinkLimit, pair_limit
from rigaudit.tools.bench.p2p_file import DEFAULT_PATH, P2P_SCHEMA
from rigaudit.tools.bench.p2p_measure import GpuInfo, PairMeasurement, Progress
from rigaudit.tools.core.record import Record, as_dict, field

FAR_BELOW = 0.6
"""A pair below this fraction of its link's limit is reported as a problem."""
NEAR_LIMIT = 0.8
"""A pair at this fraction of its link's limit or more gives what its link should (the pictures' green)."""


def share_of_limit(pair: Mapping[str, object]) -> float | None:
    """A ``rigaudit.p2p/1`` pair's one-way bandwidth as a fraction of its link's limit (NVLink links x rate, PCIe
    generation x width); ``0.0`` for a pair whose data came back corrupted; ``None`` where the limit is unknown."""
    if pair.get("data_ok") is False:
        return 0.0
    share, speed, limit = (pair.get(k) for k in ("fraction_of_limit", "unidir_gbps", "limit_gbps"))
    if isinstance(share, int | float) and not isinstance(share, bool):
        return float(share)
    if isinstance(speed, int | float) and isinstance(limit, int | float) and limit > 0:
        return float(speed) / float(limit)
    return None


class PairReport(Record):
    src: int
    dst: int
    unidir_gbps: float | None
    bidir_gbps: float | None
    staged_gbps: float | None
    limit_gbps: float | None
    data_ok: bool
    p2p_access: bool
    link: str
    link_detail: str
    fraction_of_limit: float | None
    problems: list[str] = field(default_factory=list)


class P2PReport(Record):
    taken_at: str
    host: str
    backend: str
    size_mib: int
    iters: int
    gpus: list[GpuInfo]
    pairs: list[PairReport]
    schema: str = P2P_SCHEMA

    @property
    def ok(self) -> bool:
        return all(not p.problems for p in self.pairs)

    def to_dict(self) -> dict[str, object]:
        data = as_dict(self)
        return {"schema": data.pop("schema"), **data}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def judge_pair(m: PairMeasurement, limit: LinkLimit) -> PairReport:
    """Attach the link limit to a measurement and say what is wrong with it, if anything."""
    problems: list[str] = []
    if not m.data_ok:
        problems.append(f"data corrupted in the peer copy ({m.data_error or 'destination differs from source'})")
    fraction = m.unidir_gbps / limit.limit_gbps if limit.limit_gbps else None
    if not m.p2p_access:
        problems.append("peer access not available: CUDA stages these copies through host memory")
    elif m.staged_gbps > 0 and m.unidir_gbps < m.staged_gbps:
        problems.append(f"peer copy ({m.unidir_gbps:.1f} GB/s) slower than staging through the host ({m.staged_gbps:.1f} GB/s)")
    if fraction is not None and fraction < FAR_BELOW:
        problems.append(f"one-way {m.unidir_gbps:.1f} GB/s is {fraction:.0%} of the {limit.detail} limit")
    ok_data = m.data_ok
    return PairReport(
        src=m.src,
        dst=m.dst,
        unidir_gbps=m.unidir_gbps if ok_data else None,
        bidir_gbps=m.bidir_gbps if ok_data else None,
        staged_gbps=m.staged_gbps,
        limit_gbps=limit.limit_gbps,
        data_ok=ok_data,
        p2p_access=m.p2p_access,
        link=limit.kind,
        link_detail=limit.detail,
        fraction_of_limit=fraction if ok_data else None,
        problems=problems,
    )


def build_report(
    measurements: Sequence[PairMeasurement],
    gpus: Sequence[GpuInfo],
    links: Sequence[GpuLinks],
    *,
    backend: str,
    size_mib: int,
    iters: int,
    taken_at: str | None = None,
    host: str | None = None,
) -> P2PReport:
    """The report from the measurements and NVML's link records (``links[i]`` belongs to ``gpus[i]``)."""
    by_index = {g.index: link for g, link in zip(gpus, links, strict=False)}
    pairs = [
        judge_pair(m, pair_limit(by_index.get(m.src, GpuLinks(None)), by_index.get(m.dst, GpuLinks(None)))) for m in measurements
    ]
    return P2PReport(
        taken_at=taken_at or datetime.now(timezone.utc).isoformat(timespec="seconds"),
        host=host or socket.gethostname(),
        backend=backend,
        size_mib=size_mib,
        iters=iters,
        gpus=list(gpus),
        pairs=pairs,
    )


def save_for_audit(report: P2PReport, path: Path = DEFAULT_PATH) -> str | None:
    """Write the report where the ``p2p.bandwidth`` check reads it; a warning (not an error) when it cannot."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(report.to_json() + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        return f"could not save the result for the audit at {path}: {exc.strerror or exc}"
    return None


def measure(
    backend: str, gpus: Sequence[int] | None, *, size_mib: int, iters: int, warmup: int = 3, progress: Progress | None = None
) -> P2PReport:
    """Run the benchmark on every ordered pair of ``gpus`` (None: all visible) with the chosen backend."""
    if backend == "torch":
        from rigaudit.tools.bench import _p2p_torch as impl
    else:
        from rigaudit.tools.bench import _p2p_cuda as impl  # type: ignore[no-redef]
    infos, measurements = impl.measure_pairs(gpus, size_mib * 2**20, iters=iters, warmup=warmup, progress=progress)
    from rigaudit.tools.bench.links import read_links

    links = read_links([g.pci_bus_id for g in infos], [g.compute_major for g in infos])
    return build_report(measurements, infos, links, backend=backend, size_mib=size_mib, iters=iters)
