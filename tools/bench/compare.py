"""Compare benchmark results with the repeat as the unit: per level and metric, a change, its interval, a verdict.

The method (also in ``bench compare --help`` and every report):
- One figure per repeat and level: output tok/s (the headline), the TTFT median, the ITL median.
  Requests inside a repeat are not independent measurements of the configuration: the repeat-to-
  repeat drift is the noise that matters, so each repeat counts once.
- The change is the ratio of geometric means, with Welch's t interval on the log of the repeats'
  figures (``bench ab`` pairs the A and B runs of each cycle: a paired t interval on the log ratios).
- The p-values of every level and metric shown form one family, adjusted with Holm's weighted
  step-down procedure: the headline carries 2/3 of each level's weight. The chance of calling any
  change between two identical configurations stays below 1 - confidence.
- A change counts ("improved" / "regressed") when its adjusted p is below 1 - confidence and it is
  at least the noise floor. Otherwise "no significant change" needs the interval to lie within
  ±resolution; a wider one is "not enough repeats", with the number per side that the observed
  spread would need (as benchstat's "need >= 6 samples").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal

from rigaudit.tools.bench.drift import Drift, by_level, session_drift, stability_warnings
from rigaudit.tools.bench.like import WorkloadMismatch, differences
from rigaudit.tools.bench.results import BenchResult, Run
from rigaudit.tools.bench.stats import Estimate, holm, paired, repeats_needed, stdev, welch

COMPARE_SCHEMA = "rigaudit.compare/2"
Verdict = Literal["improved", "regressed", "no significant change", "not enough repeats"]
MetricName = Literal["output_tokens_per_s", "ttft_ms_p50", "itl_ms_p50"]
METRICS: tuple[MetricName, ...] = ("output_tokens_per_s", "ttft_ms_p50", "itl_ms_p50")
HEADLINE: MetricName = "output_tokens_per_s"
HIGHER_IS_BETTER = {"output_tokens_per_s": True, "ttft_ms_p50": False, "itl_ms_p50": False}
LABELS = {"output_tokens_per_s": "output tok/s", "ttft_ms_p50": "TTFT p50", "itl_ms_p50": "ITL p50"}
HEADLINE_WEIGHT = 4.0
"""Holm weight of the headline; every other metric weighs 1 (with two others: 2/3 of a level's weight)."""
METHOD = (
    "the repeat is the unit: each repeat's figure per level counts once; change = ratio of geometric means with a "
    "{interval} on the log scale; p-values of every level and metric shown adjusted together (Holm, weighted: output "
    "tok/s carries 2/3 of each level); a change counts when its adjusted p < {alpha:g} and it is at least the "
    "{floor:.0%} noise floor; 'no significant change' needs the {confidence:.0%} interval within ±{resolution:.0%}, "
    "else 'not enough repeats' with the repeats the observed spread needs"
)


@dataclass(frozen=True)
class Settings:
    """How sure, and about what size of change. Bounds are checked by :func:`check_settings`."""

    confidence: float = 0.95
    noise_floor: float = 0.05
    """The smallest relative change that counts."""
    resolution: float = 0.10
    """The widest half-interval (relative) that supports "no significant change"."""

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence


def check_settings(settings: Settings) -> str | None:
    """Why these settings cannot be used (one line), or None."""
    if not 0.5 <= settings.confidence <= 0.999:
        return f"--confidence is a fraction from 0.5 to 0.999, not {settings.confidence:g}"
    if not 0.0 <= settings.noise_floor <= 0.5:
        return f"--noise-floor is a fraction from 0 to 0.5, e.g. 0.05, not {settings.noise_floor:g}"
    if not 0.01 <= settings.resolution <= 1.0:
        return f"--resolution is a fraction from 0.01 to 1, e.g. 0.10, not {settings.resolution:g}"
    return None


def method(settings: Settings, *, paired_design: bool = False) -> str:
    interval = "paired t interval over the A/B cycles" if paired_design else "Welch t interval"
    return METHOD.format(
        interval=interval,
        alpha=settings.alpha,
        floor=settings.noise_floor,
        confidence=settings.confidence,
        resolution=settings.resolution,
    )


@dataclass(frozen=True)
class MetricChange:
    metric: MetricName
    base: float | None
    """Geometric mean over the base repeats."""
    new: float | None
    change: float | None
    """Relative change new / base - 1."""
    ci_low: float | None
    ci_high: float | None
    p: float | None
    p_adjusted: float | None
    """Holm-adjusted over the whole comparison."""
    noise: float | None
    """The spread of one repeat (log-scale SD, about its coefficient of variation)."""
    repeats_needed: int | None
    """For "not enough repeats": repeats per side (pairs in an A/B) the observed spread needs; None if unknown."""
    verdict: Verdict
    reason: str = ""
    headline: bool = False

    @property
    def label(self) -> str:
        if self.verdict != "not enough repeats":
            return self.verdict
        return f"not enough repeats (need >= {self.repeats_needed})" if self.repeats_needed else "not enough repeats"


@dataclass(frozen=True)
class LevelComparison:
    concurrency: int
    base_repeats: int
    new_repeats: int
    metrics: list[MetricChange]
    verdict: Verdict
    """The headline's verdict (output tok/s, the figure a change is meant to move)."""

    @property
    def headline(self) -> MetricChange:
        return self.metrics[0]


@dataclass(frozen=True)
class Comparison:
    levels: list[LevelComparison]
    warnings: list[str] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)
    """Workload differences accepted with ``--allow-different`` (empty: like with like)."""
    drift: list[Drift] = field(default_factory=list)
    """Trends within each session (reported or not)."""
    method: str = ""
    confidence: float = 0.95
    noise_floor: float = 0.05
    resolution: float = 0.10
    schema: str = COMPARE_SCHEMA

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def regressions(self) -> list[LevelComparison]:
        """Levels whose headline metric regressed significantly."""
        return [level for level in self.levels if level.verdict == "regressed"]


