"""Small statistics: percentiles, spread, and a seedable hierarchical bootstrap."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0..100) with linear interpolation (numpy's default); None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    if len(ordered) == 1:
        return float(ordered[0])
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (rank - low))


def median(values: Sequence[float]) -> float | None:
    return percentile(values, 50.0)


def relative_spread(values: Sequence[float]) -> float | None:
    """(max - min) / median of ``values``; None with fewer than two values or a zero median."""
    if len(values) < 2:
        return None
    mid = median(values)
    if not mid:
        return None
    return (max(values) - min(values)) / mid


def resample_groups(groups: Sequence[Sequence[T]], rng: random.Random) -> list[list[T]]:
    """Resample repeats with replacement, then the observations within each chosen repeat.

    ``groups[r][i]`` is observation ``i`` (a request) of repeat ``r``.
    """
    chosen = [groups[rng.randrange(len(groups))] for _ in groups]
    return [rng.choices(group, k=len(group)) if group else [] for group in chosen]


def bootstrap_change(
    base: Sequence[Sequence[T]],
    new: Sequence[Sequence[T]],
    statistic: Callable[[Sequence[Sequence[T]]], float | None],
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float] | None:
    """A percentile bootstrap interval of the relative change (new - base) / base of ``statistic``.

    Both sides are resampled hierarchically (repeats, then requests within a repeat), with a
    seeded generator: the same inputs and seed give the same interval.
    None when either side has no data or the statistic is undefined too often.
    """
    if not base or not new:
        return None
    rng = random.Random(seed)
    changes: list[float] = []
    for _ in range(resamples):
        b = statistic(resample_groups(base, rng))
        n = statistic(resample_groups(new, rng))
        if b is None or n is None or b == 0:
            continue
        changes.append((n - b) / b)
    if len(changes) < resamples // 2:
        return None
    tail = (1.0 - confidence) / 2.0 * 100.0
    low = percentile(changes, tail)
    high = percentile(changes, 100.0 - tail)
    assert low is not None and high is not None
    return low, high
