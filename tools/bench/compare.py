"""Compare two inference benchmark results: per concurrency level, the change with a bootstrap interval.

The interval resamples repeats, then requests within each repeat (seeded: the same files give the
same answer). A change counts only when its 95% interval excludes zero and it exceeds the noise
floor. The baseline is checked too: repeats that disagree (the story's 38 vs 66 tok/s at one level
with nothing changed) or a slow first repeat or first requests (warm-up) are reported as warnings.

Statistics: output tok/s is the mean over repeats of (tokens / level wall time), each request
contributing its tokens; TTFT p50 is the median over requests; ITL p50 is the median over requests
of each request's median gap (resampling whole requests keeps a request's gaps together). Results
without samples (external tools) are compared on their repeats' figures alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal

from rigaudit.tools.bench.results import BenchResult, Run
from rigaudit.tools.bench.stats import bootstrap_change, median, relative_spread

COMPARE_SCHEMA = "rigaudit.compare/1"
Verdict = Literal["improved", "regressed", "no significant change", "not enough data"]
MetricName = Literal["output_tokens_per_s", "ttft_ms_p50", "itl_ms_p50"]
METRICS: tuple[MetricName, ...] = ("output_tokens_per_s", "ttft_ms_p50", "itl_ms_p50")
HIGHER_IS_BETTER = {"output_tokens_per_s": True, "ttft_ms_p50": False, "itl_ms_p50": False}


@dataclass(frozen=True)
class MetricChange:
    metric: MetricName
    base: float | None
    new: float | None
    change: float | None
    """Relative change (new - base) / base."""
    ci_low: float | None
    ci_high: float | None
    verdict: Verdict


@dataclass(frozen=True)
class LevelComparison:
    concurrency: int
    base_repeats: int
    new_repeats: int
    metrics: list[MetricChange]
    verdict: Verdict
    """The verdict on output tokens/s, the figure a change is meant to move."""


@dataclass(frozen=True)
class Comparison:
    levels: list[LevelComparison]
    warnings: list[str] = field(default_factory=list)
    noise_floor: float = 0.05
    confidence: float = 0.95
    seed: int = 0
    schema: str = COMPARE_SCHEMA

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


Groups = list[list[float]]


def _throughput_groups(runs: Sequence[Run]) -> Groups:
    groups: Groups = []
    for run in runs:
        if run.samples and run.duration_s > 0:
            groups.append([(s.output_tokens if s.ok else 0) / run.duration_s for s in run.samples])
        else:
            groups.append([run.output_tokens_per_s])
    return groups


def _ttft_groups(runs: Sequence[Run]) -> Groups:
    groups: Groups = []
    for run in runs:
        values = [s.ttft_ms for s in run.samples if s.ok and s.ttft_ms is not None]
        groups.append(values if values else [run.ttft_ms_p50] if run.ttft_ms_p50 is not None else [])
    return [g for g in groups if g]


def _itl_groups(runs: Sequence[Run]) -> Groups:
    groups: Groups = []
    for run in runs:
        values = [m for s in run.samples if s.ok and s.itl_ms for m in [median(s.itl_ms)] if m is not None]
        groups.append(values if values else [run.itl_ms_p50] if run.itl_ms_p50 is not None else [])
    return [g for g in groups if g]


def _mean_of_sums(groups: Sequence[Sequence[float]]) -> float | None:
    return sum(sum(g) for g in groups) / len(groups) if groups else None


def _pooled_median(groups: Sequence[Sequence[float]]) -> float | None:
    return median([v for g in groups for v in g])


_HOW: dict[MetricName, tuple[Callable[[Sequence[Run]], Groups], Callable[[Sequence[Sequence[float]]], float | None]]] = {
    "output_tokens_per_s": (_throughput_groups, _mean_of_sums),
    "ttft_ms_p50": (_ttft_groups, _pooled_median),
    "itl_ms_p50": (_itl_groups, _pooled_median),
}


def _verdict(metric: MetricName, change: float | None, ci: tuple[float, float] | None, floor: float) -> Verdict:
    if change is None or ci is None:
        return "not enough data"
    low, high = ci
    better = HIGHER_IS_BETTER[metric]
    if low > 0 and change > floor:
        return "improved" if better else "regressed"
    if high < 0 and change < -floor:
        return "regressed" if better else "improved"
    return "no significant change"


def compare_metric(
    metric: MetricName, base: Sequence[Run], new: Sequence[Run], *, seed: int, resamples: int, confidence: float, floor: float
) -> MetricChange:
    groups_of, statistic = _HOW[metric]
    base_groups, new_groups = groups_of(base), groups_of(new)
    b, n = statistic(base_groups), statistic(new_groups)
    change = (n - b) / b if b and n is not None else None
    ci = bootstrap_change(base_groups, new_groups, statistic, resamples=resamples, seed=seed, confidence=confidence)
    return MetricChange(metric, b, n, change, ci[0] if ci else None, ci[1] if ci else None, _verdict(metric, change, ci, floor))


def _by_level(result: BenchResult) -> dict[int, list[Run]]:
    levels: dict[int, list[Run]] = {}
    for run in result.runs:
        levels.setdefault(run.concurrency, []).append(run)
    return levels


def stability_warnings(result: BenchResult, label: str, *, unstable_spread: float = 0.10, warmup_drop: float = 0.15) -> list[str]:
    """Warnings about one result on its own: repeats that disagree, a slow first repeat or first requests."""
    warnings: list[str] = []
    for concurrency, runs in sorted(_by_level(result).items()):
        rates = [r.output_tokens_per_s for r in runs]
        spread = relative_spread(rates)
        if spread is not None and spread > unstable_spread:
            warnings.append(
                f"{label} unstable at concurrency {concurrency}: output tok/s ranged {min(rates):.1f}–{max(rates):.1f} "
                f"over {len(rates)} repeats (spread {spread:.0%}, above {unstable_spread:.0%}); a change smaller than "
                "that spread is noise: find the cause (warm-up, other load, clocks) before trusting a comparison"
            )
        rest = median(rates[1:]) if len(rates) >= 2 else None
        if rest and rates[0] < (1.0 - warmup_drop) * rest:
            warnings.append(
                f"{label}: the first repeat at concurrency {concurrency} ran {1 - rates[0] / rest:.0%} slower than the "
                f"others ({rates[0]:.1f} vs {rest:.1f} tok/s): the server was warming up; use --warmup"
            )
    if result.runs:
        first = result.runs[0]
        ttfts = [s.ttft_ms for s in first.samples if s.ok and s.ttft_ms is not None]
        head = max(1, min(first.concurrency, len(ttfts) // 4))
        early, later = median(ttfts[:head]), median(ttfts[head:])
        if len(ttfts) - head >= 3 and early is not None and later and early > 2.0 * later:
            warnings.append(
                f"{label}: the first {head} request(s) waited {early:.0f} ms for their first token against {later:.0f} ms "
                f"for the rest of the level (concurrency {first.concurrency}): warm-up (CUDA graphs, caches, JIT); "
                f"use --warmup {max(head, 2)}"
            )
    return warnings


def compare(
    base: BenchResult,
    new: BenchResult,
    *,
    seed: int = 0,
    resamples: int = 1000,
    confidence: float = 0.95,
    noise_floor: float = 0.05,
    unstable_spread: float = 0.10,
) -> Comparison:
    base_levels, new_levels = _by_level(base), _by_level(new)
    warnings = stability_warnings(base, "baseline", unstable_spread=unstable_spread)
    warnings += stability_warnings(new, "new run", unstable_spread=unstable_spread)
    for name, only in (("baseline", set(base_levels) - set(new_levels)), ("new run", set(new_levels) - set(base_levels))):
        if only:
            warnings.append(f"concurrency {', '.join(map(str, sorted(only)))} only in the {name}: not compared")
    levels: list[LevelComparison] = []
    for concurrency in sorted(set(base_levels) & set(new_levels)):
        b, n = base_levels[concurrency], new_levels[concurrency]
        metrics = [
            compare_metric(m, b, n, seed=seed + i, resamples=resamples, confidence=confidence, floor=noise_floor)
            for i, m in enumerate(METRICS)
        ]
        levels.append(LevelComparison(concurrency, len(b), len(n), metrics, metrics[0].verdict))
    if levels and min(min(lv.base_repeats, lv.new_repeats) for lv in levels) < 2:
        warnings.append(
            "one repeat per level on at least one side: run-to-run spread is unknown and the interval covers "
            "request-to-request variation only; run both with --repeat 3 for a verdict that holds across runs"
        )
    return Comparison(levels, warnings, noise_floor, confidence, seed)