def metric_value(run: Run, metric: MetricName) -> float | None:
    value = getattr(run, metric)
    return float(value) if isinstance(value, (int, float)) else None


def _positive(run: Run, metric: MetricName) -> float | None:
    value = metric_value(run, metric)
    return value if value is not None and value > 0 else None


def repeat_values(runs: Sequence[Run], metric: MetricName) -> list[float]:
    """One figure per repeat, in repeat order (repeats without the figure, or of zero, left out)."""
    return [v for r in sorted(runs, key=lambda r: r.repeat) if (v := _positive(r, metric)) is not None]


@dataclass(frozen=True)
class Contrast:
    """One planned test: a metric's repeat figures on both sides (paired: position i of each side ran together)."""

    metric: MetricName
    base: Sequence[float]
    new: Sequence[float]
    is_paired: bool = False


def _geomean(values: Sequence[float]) -> float | None:
    return math.exp(math.fsum(math.log(v) for v in values) / len(values)) if values else None


def _spread(values: Sequence[float]) -> float | None:
    return stdev([math.log(v) for v in values]) if len(values) >= 2 else None


def _estimate(test: Contrast, confidence: float) -> Estimate | None:
    if test.is_paired:
        return paired(test.base, test.new, confidence=confidence)
    return welch(test.base, test.new, confidence=confidence)


def _need_text(needed: int | None) -> str:
    return f"about {needed} repeats per side would" if needed else "more than 1,000 repeats per side would"


def _verdict(test: Contrast, est: Estimate | None, p_adj: float | None, settings: Settings) -> MetricChange:
    base, new = _geomean(test.base), _geomean(test.new)
    headline = test.metric == HEADLINE
    if est is None or p_adj is None:
        spreads = [s for s in (_spread(test.base), _spread(test.new)) if s is not None]
        noise = max(spreads) if spreads else None
        needed = None
        if noise is None:
            reason = "fewer than two repeats on each side: the run-to-run spread is unknown; run at least --repeat 3"
        else:
            needed = repeats_needed(noise, resolution=settings.resolution, confidence=settings.confidence, paired=test.is_paired)
            reason = f"fewer than two repeats on one side; at the other side's spread ({noise:.1%}) {_need_text(needed)} do"
        change = new / base - 1.0 if base and new is not None else None
        return MetricChange(
            test.metric, base, new, change, None, None, None, None, noise, needed, "not enough repeats", reason, headline
        )
    better = HIGHER_IS_BETTER[test.metric]
    significant = p_adj < settings.alpha
    common = (test.metric, base, new, est.change, est.low, est.high, est.p, p_adj, est.noise)
    if significant and abs(est.change) >= settings.noise_floor:
        verdict: Verdict = "improved" if (est.change > 0) == better else "regressed"
        return MetricChange(*common, None, verdict, "", headline)
    if est.half_width <= math.log1p(settings.resolution):
        reason = (
            f"a significant change of {est.change:+.1%} is below the {settings.noise_floor:.0%} noise floor"
            if significant
            else f"the interval lies within ±{settings.resolution:.0%}"
        )
        return MetricChange(*common, None, "no significant change", reason, headline)
    needed = repeats_needed(est.noise, resolution=settings.resolution, confidence=settings.confidence, paired=test.is_paired)
    reason = (
        f"the {settings.confidence:.0%} interval is ±{math.expm1(est.half_width):.0%}, wider than ±{settings.resolution:.0%}; "
        f"at the observed spread of {est.noise:.1%} per repeat {_need_text(needed)} narrow it enough"
    )
    return MetricChange(*common, needed, "not enough repeats", reason, headline)


