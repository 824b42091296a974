"""The communication term of a decoded token: layers x all-reduces per layer x the latency of one all-reduce.

Under tensor parallelism every layer ends its attention and its MLP with an all-reduce of the
step's activations (hidden size x 2 bytes x the tokens in the step): two per layer. Decode messages
are small (16 KiB for one token of a 8192-wide model), so each costs about the latency of the
all-reduce at that size for that many GPUs, which ``rigaudit bench nccl --sizes 16K,64K,256K,1M
--json FILE`` measures; without a measurement an assumed range by interconnect is used and said.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from rigaudit.tools.bench.errors import BenchInputError
from rigaudit.tools.bench.nccl_parse import human_size
from rigaudit.tools.core.record import Record

Interconnect = Literal["nvlink", "pcie", "unknown"]
ASSUMED_US: dict[str, tuple[float, float]] = {
    "nvlink": (8.0, 20.0),
    "pcie": (20.0, 40.0),
    "unknown": (8.0, 40.0),
}
"""Small-message all-reduce latency, µs, when none was measured: NCCL's LL protocol over NVLink
(custom all-reduce kernels reach the low end), and over PCIe through the host bridge."""
ALLREDUCES_PER_LAYER = 2
MAX_ROWS = 4096


class NcclCurve(Record):
    """All-reduce time by message size, measured by ``bench nccl`` for ``world`` GPUs."""

    world: int
    rows: tuple[tuple[int, float], ...]
    """(bytes, µs), sizes ascending."""
    source: str

    def latency_us(self, size: int) -> tuple[float, str]:
        """The time of one all-reduce of ``size`` bytes, and how it was found (log-log interpolation between sizes)."""
        rows = self.rows
        first_size, first_us = rows[0]
        if size <= first_size:
            how = "measured" if size == first_size else f"at most: the smallest size measured was {human_size(first_size)}"
            return first_us, how
        for (s0, t0), (s1, t1) in itertools.pairwise(rows):
            if s0 <= size <= s1:
                frac = (math.log(size) - math.log(s0)) / (math.log(s1) - math.log(s0))
                value = math.exp(math.log(t0) + frac * (math.log(t1) - math.log(t0)))
                return value, f"interpolated between {human_size(s0)} and {human_size(s1)}"
        last_size, last_us = rows[-1]
        return last_us * size / last_size, f"extrapolated at the bandwidth of {human_size(last_size)}"


def _positive(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) and number > 0 else None


def curve_from_json(data: object, label: str) -> NcclCurve:
    """A ``rigaudit.nccl/1`` result (``bench nccl --json``) as a latency curve; one clear line when it is not one."""
    if not isinstance(data, dict) or data.get("schema") != "rigaudit.nccl/1":
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise BenchInputError(f"{label} is not a rigaudit.nccl/1 result (`rigaudit bench nccl --json FILE`; schema: {found!r})")
    world = data.get("world_size")
    raw_rows = data.get("rows")
    if isinstance(world, bool) or not isinstance(world, int) or world < 2 or not isinstance(raw_rows, list):
        raise BenchInputError(f"{label}: needs world_size >= 2 and rows")
    rows: dict[int, float] = {}
    for row in raw_rows[:MAX_ROWS]:
        if not isinstance(row, dict):
            continue
        size, time_us = row.get("bytes"), _positive(row.get("time_us"))
        if isinstance(size, int) and not isinstance(size, bool) and size > 0 and time_us is not None:
            rows[size] = time_us
    if not rows:
        raise BenchInputError(f"{label}: no row with a positive size and time")
    tool = data.get("tool") if isinstance(data.get("tool"), str) else "bench nccl"
    return NcclCurve(world, tuple(sorted(rows.items())), f"{label} ({tool}, {world} GPUs)")


def load_curve(path: Path) -> NcclCurve:
    from rigaudit.tools.files.bounded import load_json

    return curve_from_json(load_json(path, limit=16 * 1024 * 1024), str(path))


def parse_latency(text: str) -> tuple[float, float]:
    """``20`` or ``20-40`` (µs) -> (low, high)."""
    parts = text.replace("..", "-").split("-")
    try:
        values = [float(p) for p in parts if p.strip()]
    except ValueError:
        values = []
    if len(values) not in (1, 2) or len(parts) != len(values) or not all(math.isfinite(v) and 0 < v <= 1e6 for v in values):
        raise BenchInputError(f"--allreduce-us wants microseconds, one number or LOW-HIGH, not {text!r}")
    low, high = min(values), max(values)
    return low, high


class CommTerm(Record):
    """What communication costs one decode step: ``count`` all-reduces of ``message_bytes`` on ``world`` GPUs."""

    layers: int
    per_layer: int
    world: int
    message_bytes: int
    latency_us: tuple[float, float]
    """One all-reduce, µs: (low, high); equal when measured."""
    source: str

    @property
    def count(self) -> int:
        return self.layers * self.per_layer

    @property
    def seconds(self) -> tuple[float, float]:
        return self.count * self.latency_us[0] / 1e6, self.count * self.latency_us[1] / 1e6

    def describe(self) -> str:
        low, high = self.latency_us
        each = f"{low:,.1f} µs" if math.isclose(low, high) else f"{low:,.0f}-{high:,.0f} µs"
        total_low, total_high = (s * 1e3 for s in self.seconds)
        total = f"{total_low:,.2f} ms" if math.isclose(low, high) else f"{total_low:,.2f}-{total_high:,.2f} ms"
        return (
            f"{self.layers} layers x {self.per_layer} all-reduces of {human_size(self.message_bytes)} on {self.world} GPUs "
            f"x {each} ({self.source}) = {total} per step"
        )


def comm_term(
    *,
    world: int,
    layers: int,
    message_bytes: int,
    per_layer: int = ALLREDUCES_PER_LAYER,
    curve: NcclCurve | None = None,
    given_us: tuple[float, float] | None = None,
    interconnect: Interconnect = "unknown",
) -> CommTerm | None:
    """The term for ``world`` tensor-parallel GPUs; None on one GPU (no all-reduce)."""
    if world <= 1 or layers <= 0 or per_layer <= 0:
        return None
    if given_us is not None:
        return CommTerm(layers, per_layer, world, message_bytes, given_us, "given")
    if curve is not None:
        if curve.world != world:
            raise BenchInputError(
                f"{curve.source} measured {curve.world} GPUs; the model runs on {world}: measure with "
                f"`rigaudit bench nccl --gpus {world} --sizes 16K,64K,256K,1M --json FILE`"
            )
        value, how = curve.latency_us(message_bytes)
        return CommTerm(layers, per_layer, world, message_bytes, (value, value), f"{curve.source}, {how}")
    low, high = ASSUMED_US[interconnect]
    where = "interconnect unknown" if interconnect == "unknown" else interconnect
    return CommTerm(layers, per_layer, world, message_bytes, (low, high), f"assumed, {where}; measure it with bench nccl")


def message_bytes(hidden: int, tokens: float = 1.0, activation_bytes: float = 2.0) -> int:
    """The all-reduce message of one step: hidden x activation bytes x the tokens in the step."""
    return max(1, round(hidden * activation_bytes * max(1.0, tokens)))


def describe_rows(rows: Sequence[tuple[int, float]]) -> str:
    return ", ".join(f"{human_size(s)} {t:,.1f} µs" for s, t in rows)
