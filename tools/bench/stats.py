"""Small statistics for benchmark comparisons: percentiles, Student's t, Welch and paired intervals, Holm, trends.

Everything here works on the repeat as the unit: ``welch`` and ``paired`` take one figure per repeat
(output tok/s of one level in one repeat, say) and estimate the relative change of the geometric mean
on the log scale, where run-to-run drift is multiplicative. No numpy: Student's t comes from the
regularized incomplete beta function (Lentz's continued fraction), accurate to about 1e-12.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Sequence
from statistics import NormalDist

from rigaudit.tools.core.record import Record

MAX_REPEATS_ADVISED = 1000
"""``repeats_needed`` says "more than this" rather than searching further."""


_LARGEST_LOG = math.log(sys.float_info.max)


def growth(log_ratio: float) -> float:
    """``exp(log_ratio) - 1``: the relative change of a log-scale difference, saturating at the largest float
    instead of overflowing (result files are untrusted: figures 1e-300 and 1e300 apart must not raise)."""
    return math.expm1(min(log_ratio, _LARGEST_LOG))


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


def mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def stdev(values: Sequence[float]) -> float | None:
    """The sample standard deviation (n - 1); None with fewer than two values."""
    if len(values) < 2:
        return None
    mid = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - mid) ** 2 for v in values) / (len(values) - 1))


def relative_spread(values: Sequence[float]) -> float | None:
    """(max - min) / median of ``values``; None with fewer than two values or a zero median."""
    if len(values) < 2:
        return None
    mid = median(values)
    if not mid:
        return None
    return (max(values) - min(values)) / mid


# --- Student's t ------------------------------------------------------------------------------------


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for numerator in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom."""
    if math.isinf(t):
        return 0.0
    return min(1.0, betainc(df / 2.0, 0.5, df / (df + t * t)))


def t_density(t: float, df: float) -> float:
    """The density of Student's t with ``df`` degrees of freedom at ``t``."""
    log_norm = math.lgamma((df + 1.0) / 2.0) - math.lgamma(df / 2.0) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1.0) / 2.0 * math.log1p(t * t / df))


