"""Sessions as a level of the model: the change between two sides of one or more sessions each.

A figure of repeat ``i`` of session ``j`` is, on the log scale, ``mu + s_j + e_ji``: ``s_j`` is the
session's own offset (``sigma_B``, between sessions: what a new process, new connections or a drift
over tens of seconds add, what repeats inside one session cannot see) and ``e_ji`` the repeat's
(``sigma_W``, within a session); the split of ISO 5725 (repeatability and reproducibility) and of a
one-way random-effects ANOVA. A side's estimate is the mean of its session means; a session mean of
n repeats varies by ``tau^2 = sigma_B^2 + sigma_W^2 / n``, so the difference of two sides of k_b and
k_n sessions varies by ``tau^2 (1/k_b + 1/k_n)``. How ``tau^2`` is estimated:

- **calibrated**: the variance of the calibration's session means (its ANOVA's MSB / n0, degrees of
  freedom K - 1), plus the within part that fewer repeats add (MSW (1/n - 1/n0), never a credit for
  more), pooled with every side compared that has two sessions or more (the variance of its session
  means, df k - 1), weighted by degrees of freedom. Under "no change" the sessions compared are
  sessions like the calibration's, and the t statistic is exact (Student, df K - 1 + ...);
- **sessions** (no calibration, a side with two sessions or more): the pooled variance of the session
  means of the sides compared, the session is the unit;
- **assumed** (``--session-cv``, or the conservative default with one session a side): ``sigma_B``
  taken as known, plus each side's within-session variance over its repeats (Welch-Satterthwaite).
The variance is never below what the repeats of the sessions compared show on their own (Welch on
their within-session spread), with that estimate's degrees of freedom when it is the larger. With one
session a side and ``sigma_B = 0`` assumed, this is exactly Welch's interval on the repeats.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from statistics import NormalDist
from typing import Literal

from rigaudit.tools.bench.stats import (
    CORNISH_FISHER_DF,
    MAX_REPEATS_ADVISED,
    Estimate,
    betainc,
    growth,
    t_quantile,
    t_two_sided_p,
)
from rigaudit.tools.core.record import Record

Source = Literal["calibrated", "assumed", "sessions", "none"]
"""Where ``sigma_B`` came from: a stored calibration (pooled with the sessions compared, if several),
an assumption (``--session-cv`` or the default), the sessions compared alone, or nowhere (zero)."""


class MeanSquares(Record):
    """A one-way ANOVA of sessions (log scale): between and within mean squares and their degrees of freedom."""

    between: float
    within: float
    df_between: int
    df_within: int
    n0: float
    """The effective repeats per session ((N - sum n_j^2 / N) / (k - 1)); n when every session has n."""

    @property
    def component(self) -> float:
        """``sigma_B^2`` estimated, ``(MSB - MSW) / n0``, 0 when negative."""
        return max(0.0, (self.between - self.within) / self.n0)

    @property
    def f_p(self) -> float:
        """The p-value of "no session effect" (F = MSB / MSW on df_between, df_within)."""
        if self.within <= 0:
            return 0.0 if self.between > 0 else 1.0
        return f_upper(self.between / self.within, self.df_between, self.df_within)


def f_upper(f: float, d1: float, d2: float) -> float:
    """P(F >= f) for Fisher's F on (d1, d2) degrees of freedom."""
    if f <= 0:
        return 1.0
    return betainc(d2 / 2.0, d1 / 2.0, d2 / (d2 + d1 * f))


def _logs(values: Sequence[float]) -> list[float]:
    return [math.log(v) for v in values if v > 0 and math.isfinite(v)]


def log_sessions(sessions: Sequence[Sequence[float]]) -> list[list[float]]:
    """Each session's positive, finite figures on the log scale; sessions left with none are dropped."""
    return [logs for logs in (_logs(s) for s in sessions) if logs]


def _ss(values: Sequence[float]) -> float:
    mid = math.fsum(values) / len(values)
    return math.fsum((v - mid) ** 2 for v in values)