def judge(tests: Sequence[Contrast], settings: Settings) -> list[MetricChange]:
    """Every test's verdict, with Holm's weighted adjustment over all of them together."""
    estimates = [_estimate(t, settings.confidence) for t in tests]
    weights = [HEADLINE_WEIGHT if t.metric == HEADLINE else 1.0 for t in tests]
    adjusted = holm([e.p if e is not None else None for e in estimates], weights)
    return [_verdict(t, e, a, settings) for t, e, a in zip(tests, estimates, adjusted, strict=True)]


def level_tests(base: Sequence[Run], new: Sequence[Run], *, is_paired: bool = False) -> list[Contrast]:
    """The tests of one level: every metric, headline first; metrics absent on both sides are left out.

    ``is_paired``: ``base[i]`` and ``new[i]`` ran in the same A/B cycle."""
    tests = []
    for metric in METRICS:
        if is_paired:  # position i of each side ran in the same cycle: keep the pairs whole
            both = [
                (x, y) for rb, rn in zip(base, new, strict=True) if (x := _positive(rb, metric)) and (y := _positive(rn, metric))
            ]
            b, n = [x for x, _ in both], [y for _, y in both]
        else:
            b, n = repeat_values(base, metric), repeat_values(new, metric)
        if metric == HEADLINE or b or n:
            tests.append(Contrast(metric, b, n, is_paired))
    return tests


def compare(
    base: BenchResult, new: BenchResult, settings: Settings | None = None, *, allow_different: bool = False
) -> Comparison:
    """Compare two sessions; raises :class:`~rigaudit.tools.bench.like.WorkloadMismatch` for different
    workloads unless ``allow_different`` (then the differences are listed in the comparison)."""
    settings = settings or Settings()
    found = differences(base, new)
    if found and not allow_different:
        raise WorkloadMismatch(found)
    base_levels, new_levels = by_level(base), by_level(new)
    warnings = [f"different workloads, compared anyway (--allow-different): {'; '.join(found)}"] if found else []
    warnings += stability_warnings(base, "baseline") + stability_warnings(new, "new run")
    for name, only in (("baseline", set(base_levels) - set(new_levels)), ("new run", set(new_levels) - set(base_levels))):
        if only:
            warnings.append(f"concurrency {', '.join(map(str, sorted(only)))} only in the {name}: not compared")
    shared = sorted(set(base_levels) & set(new_levels))
    plan = [(c, level_tests(base_levels[c], new_levels[c])) for c in shared]
    verdicts = iter(judge([t for _, tests in plan for t in tests], settings))
    levels = []
    for concurrency, tests in plan:
        metrics = [next(verdicts) for _ in tests]
        levels.append(
            LevelComparison(concurrency, len(base_levels[concurrency]), len(new_levels[concurrency]), metrics, metrics[0].verdict)
        )
    drifts: list[Drift] = []
    for label, result in (("baseline", base), ("new run", new)):
        fitted, shown = session_drift(
            label, [(str(r.concurrency), r) for r in result.runs], alpha=settings.alpha, floor=settings.noise_floor
        )
        if fitted is not None:
            drifts.append(fitted)
        if shown is not None:
            warnings.append(shown.text)
    return Comparison(
        levels, warnings, found, drifts, method(settings), settings.confidence, settings.noise_floor, settings.resolution
    )
