"""Compare benchmark results with repeats and sessions as the units: per level and metric, a change, its interval, a verdict.

The method (also in ``bench compare --help`` and every report):
- One figure per repeat and level: output tok/s (the headline), the TTFT median, the ITL median.
  Requests inside a repeat are not independent measurements of the configuration: the repeat-to-
  repeat drift is the noise that matters, so each repeat counts once.
- Sessions are a level of the model (:mod:`rigaudit.tools.bench.sessions`): a new session (a new
  process, new connections, tens of seconds later) adds a between-session offset that repeats
  inside one session cannot see. The change is the ratio of the sides' geometric means (each side
  the mean of its session means), its variance sigma_B^2 (1/k_b + 1/k_n) plus each side's within-
  session variance over its repeats, with Satterthwaite's degrees of freedom. sigma_B comes from a
  stored calibration of this host and workload (``bench calibrate``), pooled with the sessions
  compared when a side has several; from the sessions alone without a calibration; or, with one
  session a side and no calibration, from a conservative default (``DEFAULT_SESSION_CV``), said in
  the headline. ``bench ab`` pairs the A and B runs of each cycle: a paired t interval on the log
  ratios (its cycles are the unit; drift hits both arms alike).
- The p-values of every level and metric shown form one family, adjusted with Holm's weighted
  step-down procedure: the headline carries 2/3 of each level's weight. The chance of calling any
  change between two identical configurations stays below 1 - confidence.
- A change counts ("improved" / "regressed") when its adjusted p is below 1 - confidence and it is
  at least the noise floor. Otherwise "no significant change" is an equivalence verdict: the WHOLE
  interval [low, high] lies inside ±resolution (log scale: -res/(1+res) <= low, high <= res), so a
  narrow interval off centre ([+3%, +13%] at ±10%) is not one. Anything else is "not enough repeats",
  with the repeats per session, or the sessions per side, that the observed change and spread would
  need to decide it (the interval inside ±resolution, or a change at the floor significant by the
  test applied: at its share of Holm's alpha, ``alpha * w / W``, which counts whatever the family's
  other tests show; as benchstat's "need >= 6 samples").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from rigaudit.tools.bench.drift import Drift, by_level, session_drift, stability_warnings
from rigaudit.tools.bench.like import WorkloadMismatch, differences
from rigaudit.tools.bench.results import BenchResult, Run
from rigaudit.tools.bench.sessions import NONE, Between, Model, needed, nested, quantile
from rigaudit.tools.bench.stats import Estimate, growth, holm, paired, repeats_for, repeats_needed, stdev
from rigaudit.tools.core.record import Record, as_dict, field

if TYPE_CHECKING:
    from rigaudit.tools.bench.calibration import Calibration

COMPARE_SCHEMA = "rigaudit.compare/3"
DEFAULT_SESSION_CV = 0.08
"""The between-session spread assumed when nothing measured it (one session a side, no calibration): the
largest between-session SD of any level and metric in the 1x H200 run (7.2% output tok/s at c=1, 8.1% ITL
at c=1; docs/validation/bench-stats.md), rounded; ``--session-cv`` sets another."""
Verdict = Literal["improved", "regressed", "no significant change", "not enough repeats"]
MetricName = Literal["output_tokens_per_s", "ttft_ms_p50", "itl_ms_p50"]
METRICS: tuple[MetricName, ...] = ("output_tokens_per_s", "ttft_ms_p50", "itl_ms_p50")
HEADLINE: MetricName = "output_tokens_per_s"
HIGHER_IS_BETTER = {"output_tokens_per_s": True, "ttft_ms_p50": False, "itl_ms_p50": False}
LABELS = {"output_tokens_per_s": "output tok/s", "ttft_ms_p50": "TTFT p50", "itl_ms_p50": "ITL p50"}
HEADLINE_WEIGHT = 4.0
"""Holm weight of the headline; every other metric weighs 1 (with two others: 2/3 of a level's weight)."""
METHOD = (
    "{unit}; change = ratio of geometric means with a {interval} on the log scale; p-values of every level and metric "
    "shown adjusted together (Holm, weighted: output tok/s carries 2/3 of each level); a change counts when its "
    "adjusted p < {alpha:g} and it is at least the {floor:.0%} noise floor; 'no significant change' needs the "
    "whole {confidence:.0%} interval [low, high] inside ±{resolution:.0%} (equivalence), else 'not enough repeats' with "
    "what the observed change and spread need to decide it"
)


class Settings(Record):
    """How sure, and about what size of change. Bounds are checked by :func:`check_settings`."""

    confidence: float = 0.95
    noise_floor: float = 0.05
    """The smallest relative change that counts."""
    resolution: float = 0.10
    """The band (relative) that the whole interval must lie inside for "no significant change"."""
    session_cv: float | None = None
    """The between-session spread to assume (log-scale SD; 0: none), over any calibration; None: measured or default."""
    default_session_cv: float = DEFAULT_SESSION_CV
    """What one session a side assumes when no calibration applies."""

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
    for name, value in (("--session-cv", settings.session_cv), ("the default session CV", settings.default_session_cv)):
        if value is not None and not (0.0 <= value <= 1.0 and math.isfinite(value)):
            return f"{name} is a fraction from 0 to 1, e.g. 0.08, not {value:g}"
    return None


def method(settings: Settings, *, paired_design: bool = False) -> str:
    if paired_design:
        unit = "the A/B cycle is the unit: each arm's figure per level and cycle counts once"
        interval = "paired t interval over the cycles"
    else:
        unit = "the repeat is the unit within a session, the session between sessions"
        interval = "t interval whose variance adds the between-session component (Satterthwaite degrees of freedom)"
    return METHOD.format(
        unit=unit,
        interval=interval,
        alpha=settings.alpha,
        floor=settings.noise_floor,
        confidence=settings.confidence,
        resolution=settings.resolution,
    )


class MetricChange(Record):
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
    """The spread of one repeat within a session (log-scale SD, about its coefficient of variation)."""
    repeats_needed: int | None
    """For "not enough repeats": repeats per session (pairs in an A/B) the observed spread needs; None if unknown
    or if no number of repeats would do (then see ``sessions_needed``)."""
    verdict: Verdict
    reason: str = ""
    headline: bool = False
    session_noise: float | None = None
    """The between-session spread used (log-scale SD, about the session CV); None for paired A/B cycles."""
    sessions_needed: int | None = None
    """For "not enough repeats" when more repeats cannot help: sessions per side that would narrow the interval."""

    @property
    def label(self) -> str:
        if self.verdict != "not enough repeats":
            return self.verdict
        if self.repeats_needed:
            return f"not enough repeats (need >= {self.repeats_needed})"
        if self.sessions_needed:
            return f"not enough sessions (need >= {self.sessions_needed} a side)"
        return "not enough repeats"


class LevelComparison(Record):
    concurrency: int
    base_repeats: int
    new_repeats: int
    metrics: list[MetricChange]
    verdict: Verdict
    """The headline's verdict (output tok/s, the figure a change is meant to move)."""
    base_sessions: int = 1
    new_sessions: int = 1

    @property
    def headline(self) -> MetricChange:
        return self.metrics[0]


BetweenMode = Literal["calibrated", "sessions", "given", "default"]


class BetweenNote(Record):
    """Where the between-session noise of a comparison came from, in words for its headline."""

    mode: BetweenMode
    text: str
    session_cv: dict[int, float] = field(default_factory=dict)
    """The between-session spread of output tok/s used, per level."""
    calibration: str | None = None
    """The calibration file used (``calibrated``)."""
    short: str = ""
    """A few words for a title: ``calibrated``, ``NOT calibrated: 8% assumed``, ``3 vs 3 sessions``."""


class Comparison(Record):
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
    between: BetweenNote | None = None
    base_sessions: int = 1
    new_sessions: int = 1
    schema: str = COMPARE_SCHEMA

    def to_dict(self) -> dict[str, object]:
        return as_dict(self)

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


class Contrast(Record):
    """One planned test: a metric's repeat figures on both sides (paired: position i of each side ran together).

    ``base_sessions`` / ``new_sessions``: the same figures split by session (empty: one session a side);
    ``between``: what is known of the between-session spread before looking at them."""

    metric: MetricName
    base: Sequence[float]
    new: Sequence[float]
    is_paired: bool = False
    base_sessions: Sequence[Sequence[float]] = ()
    new_sessions: Sequence[Sequence[float]] = ()
    between: Between = NONE

    def sessions(self) -> tuple[Sequence[Sequence[float]], Sequence[Sequence[float]]]:
        return (self.base_sessions or [self.base]), (self.new_sessions or [self.new])


def _geomean(values: Sequence[float]) -> float | None:
    return math.exp(math.fsum(math.log(v) for v in values) / len(values)) if values else None


def _side_mean(sessions: Sequence[Sequence[float]]) -> float | None:
    """The geometric mean of the sessions' geometric means (one session: of its repeats)."""
    means = [m for s in sessions if (m := _geomean(s)) is not None]
    return _geomean(means)


def _spread(values: Sequence[float]) -> float | None:
    return stdev([math.log(v) for v in values]) if len(values) >= 2 else None


def _estimate(test: Contrast, confidence: float) -> tuple[Estimate, Model | None] | None:
    if test.is_paired:
        est = paired(test.base, test.new, confidence=confidence)
        return (est, None) if est is not None else None
    base, new = test.sessions()
    return nested(base, new, test.between, confidence=confidence)


def _need_text(needed: int | None, paired_test: bool = False) -> str:
    unit = "A/B cycles" if paired_test else "repeats per side"
    return f"about {needed} {unit} would" if needed else f"more than 1,000 {unit} would"


def _log1p(x: float) -> float:
    return math.log1p(x) if x > -1.0 else -math.inf


def within(est: Estimate, resolution: float) -> bool:
    """The equivalence rule: the whole interval [low, high] inside ±``resolution`` on the log scale, where the
    intervals are symmetric (``-resolution/(1+resolution) <= low`` and ``high <= resolution``)."""
    band = math.log1p(resolution)
    return _log1p(est.low) >= -band and _log1p(est.high) <= band


def _case(est: Estimate, settings: Settings, significant: bool) -> str:
    """Why an estimate that neither counts nor lies within ±resolution is undecided, in words that are true of it."""
    shown = f"the {settings.confidence:.0%} interval [{est.low:+.1%}, {est.high:+.1%}]"
    beyond = f"±{settings.resolution:.0%}"
    if significant:  # it would have counted at or above the floor
        return (
            f"a significant change of {est.change:+.1%} is below the {settings.noise_floor:.0%} noise floor, "
            f"but {shown} reaches beyond {beyond}"
        )
    if est.half_width > math.log1p(settings.resolution):
        return f"{shown} is ±{growth(est.half_width):.1%} wide, wider than {beyond}"
    narrow = f"±{growth(est.half_width):.1%}"
    return f"{shown} is narrow ({narrow}) but off centre: it reaches beyond {beyond} and includes no change"


class _Goal(Record):
    """One outcome that would decide an estimate: its interval's log-scale half-width at ``confidence``."""

    half_width: float
    confidence: float
    text: str


def _goals(est: Estimate, settings: Settings, significant: bool, level: float) -> list[_Goal]:
    """What would decide this estimate: the whole interval inside ±resolution (half-width ``band - |centre|`` at
    the confidence every interval is shown at), or, for an estimate at or above the noise floor that is not yet
    significant, the change significant as the test applied judges it: its interval at ``1 - level`` (``level``:
    the p this test must reach for its Holm-adjusted p to count whatever the others show) excluding no change."""
    centre = abs(_log1p(est.change))
    found = []
    inside = math.log1p(settings.resolution) - centre
    if inside > 0:
        text = f"decide it (the interval inside ±{settings.resolution:.0%}, if the change is as small as estimated)"
        found.append(_Goal(inside, settings.confidence, text))
    if not significant and abs(est.change) >= settings.noise_floor and math.isfinite(centre) and centre > 0:
        holm_text = f" at p < {level:.2g}, its share of the Holm family" if level < settings.alpha else ""
        found.append(_Goal(centre, 1.0 - level, f"decide it (the {est.change:+.1%} change significant{holm_text}, if it holds)"))
    return found


def _need(
    est: Estimate, model: Model | None, settings: Settings, paired_test: bool, goal: _Goal
) -> tuple[int | None, int | None]:
    """(repeats per session, sessions per side) that would reach ``goal``; None for what no number reaches."""
    ran = math.ceil(model.repeats) if model is not None else max(est.n_base, est.n_new)

    def more(need: int | None) -> int | None:  # the repeats compared did not decide it: never advise as many
        return None if need is None else max(need, ran + 1)

    conf, target = goal.confidence, goal.half_width
    if model is None or model.between_sd == 0.0:
        need = repeats_for(est.noise, half_width=target, confidence=conf, paired=paired_test)
        if model is not None and max(model.sessions) > 1:
            need = needed(model, resolution=settings.resolution, confidence=conf, half_width=target)[0]
        return more(need), None
    repeats, sessions = needed(model, resolution=settings.resolution, confidence=conf, half_width=target)
    return (more(repeats), None) if repeats is not None else (None, sessions)


def _fewest(options: Sequence[tuple[int | None, int | None, _Goal]]) -> tuple[int | None, int | None, _Goal]:
    """The goal the fewest repeats reach, else the fewest sessions."""

    def cost(option: tuple[int | None, int | None, _Goal]) -> tuple[int, int]:
        repeats, sessions, _ = option
        return (repeats if repeats is not None else 10**9, sessions if sessions is not None else 10**9)

    return min(options, key=cost)


def _undecided(
    est: Estimate, model: Model | None, settings: Settings, paired_test: bool, significant: bool, level: float
) -> tuple[int | None, int | None, str]:
    """(repeats needed, sessions needed, the reason) for an estimate that neither counts nor lies within ±resolution.

    ``level``: the unadjusted p at which this test's Holm-adjusted p counts (the figure for "significant" is the
    test actually applied, not the unadjusted one)."""
    case = _case(est, settings, significant)
    goals = _goals(est, settings, significant, level)
    if not goals:
        return (
            None,
            None,
            (
                f"{case}; at an estimate of {est.change:+.1%}, beyond ±{settings.resolution:.0%} yet under the "
                f"{settings.noise_floor:.0%} noise floor, no number of repeats decides it (--noise-floor above --resolution?)"
            ),
        )
    repeats, sessions, goal = _fewest([(*_need(est, model, settings, paired_test, g), g) for g in goals])
    if model is None or model.between_sd == 0.0:
        unit = "A/B cycle" if paired_test else "repeat"
        text = f"{case}; at the observed spread of {est.noise:.1%} per {unit} {_need_text(repeats, paired_test)} {goal.text}"
        return repeats, None, text
    spread = f"{est.noise:.1%} per repeat and {model.between_sd:.1%} between sessions"
    if repeats is not None:
        return repeats, None, f"{case}; at the observed spread ({spread}) about {repeats} repeats per session would {goal.text}"
    side = "one session a side" if max(model.sessions) == 1 else f"{model.sessions[0]} vs {model.sessions[1]} sessions"
    many = f"about {sessions} sessions a side" if sessions else "more than 1,000 sessions a side"
    return (
        None,
        sessions,
        f"{case}; the spread between sessions ({model.between_sd:.1%}) is too wide for {side} whatever the repeats: "
        f"{many} (bench compare A1.json A2.json ... --against B1.json B2.json ...), or an interleaved bench ab, "
        f"would {goal.text}",
    )


def _verdict(
    test: Contrast, found: tuple[Estimate, Model | None] | None, p_adj: float | None, settings: Settings, level: float
) -> MetricChange:
    base_sessions, new_sessions = test.sessions()
    base, new = _side_mean(base_sessions), _side_mean(new_sessions)
    headline = test.metric == HEADLINE
    if found is None or p_adj is None:
        spreads = [s for s in (_spread(test.base), _spread(test.new)) if s is not None]
        noise = max(spreads) if spreads else None
        need = None
        if noise is None:
            reason = "fewer than two repeats on each side: the run-to-run spread is unknown; run at least --repeat 3"
        else:
            need = repeats_needed(noise, resolution=settings.resolution, confidence=settings.confidence, paired=test.is_paired)
            reason = (
                f"fewer than two repeats on one side; at the other side's spread ({noise:.1%}) "
                f"{_need_text(need, test.is_paired)} do"
            )
        change = new / base - 1.0 if base and new is not None else None
        return MetricChange(
            test.metric, base, new, change, None, None, None, None, noise, need, "not enough repeats", reason, headline
        )
    est, model = found
    session_noise = model.between_sd if model is not None else None
    better = HIGHER_IS_BETTER[test.metric]
    significant = p_adj < settings.alpha
    common = (test.metric, base, new, est.change, est.low, est.high, est.p, p_adj, est.noise)
    if significant and abs(est.change) >= settings.noise_floor:
        verdict: Verdict = "improved" if (est.change > 0) == better else "regressed"
        return MetricChange(*common, None, verdict, "", headline, session_noise)
    if within(est, settings.resolution):
        shown = f"the {settings.confidence:.0%} interval [{est.low:+.1%}, {est.high:+.1%}]"
        inside = f"{shown} lies within ±{settings.resolution:.0%}"
        reason = (
            f"a significant change of {est.change:+.1%} is below the {settings.noise_floor:.0%} noise floor and {inside}"
            if significant
            else inside
        )
        return MetricChange(*common, None, "no significant change", reason, headline, session_noise)
    repeats, sessions, reason = _undecided(est, model, settings, test.is_paired, significant, level)
    return MetricChange(*common, repeats, "not enough repeats", reason, headline, session_noise, sessions)


def metric_changes(tests: Sequence[Contrast], settings: Settings) -> list[MetricChange]:
    """Every test's verdict, with Holm's weighted adjustment over all of them together.

    A test whose unadjusted p is below ``alpha * w / W`` (its weight over the family's) counts whatever the others
    show (every step of Holm's procedure tests at least at that level), so that is the level the repeats advised
    for "significant" aim at."""
    estimates = [_estimate(t, settings.confidence) for t in tests]
    weights = [HEADLINE_WEIGHT if t.metric == HEADLINE else 1.0 for t in tests]
    adjusted = holm([e[0].p if e is not None else None for e in estimates], weights)
    family = math.fsum(w for w, e in zip(weights, estimates, strict=True) if e is not None)
    levels = [settings.alpha * w / family if family > 0 else settings.alpha for w in weights]
    return [_verdict(t, e, a, settings, lv) for t, e, a, lv in zip(tests, estimates, adjusted, levels, strict=True)]


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


def _between_for(
    concurrency: int, metric: MetricName, sessions: tuple[int, int], settings: Settings, calibration: Calibration | None
) -> Between:
    if settings.session_cv is not None:
        return Between("assumed", sd=settings.session_cv)
    if calibration is not None and (known := calibration.between(concurrency, metric)) is not None:
        return known
    if max(sessions) >= 2:
        return NONE  # the sessions compared estimate it
    return Between("assumed", sd=settings.default_session_cv)


def session_tests(
    base: Sequence[Sequence[Run]],
    new: Sequence[Sequence[Run]],
    concurrency: int,
    settings: Settings,
    calibration: Calibration | None = None,
) -> list[Contrast]:
    """The tests of one level over sessions (each a list of that level's runs), headline first."""
    tests = []
    for metric in METRICS:
        b = [repeat_values(runs, metric) for runs in base]
        n = [repeat_values(runs, metric) for runs in new]
        if metric == HEADLINE or any(b) or any(n):
            between = _between_for(concurrency, metric, (len(base), len(new)), settings, calibration)
            flat_b, flat_n = [v for s in b for v in s], [v for s in n for v in s]
            tests.append(Contrast(metric, flat_b, flat_n, False, [s for s in b if s], [s for s in n if s], between))
    return tests


def _resolvable(cv: float, settings: Settings) -> float:
    """The smallest change one session a side can tell from noise at this between-session spread (any repeats)."""
    return growth(quantile(0.5 + settings.confidence / 2.0, math.inf) * math.sqrt(2.0) * cv)


def between_note(
    levels: Sequence[LevelComparison],
    settings: Settings,
    calibration: Calibration | None,
    where: str | None,
    sessions: tuple[int, int],
) -> BetweenNote:
    """The headline line: where the between-session noise came from, and what it allows."""
    cvs = {lv.concurrency: lv.headline.session_noise or 0.0 for lv in levels}
    shown = ", ".join(f"{cv:.1%} at c={c}" for c, cv in sorted(cvs.items()))
    if settings.session_cv is not None:
        if settings.session_cv == 0:
            text = (
                "between sessions: none assumed (--session-cv 0): the repeats are the only noise, as if each side's "
                "session stood for its configuration exactly"
            )
        else:
            text = f"between sessions: a session CV of {settings.session_cv:.1%} assumed (--session-cv), added to every interval"
        return BetweenNote("given", text, cvs, None, f"session CV {settings.session_cv:.1%} given")
    if calibration is not None:
        text = f"between sessions: {calibration.describe()} ({where}); added to every interval"
        return BetweenNote("calibrated", text, cvs, where, f"calibrated: {calibration.sessions} sessions")
    if max(sessions) >= 2:
        text = (
            f"between sessions: {sessions[0]} vs {sessions[1]} sessions: each session counts once, its spread "
            f"estimated from them (session CV {shown})"
        )
        return BetweenNote("sessions", text, cvs, None, f"{sessions[0]} vs {sessions[1]} sessions")
    text = (
        f"between sessions: NOT CALIBRATED for this host and workload: a session CV of {settings.default_session_cv:.0%} is "
        f"assumed (what the 1x H200 measured; --session-cv sets it), so one session a side cannot tell a change under "
        f"about ±{_resolvable(settings.default_session_cv, settings):.0%} from noise: run `rigaudit bench calibrate` with "
        "this workload once, or measure the change with bench ab (interleaved: drift hits both arms alike)"
    )
    return BetweenNote("default", text, cvs, None, f"NOT calibrated: session CV {settings.default_session_cv:.0%} assumed")


Side = BenchResult | Sequence[BenchResult]


def _sessions(side: Side) -> list[BenchResult]:
    return [side] if isinstance(side, BenchResult) else list(side)


def _like(base: Sequence[BenchResult], new: Sequence[BenchResult]) -> list[str]:
    """The workload differences between the first baseline and every other result (each named when there are several)."""
    first, found = base[0], []
    many = len(base) + len(new) > 2
    for label, results in (("baseline", base), ("new run", new)):
        for index, result in enumerate(results, start=1):
            if result is first:
                continue
            name = f"{label} {index}: " if many else ""
            found += [name + d for d in differences(first, result)]
    return found


def _label(name: str, index: int, count: int) -> str:
    return name if count == 1 else f"{name} {index}/{count}"


def _coverage_warnings(
    found: list[str], bases: Sequence[BenchResult], news: Sequence[BenchResult], in_base: set[int], in_new: set[int]
) -> list[str]:
    """What limits the comparison before it starts: different workloads, unstable runs, levels on one side only."""
    warnings = [f"different workloads, compared anyway (--allow-different): {'; '.join(found)}"] if found else []
    for name, results in (("baseline", bases), ("new run", news)):
        for index, result in enumerate(results, start=1):
            warnings += stability_warnings(result, _label(name, index, len(results)))
    for name, only in (("baseline", in_base - in_new), ("new run", in_new - in_base)):
        if only:
            warnings.append(f"concurrency {', '.join(map(str, sorted(only)))} only in the {name}: not compared")
    return warnings


def _level_comparisons(
    base_levels: Sequence[dict[int, list[Run]]],
    new_levels: Sequence[dict[int, list[Run]]],
    shared: list[int],
    settings: Settings,
    calibration: Calibration | None,
) -> list[LevelComparison]:
    """Each level both sides ran (``shared``), its metrics' verdicts adjusted together as one family (Holm)."""
    plan = []
    for c in shared:
        b = [levels[c] for levels in base_levels if c in levels]
        n = [levels[c] for levels in new_levels if c in levels]
        plan.append((c, b, n, session_tests(b, n, c, settings, calibration)))
    verdicts = iter(metric_changes([t for *_, tests in plan for t in tests], settings))
    levels = []
    for concurrency, b, n, tests in plan:
        metrics = [next(verdicts) for _ in tests]
        levels.append(
            LevelComparison(concurrency, sum(map(len, b)), sum(map(len, n)), metrics, metrics[0].verdict, len(b), len(n))
        )
    return levels


def _session_drifts(
    bases: Sequence[BenchResult], news: Sequence[BenchResult], settings: Settings
) -> tuple[list[Drift], list[str]]:
    """The drift fitted inside each session, and a warning for each that drifted enough to show."""
    drifts: list[Drift] = []
    warnings: list[str] = []
    for name, results in (("baseline", bases), ("new run", news)):
        for index, result in enumerate(results, start=1):
            fitted, shown = session_drift(
                _label(name, index, len(results)),
                [(str(r.concurrency), r) for r in result.runs],
                alpha=settings.alpha,
                floor=settings.noise_floor,
            )
            if fitted is not None:
                drifts.append(fitted)
            if shown is not None:
                warnings.append(shown.text)
    return drifts, warnings


def compare(
    base: Side,
    new: Side,
    settings: Settings | None = None,
    *,
    allow_different: bool = False,
    calibration: Calibration | None = None,
    calibration_path: str | None = None,
) -> Comparison:
    """Compare sessions (one result, or several of one configuration, a side); raises
    :class:`~rigaudit.tools.bench.like.WorkloadMismatch` for different workloads unless ``allow_different``
    (then the differences are listed in the comparison). ``calibration``: the between-session noise of this
    host and workload, as ``bench calibrate`` measured it."""
    settings = settings or Settings()
    bases, news = _sessions(base), _sessions(new)
    if not bases or not news:
        raise ValueError("compare needs at least one result a side")
    found = _like(bases, news)
    if found and not allow_different:
        raise WorkloadMismatch(found)
    base_levels = [by_level(r) for r in bases]
    new_levels = [by_level(r) for r in news]
    in_base = set().union(*(set(lv) for lv in base_levels))
    in_new = set().union(*(set(lv) for lv in new_levels))
    warnings = _coverage_warnings(found, bases, news, in_base, in_new)
    levels = _level_comparisons(base_levels, new_levels, sorted(in_base & in_new), settings, calibration)
    drifts, drift_warnings = _session_drifts(bases, news, settings)
    warnings += drift_warnings
    note = between_note(levels, settings, calibration, calibration_path, (len(bases), len(news)))
    return Comparison(
        levels,
        warnings,
        found,
        drifts,
        method(settings),
        settings.confidence,
        settings.noise_floor,
        settings.resolution,
        note,
        len(bases),
        len(news),
    )