def pooled_within(sessions: Sequence[Sequence[float]]) -> tuple[float, int]:
    """(the pooled within-session variance, its degrees of freedom); (0, 0) when no session has two figures."""
    df = sum(len(s) - 1 for s in sessions)
    if df <= 0:
        return 0.0, 0
    return math.fsum(_ss(s) for s in sessions if len(s) > 1) / df, df


def anova(sessions: Sequence[Sequence[float]]) -> MeanSquares | None:
    """The ANOVA of sessions already on the log scale; None under two sessions or without within degrees of freedom."""
    k = len(sessions)
    within, df_within = pooled_within(sessions)
    if k < 2 or df_within <= 0:
        return None
    sizes = [len(s) for s in sessions]
    total = sum(sizes)
    grand = math.fsum(math.fsum(s) for s in sessions) / total
    between = math.fsum(len(s) * (math.fsum(s) / len(s) - grand) ** 2 for s in sessions) / (k - 1)
    n0 = (total - sum(n * n for n in sizes) / total) / (k - 1)
    return MeanSquares(between, within, k - 1, df_within, n0)


class Between(Record):
    """What is known of ``sigma_B`` before looking at the sessions compared."""

    source: Source
    squares: MeanSquares | None = None
    """For ``calibrated``: the calibration's ANOVA."""
    sd: float = 0.0
    """For ``assumed``: sigma_B (log scale, about the session CV), taken as known."""


NONE = Between("none")


class _Term(Record):
    coef: float
    ms: float
    df: float


def _satterthwaite(terms: dict[str, _Term]) -> tuple[float, float]:
    """(the value of sum coef * ms, Satterthwaite's degrees of freedom); df infinite for known terms only."""
    value = math.fsum(t.coef * t.ms for t in terms.values())
    denominator = math.fsum((t.coef * t.ms) ** 2 / t.df for t in terms.values() if math.isfinite(t.df) and t.df > 0)
    return value, (value * value / denominator if denominator > 0 else math.inf)


class Model(Record):
    """The fitted components of one comparison (log scale), kept to say what would narrow the interval."""

    between_sd: float
    """sigma_B used (0 when estimated negative, or none)."""
    between_df: float
    """Degrees of freedom of the sigma_B^2 estimate (infinite when assumed)."""
    within_sd: float
    """sigma_W, pooled over both sides."""
    within_df: int
    repeats: float
    """Mean repeats per session."""
    sessions: tuple[int, int]
    """Sessions on each side."""
    source: Source


def _add(terms: dict[str, _Term], name: str, coef: float, ms: float, df: float) -> None:
    old = terms.get(name)
    terms[name] = _Term(coef + (old.coef if old else 0.0), ms, df)


def _tau(sides: Sequence[Sequence[Sequence[float]]], between: Between, repeats: float) -> tuple[float, float] | None:
    """(tau^2, the variance of one session mean; its degrees of freedom): every estimate of it pooled by degrees of
    freedom (they estimate one variance, so the pooled degrees of freedom are their sum); None when nothing does."""
    pieces: list[tuple[float, float]] = []  # (value, df)
    if between.source == "calibrated" and between.squares is not None:
        sq = between.squares
        own = {"b": _Term(1.0 / sq.n0, sq.between, sq.df_between)}
        if repeats < sq.n0:  # fewer repeats than the calibration's sessions: their within part weighs more
            own["w"] = _Term(1.0 / repeats - 1.0 / sq.n0, sq.within, sq.df_within)
        pieces.append(_satterthwaite(own))
    for side in sides:
        if len(side) >= 2:
            means = [math.fsum(s) / len(s) for s in side]
            pieces.append((_ss(means) / (len(side) - 1), len(side) - 1.0))
    if not pieces:
        return None
    df = math.fsum(d for _, d in pieces)
    return math.fsum(v * d for v, d in pieces) / df, df