def _cornish_fisher(p: float, df: float) -> float:
    """Student's t quantile from the normal one, four terms in 1/df (Abramowitz & Stegun 26.7.5): within 1e-8 for df >= 100."""
    z = NormalDist().inv_cdf(p)
    terms = (
        (z**3 + z) / 4.0,
        (5 * z**5 + 16 * z**3 + 3 * z) / 96.0,
        (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384.0,
        (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160.0,
    )
    return z + math.fsum(term / df ** (i + 1) for i, term in enumerate(terms))


CORNISH_FISHER_DF = 100.0
"""From these degrees of freedom on (and p <= 0.9999), ``t_quantile`` is the Cornish-Fisher expansion."""


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile (0.5 <= p < 1) of Student's t with ``df`` degrees of freedom.

    Newton's method on the two-sided tail from the normal quantile, kept inside a bracket (bisection
    when a step would leave it): a few iterations to 1e-12.
    """
    if not 0.5 <= p < 1.0 or df <= 0:
        raise ValueError(f"t_quantile wants 0.5 <= p < 1 and df > 0, not p={p}, df={df}")
    if p == 0.5:
        return 0.0
    if df >= CORNISH_FISHER_DF and p <= 0.9999:
        return _cornish_fisher(p, df)
    target = 2.0 * (1.0 - p)  # the two-sided tail beyond the quantile
    low, high = 0.0, 1.0
    while t_two_sided_p(high, df) > target:
        low, high = high, high * 2.0
    t = min(max(NormalDist().inv_cdf(p), low), high)
    for _ in range(100):
        excess = t_two_sided_p(t, df) - target  # > 0: t is too small
        if abs(excess) < 1e-15:
            return t  # converged: return this t, not the next step (a bisection when Newton's step stalls on a bound)
        if excess > 0:
            low = t
        else:
            high = t
        step = t + excess / (2.0 * t_density(t, df))
        t = step if low < step < high else (low + high) / 2.0
        if high - low < 1e-12 * max(1.0, high):
            break
    return t


# --- the change between two sets of repeats --------------------------------------------------------


class Estimate(Record):
    """The relative change of the geometric mean from base to new, with its interval and p-value."""

    change: float
    """new / base - 1 (of the geometric means; for ``paired``, the geometric mean of the ratios)."""
    low: float
    high: float
    """The interval of ``change`` at the requested confidence."""
    p: float
    """Two-sided p-value of "no change" (before any multiplicity correction)."""
    df: float
    noise: float
    """The spread of one repeat on the log scale (about the coefficient of variation): pooled SD for
    ``welch``, SD of the per-pair log ratios for ``paired``."""
    n_base: int
    n_new: int
    paired: bool = False

    @property
    def half_width(self) -> float:
        """Half the interval's width on the log scale (0.095 is about ±10%)."""
        low = math.log1p(self.low) if self.low > -1.0 else -math.inf  # a change too large for a float: infinitely wide
        return (math.log1p(self.high) - low) / 2.0


def _logs(values: Sequence[float]) -> list[float]:
    return [math.log(v) for v in values if v > 0 and math.isfinite(v)]


def _estimate(diff: float, se: float, df: float, confidence: float, noise: float, nb: int, nn: int, paired: bool) -> Estimate:
    if se <= 0.0:  # identical repeats on both sides: the change is exact
        p = 1.0 if diff == 0.0 else 0.0
        return Estimate(growth(diff), growth(diff), growth(diff), p, df, noise, nb, nn, paired)
    t = diff / se
    margin = t_quantile(0.5 + confidence / 2.0, df) * se
    return Estimate(growth(diff), growth(diff - margin), growth(diff + margin), t_two_sided_p(t, df), df, noise, nb, nn, paired)


def welch(base: Sequence[float], new: Sequence[float], *, confidence: float = 0.95) -> Estimate | None:
    """Welch's t interval on the log of each repeat's figure; None unless both sides have two positive repeats."""
    b, n = _logs(base), _logs(new)
    if len(b) < 2 or len(n) < 2:
        return None
    vb, vn = stdev(b) ** 2 / len(b), stdev(n) ** 2 / len(n)  # type: ignore[operator]
    se = math.sqrt(vb + vn)
    diff = math.fsum(n) / len(n) - math.fsum(b) / len(b)
    df = (vb + vn) ** 2 / (vb**2 / (len(b) - 1) + vn**2 / (len(n) - 1)) if se > 0 else float(len(b) + len(n) - 2)
    pooled = math.sqrt(((len(b) - 1) * vb * len(b) + (len(n) - 1) * vn * len(n)) / (len(b) + len(n) - 2))
    return _estimate(diff, se, max(df, 1.0), confidence, pooled, len(b), len(n), False)


def paired(base: Sequence[float], new: Sequence[float], *, confidence: float = 0.95) -> Estimate | None:
    """The paired t interval on the log ratio new_i / base_i (pair i measured side by side); None under two pairs."""
    pairs = [(b, n) for b, n in zip(base, new, strict=False) if b > 0 and n > 0 and math.isfinite(b) and math.isfinite(n)]
    if len(pairs) < 2:
        return None
    ratios = [math.log(n) - math.log(b) for b, n in pairs]
    sd = stdev(ratios)
    assert sd is not None
    se = sd / math.sqrt(len(ratios))
    return _estimate(math.fsum(ratios) / len(ratios), se, float(len(ratios) - 1), confidence, sd, len(pairs), len(pairs), True)


def repeats_needed(noise: float, *, resolution: float, confidence: float, paired: bool = False) -> int | None:
    """Repeats per side for an interval no wider than ±``resolution`` at this ``noise`` (log-scale SD of one
    repeat); None when more than :data:`MAX_REPEATS_ADVISED` would be needed."""
    return repeats_for(noise, half_width=math.log1p(resolution), confidence=confidence, paired=paired)


def repeats_for(noise: float, *, half_width: float, confidence: float, paired: bool = False) -> int | None:
    """Repeats per side for an interval whose half-width on the log scale is at most ``half_width``; None when
    that takes more than :data:`MAX_REPEATS_ADVISED` (or ``half_width`` is not positive)."""
    target = half_width
    if not target > 0:
        return None
    for n in range(2, MAX_REPEATS_ADVISED + 1):
        df = float(n - 1 if paired else 2 * n - 2)
        spread = noise / math.sqrt(n) if paired else noise * math.sqrt(2.0 / n)
        if t_quantile(0.5 + confidence / 2.0, df) * spread <= target:
            return n
    return None


def holm(pvalues: Sequence[float | None], weights: Sequence[float] | None = None) -> list[float | None]:
    """Holm's step-down adjusted p-values (family-wise error control), optionally weighted; None entries are not tested.

    With weights (Holm 1979), hypothesis i is tested at ``alpha * w_i / (sum of the weights not yet
    rejected)``: a heavier hypothesis (a headline metric) gets more of the error budget, and the
    family-wise error rate stays at most alpha whatever the weights.
    """
    w = list(weights) if weights is not None else [1.0] * len(pvalues)
    if len(w) != len(pvalues) or any(x <= 0 for x in w):
        raise ValueError("holm wants one positive weight per p-value")
    tested = sorted((p / w[i], i) for i, p in enumerate(pvalues) if p is not None)
    remaining = math.fsum(w[i] for _, i in tested)
    adjusted: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for _, index in tested:
        p = pvalues[index]
        assert p is not None
        running = max(running, min(1.0, p * remaining / w[index]))
        adjusted[index] = running
        remaining -= w[index]
    return adjusted


# --- drift within one session -----------------------------------------------------------------------


class Trend(Record):
    """A linear trend of log(figure) over time within a session, each group (a level, an arm) around its own mean."""

    per_step: float
    """Relative change per unit of ``x`` (per run, or per second)."""
    total: float
    """Relative change from the first to the last ``x``."""
    p: float
    df: int


def trend(points: Sequence[tuple[str, float, float]]) -> Trend | None:
    """Fit log(y) = group mean + slope * x by least squares over ``(group, x, y)`` points.

    None when there are too few points (fewer than two residual degrees of freedom) or no spread in x.
    """
    groups: dict[str, list[tuple[float, float]]] = {}
    for group, x, y in points:
        if y > 0 and math.isfinite(y) and math.isfinite(x):
            groups.setdefault(group, []).append((x, math.log(y)))
    centered: list[tuple[float, float]] = []
    for members in groups.values():
        mx = math.fsum(x for x, _ in members) / len(members)
        my = math.fsum(y for _, y in members) / len(members)
        centered += [(x - mx, y - my) for x, y in members]
    df = len(centered) - len(groups) - 1
    sxx = math.fsum(x * x for x, _ in centered)
    if df < 2 or sxx <= 0:
        return None
    slope = math.fsum(x * y for x, y in centered) / sxx
    residual = math.fsum((y - slope * x) ** 2 for x, y in centered) / df
    se = math.sqrt(residual / sxx)
    span = max(x for _, x, _ in points) - min(x for _, x, _ in points)
    p = t_two_sided_p(slope / se, df) if se > 0 else (0.0 if slope else 1.0)
    return Trend(growth(slope), growth(slope * span), p, df)
