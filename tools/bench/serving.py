"""Serving metrics as vLLM's ``benchmark_serving`` and NVIDIA AIPerf report them, from a level's requests.

Per request (successful ones only; warm-up requests are never among them):
- TTFT: time from sending the request to its first streamed token;
- TPOT: (end-to-end latency - TTFT) / (output tokens - 1), for requests of two tokens or more;
- ITL: every gap between two streamed token events, pooled over the requests;
- E2E: end-to-end latency, from sending to the end of the stream.
Each as mean, median, p90, p95, p99 and standard deviation. Request throughput is successful
requests over the level's wall time; goodput is the requests that met every service-level objective
(``--slo ttft_ms=200 --slo tpot_ms=50``), per second, and their share.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from rigaudit.tools.bench.errors import BenchInputError
from rigaudit.tools.bench.stats import mean, percentile, stdev

SLO_KEYS = ("ttft_ms", "tpot_ms", "e2e_ms")
"""What an objective may bound (vLLM's goodput takes the same three)."""
MAX_SLO_MS = 86_400_000.0


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", allow_inf_nan=False)


class Distribution(_Model):
    """One latency over a set of requests (milliseconds)."""

    n: int = 0
    mean: float | None = None
    median: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None
    std: float | None = None


class ServingMetrics(_Model):
    ttft_ms: Distribution = Distribution()
    tpot_ms: Distribution = Distribution()
    itl_ms: Distribution = Distribution()
    e2e_ms: Distribution = Distribution()
    request_throughput: float = 0.0
    """Successful requests per second of the level's wall time."""
    goodput: float | None = None
    """Requests per second that met every objective; None without objectives."""
    good_fraction: float | None = None
    """The share of the level's requests (failed ones included) that met every objective."""


class SampleLike(Protocol):
    @property
    def ttft_ms(self) -> float | None: ...
    @property
    def itl_ms(self) -> list[float]: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def latency_ms(self) -> float | None: ...
    @property
    def ok(self) -> bool: ...


class RunLike(Protocol):
    @property
    def concurrency(self) -> int: ...
    @property
    def duration_s(self) -> float: ...
    @property
    def samples(self) -> Sequence[SampleLike]: ...


class BenchResultLike(Protocol):
    @property
    def runs(self) -> Sequence[RunLike]: ...
    @property
    def slo(self) -> Mapping[str, float]: ...


def distribution(values: Sequence[float]) -> Distribution:
    return Distribution(
        n=len(values),
        mean=mean(values),
        median=percentile(values, 50),
        p90=percentile(values, 90),
        p95=percentile(values, 95),
        p99=percentile(values, 99),
        std=stdev(values),
    )


def tpot_ms(sample: SampleLike) -> float | None:
    """Time per output token after the first; None for a request of fewer than two tokens."""
    if sample.latency_ms is None or sample.ttft_ms is None or sample.output_tokens < 2:
        return None
    return max(0.0, sample.latency_ms - sample.ttft_ms) / (sample.output_tokens - 1)


def meets(sample: SampleLike, slo: Mapping[str, float]) -> bool:
    """The request succeeded and met every objective (an objective it has no figure for is missed)."""
    if not sample.ok:
        return False
    figures = {"ttft_ms": sample.ttft_ms, "tpot_ms": tpot_ms(sample), "e2e_ms": sample.latency_ms}
    for key, bound in slo.items():
        value = figures.get(key)
        if key == "tpot_ms" and value is None and sample.output_tokens == 1:
            continue  # a one-token answer has no time per output token to miss
        if value is None or value > bound:
            return False
    return True


def serving_metrics(samples: Sequence[SampleLike], duration_s: float, slo: Mapping[str, float] | None = None) -> ServingMetrics:
    good = [s for s in samples if s.ok]
    tpots = [t for s in good if (t := tpot_ms(s)) is not None]
    goodput = good_fraction = None
    if slo:
        met = sum(1 for s in samples if meets(s, slo))
        goodput = met / duration_s if duration_s > 0 else 0.0
        good_fraction = met / len(samples) if samples else None
    return ServingMetrics(
        ttft_ms=distribution([s.ttft_ms for s in good if s.ttft_ms is not None]),
        tpot_ms=distribution(tpots),
        itl_ms=distribution([gap for s in good for gap in s.itl_ms]),
        e2e_ms=distribution([s.latency_ms for s in good if s.latency_ms is not None]),
        request_throughput=len(good) / duration_s if duration_s > 0 else 0.0,
        goodput=goodput,
        good_fraction=good_fraction,
    )


def level_serving(result: BenchResultLike) -> list[tuple[int, ServingMetrics]]:
    """Per level, the serving metrics of every timed request of every repeat pooled (levels without samples left out)."""
    levels: dict[int, tuple[list[SampleLike], float]] = {}
    for run in result.runs:
        if run.samples:
            samples, duration = levels.get(run.concurrency, ([], 0.0))
            levels[run.concurrency] = ([*samples, *run.samples], duration + run.duration_s)
    return [(c, serving_metrics(s, d, result.slo)) for c, (s, d) in sorted(levels.items())]


def parse_slo(items: Sequence[str]) -> dict[str, float]:
    """``["ttft_ms=200", "tpot_ms=50"]`` -> ``{"ttft_ms": 200.0, "tpot_ms": 50.0}``; one clear error otherwise."""
    slo: dict[str, float] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip().lower()
        if not sep or key not in SLO_KEYS:
            raise BenchInputError(f"--slo wants KEY=MILLISECONDS with KEY one of {', '.join(SLO_KEYS)}, not {item!r}")
        try:
            bound = float(text)
        except ValueError:
            raise BenchInputError(f"--slo {key}: {text!r} is not a number of milliseconds") from None
        if not math.isfinite(bound) or not 0 < bound <= MAX_SLO_MS:
            raise BenchInputError(f"--slo {key}: wants a positive number of milliseconds up to {MAX_SLO_MS:.0f}, not {text!r}")
        slo[key] = bound
    return slo