def nested(
    base: Sequence[Sequence[float]], new: Sequence[Sequence[float]], between: Between = NONE, *, confidence: float = 0.95
) -> tuple[Estimate, Model] | None:
    """The change from ``base`` to ``new`` (each a list of sessions of repeat figures) with sessions as a level.

    None when a side has no figure, or nothing tells how much its estimate varies.
    """
    sides = [log_sessions(base), log_sessions(new)]
    if not sides[0] or not sides[1]:
        return None
    ks = [len(s) for s in sides]
    spread = sum(1.0 / k for k in ks)  # 1/k_b + 1/k_n: how tau^2 enters the variance of the difference
    within = [pooled_within(s) for s in sides]
    repeats = sum(len(s) for side in sides for s in side) / sum(ks)
    terms_w: dict[str, _Term] = {}  # what the repeats of the sessions compared show on their own
    for name, side, (ms_w, df_w) in zip(("base", "new"), sides, within, strict=True):
        if df_w > 0:
            _add(terms_w, f"{name}.w", math.fsum(1.0 / len(s) for s in side) / len(side) ** 2, ms_w, df_w)
    df_within = within[0][1] + within[1][1]
    within_var = (within[0][0] * within[0][1] + within[1][0] * within[1][1]) / df_within if df_within else 0.0
    has_within = all(df > 0 for _, df in within)
    source: Source = between.source
    if between.source == "assumed":
        if not has_within:
            return None
        terms = dict(terms_w)
        _add(terms, "assumed", spread, between.sd**2, math.inf)
        between_sd, between_df = between.sd, math.inf
    else:
        tau = _tau(sides, between, repeats)
        if tau is None:
            if not has_within:
                return None
            terms, between_sd, between_df, source = dict(terms_w), 0.0, math.inf, "none"
        else:
            tau2, between_df = tau
            # sigma_B shown and used for advice: tau^2 less the within part, the calibration's repeats pooled in
            w_var, w_df = within_var, df_within
            if between.source == "calibrated" and between.squares is not None and between.squares.df_within > 0:
                sq = between.squares
                w_df = df_within + sq.df_within
                w_var = (within_var * df_within + sq.within * sq.df_within) / w_df
            between_sd = math.sqrt(max(0.0, tau2 - w_var / repeats)) if w_df else math.sqrt(tau2)
            source = "calibrated" if between.source == "calibrated" else "sessions"
            # never narrower than the repeats compared show on their own; the degrees of freedom stay tau's, so the
            # test only ever rejects less often than the exact t test on tau would
            shown = _satterthwaite(terms_w)[0] if has_within else 0.0
            variance, df = max(spread * tau2, shown), between_df
            return _finish(sides, variance, df, confidence, within_var, df_within, between_sd, between_df, repeats, source)
    variance, df = _satterthwaite(terms)
    return _finish(sides, variance, df, confidence, within_var, df_within, between_sd, between_df, repeats, source)


def _finish(
    sides: Sequence[Sequence[Sequence[float]]],
    variance: float,
    df: float,
    confidence: float,
    within_var: float,
    df_within: int,
    between_sd: float,
    between_df: float,
    repeats: float,
    source: Source,
) -> tuple[Estimate, Model]:
    ks = [len(s) for s in sides]
    diff = math.fsum(math.fsum(s) / len(s) for s in sides[1]) / ks[1] - math.fsum(math.fsum(s) / len(s) for s in sides[0]) / ks[0]
    within_sd = math.sqrt(within_var)
    model = Model(between_sd, between_df, within_sd, df_within, repeats, (ks[0], ks[1]), source)
    n_base, n_new = (sum(len(s) for s in side) for side in sides)
    noise = within_sd if df_within else between_sd
    return _estimate(diff, math.sqrt(max(variance, 0.0)), max(df, 1.0), confidence, noise, n_base, n_new), model


def quantile(p: float, df: float) -> float:
    """Student's t quantile, the normal one for infinite degrees of freedom."""
    return t_quantile(p, df) if math.isfinite(df) else NormalDist().inv_cdf(p)


