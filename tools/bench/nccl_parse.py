"""Parsers for NCCL's own output: nccl-tests' result table and the transports in NCCL's INFO log."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from rigaudit.tools.bench.errors import BenchInputError
from rigaudit.tools.core.record import Record

_UNITS = {
    "": 1,
    "B": 1,
    "K": 2**10,
    "KB": 2**10,
    "KIB": 2**10,
    "M": 2**20,
    "MB": 2**20,
    "MIB": 2**20,
    "G": 2**30,
    "GB": 2**30,
    "GIB": 2**30,
}


def parse_size(text: str) -> int:
    """``1M`` / ``16MiB`` / ``1G`` / ``4096`` → bytes (binary units, as nccl-tests reads them)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).upper() if match else ""
    if not match or unit not in _UNITS:
        raise BenchInputError(f"not a size: {text!r} (use e.g. 1M, 256M, 1G)")
    size = int(float(match.group(1)) * _UNITS[unit])
    if size <= 0:
        raise BenchInputError(f"size must be positive: {text!r}")
    return size


def parse_sizes(text: str) -> list[int]:
    sizes = [parse_size(part) for part in text.split(",") if part.strip()]
    if not sizes:
        raise BenchInputError("no sizes given")
    return sizes


def human_size(size: int) -> str:
    for unit, factor in (("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    return f"{size}B"


def bus_factor(world: int) -> float:
    """All-reduce bus bandwidth factor 2(n-1)/n (nccl-tests' PERFORMANCE.md)."""
    return 2.0 * (world - 1) / world if world > 0 else 0.0


class NcclTestRow(Record):
    """One size of nccl-tests' table (out-of-place and in-place columns)."""

    size: int
    count: int
    dtype: str
    time_us: float
    algbw_gbps: float
    busbw_gbps: float
    wrong: int | None
    inplace_time_us: float | None = None
    inplace_algbw_gbps: float | None = None
    inplace_busbw_gbps: float | None = None
    inplace_wrong: int | None = None


def _wrong(token: str) -> int | None:
    return int(token) if token.isdecimal() else None


def parse_nccl_tests(text: str) -> list[NcclTestRow]:
    """Rows of an ``all_reduce_perf`` table (with or without the ``root`` column; ``#wrong`` may be N/A)."""
    rows: list[NcclTestRow] = []
    for line in text.splitlines():
        if line.lstrip().startswith("#") or "NCCL" in line:
            continue
        tokens = line.split()
        if len(tokens) < 8 or not tokens[0].isdecimal() or not tokens[1].isdecimal():
            continue
        try:
            tail = tokens[-8:] if len(tokens) >= 12 else tokens[-4:]
            oop = [float(tail[0]), float(tail[1]), float(tail[2])]
            ip = [float(tail[4]), float(tail[5]), float(tail[6])] if len(tail) == 8 else None
        except ValueError:
            continue
        rows.append(
            NcclTestRow(
                size=int(tokens[0]),
                count=int(tokens[1]),
                dtype=tokens[2],
                time_us=oop[0],
                algbw_gbps=oop[1],
                busbw_gbps=oop[2],
                wrong=_wrong(tail[3]),
                inplace_time_us=ip[0] if ip else None,
                inplace_algbw_gbps=ip[1] if ip else None,
                inplace_busbw_gbps=ip[2] if ip else None,
                inplace_wrong=_wrong(tail[7]) if ip else None,
            )
        )
    return rows


_CHANNEL = re.compile(
    r"Channel\s+(?P<channel>\d+)(?:/\d+)?\s*:\s*(?P<src>\d+)\[[^\]]*\]\s*->\s*(?P<dst>\d+)\[[^\]]*\]"
    r"(?:\s*\[(?P<dir>send|receive)\])?\s+via\s+(?P<via>\S+)"
)
_VERSION = re.compile(r"NCCL version (\S+)")


class Transports(Record):
    """What NCCL's INFO log says about how ranks talk: counts per transport string, and the version."""

    counts: dict[str, int]
    version: str | None = None

    @property
    def main(self) -> str | None:
        """The transport family most connections use: P2P, SHM, NET or another NCCL names."""
        families = Counter[str]()
        for via, count in self.counts.items():
            families[via.split("/")[0]] += count
        return families.most_common(1)[0][0] if families else None

    def summary(self) -> str:
        if not self.counts:
            return "not reported (no NCCL INFO transport lines)"
        return ", ".join(f"{via} x{count}" for via, count in sorted(self.counts.items(), key=lambda kv: -kv[1]))


def parse_transports(lines: Iterable[str]) -> Transports:
    """Count ``Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read`` style lines (and NET/SHM variants)."""
    counts: Counter[str] = Counter()
    version = None
    for line in lines:
        if "NCCL INFO" not in line:
            continue
        if version is None and (found := _VERSION.search(line)):
            version = found.group(1)
        match = _CHANNEL.search(line)
        if match:
            counts[match.group("via")] += 1
    return Transports(dict(counts), version)