def two_sided_p(t: float, df: float) -> float:
    return t_two_sided_p(t, df) if math.isfinite(df) else 2.0 * (1.0 - NormalDist().cdf(abs(t)))


def _estimate(diff: float, se: float, df: float, confidence: float, noise: float, nb: int, nn: int) -> Estimate:
    if se <= 0.0:
        exact = growth(diff)
        return Estimate(exact, exact, exact, 1.0 if diff == 0.0 else 0.0, df, noise, nb, nn)
    margin = quantile(0.5 + confidence / 2.0, df) * se
    p = two_sided_p(diff / se, df)
    return Estimate(growth(diff), growth(diff - margin), growth(diff + margin), p, df, noise, nb, nn)


# --- what would narrow the interval ------------------------------------------------------------------


def _spread(model: Model, k: int, n: float, between_df: float) -> tuple[float, float]:
    """(degrees of freedom, standard error) of the log-scale difference of k sessions a side of n repeats each."""
    between = model.between_sd**2 * 2.0 / k
    within = model.within_sd**2 * 2.0 / (k * n)
    dfw = 2.0 * k * max(n - 1.0, 1.0)
    den = (between**2 / between_df if math.isfinite(between_df) and between > 0 else 0.0) + within**2 / dfw
    df = max((between + within) ** 2 / den, 1.0) if den > 0 else math.inf
    return df, math.sqrt(between + within)


_SLACK = 1e-9
"""Far more than the quantiles' error (about 1e-12): a bound closer than this to the target does not decide."""


def _narrow_enough(model: Model, k: int, n: float, between_df: float, confidence: float, target: float) -> bool:
    """The interval's log-scale half-width is at most ``target``: ``quantile(p, df) * se <= target``.

    Student's quantile falls as the degrees of freedom grow, so the quantiles at the whole numbers either side of
    Welch's fractional df decide it, but for a target between them; then the exact quantile does. The answer is
    the exact comparison's; the whole numbers' quantiles are cached by ``t_quantile`` (below 100 there are few),
    where each fractional one is a fresh Newton search and a compare asks thousands.
    """
    df, se = _spread(model, k, n, between_df)
    p = 0.5 + confidence / 2.0
    if df < CORNISH_FISHER_DF - 1.0 and not df.is_integer():  # above, the exact quantile is a cheap expansion
        if quantile(p, float(math.floor(df))) * se <= target * (1.0 - _SLACK):
            return True
        if quantile(p, float(math.ceil(df))) * se > target * (1.0 + _SLACK):
            return False
    return quantile(p, df) * se <= target


def _smallest(low: int, high: int, fits: Callable[[int], bool]) -> int | None:
    """The smallest x in [low, high] for which ``fits`` holds (it holds for every larger x too); None if none."""
    if low > high or not fits(high):
        return None
    while low < high:
        middle = (low + high) // 2
        if fits(middle):
            high = middle
        else:
            low = middle + 1
    return low


def needed(
    model: Model, *, resolution: float, confidence: float, half_width: float | None = None
) -> tuple[int | None, int | None]:
    """(repeats per session at the sessions compared, sessions per side at the repeats compared) that would fit the
    interval within ±``resolution`` (or narrow its log-scale half-width to ``half_width``); None for what no number
    up to :data:`MAX_REPEATS_ADVISED` achieves."""
    target = math.log1p(resolution) if half_width is None else half_width
    if not target > 0:
        return None, None
    k = min(model.sessions)
    repeats = _smallest(2, MAX_REPEATS_ADVISED, lambda n: _narrow_enough(model, k, n, model.between_df, confidence, target))
    sessions = None
    if model.between_sd > 0:
        n = max(model.repeats, 2.0)
        sessions = _smallest(
            max(k, 2),
            MAX_REPEATS_ADVISED,
            lambda s: _narrow_enough(model, s, n, model.between_df + 2.0 * (s - k), confidence, target),
        )
    return repeats, sessions
