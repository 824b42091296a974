"""'No significant change' is an equivalence verdict: the whole interval inside ±resolution, never its half-width alone.

Property tests over synthetic samples (one session or several a side, paired A/B cycles, the between-session
spread assumed, measured or none) check that every verdict says what its interval and p-value show; the examples
pin the three cases the half-width rule got wrong.
"""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from rigaudit.tools.bench.compare import (
    HIGHER_IS_BETTER,
    METRICS,
    Contrast,
    MetricChange,
    Settings,
    method,
    metric_changes,
    within,
)
from rigaudit.tools.bench.sessions import NONE, Between
from rigaudit.tools.bench.stats import Estimate, t_quantile

REPEATS_ONLY = Settings(session_cv=0.0)
HEAD = "output_tokens_per_s"


def _one(base: list[float], new: list[float], settings: Settings = REPEATS_ONLY) -> MetricChange:
    return metric_changes([Contrast(HEAD, base, new)], settings)[0]


def _old_rule_said_no_change(m: MetricChange, resolution: float) -> bool:
    """What the half-width rule before this fix decided (for the examples: they must be cases it got wrong)."""
    assert m.ci_low is not None and m.ci_high is not None
    return (math.log1p(m.ci_high) - math.log1p(m.ci_low)) / 2.0 <= math.log1p(resolution)


def _needed_for(noise: float, target: float, n: int) -> bool:
    return t_quantile(0.975, 2 * n - 2) * noise * math.sqrt(2 / n) <= target


def test_a_narrow_interval_off_centre_and_not_significant_is_not_enough_repeats() -> None:
    m = _one([100, 108, 94, 103, 97], [107, 116, 101, 110, 104])
    assert m.ci_low is not None and m.ci_high is not None and m.p_adjusted is not None and m.change is not None
    assert m.ci_low < 0 < 0.10 < m.ci_high and m.p_adjusted >= 0.05  # includes no change, reaches past +10%
    assert _old_rule_said_no_change(m, 0.10)
    assert m.verdict == "not enough repeats" and "within" not in m.reason
    assert "off centre" in m.reason and f"[{m.ci_low:+.1%}, {m.ci_high:+.1%}]" in m.reason
    # repeats needed for this case: the fewest at which the estimate, if it holds, is decided (here: significant)
    centre = math.log1p(m.change)
    target = max(centre, math.log1p(0.10) - centre)
    n = m.repeats_needed
    assert n is not None and n > 5 and m.noise is not None
    assert _needed_for(m.noise, target, n) and not _needed_for(m.noise, target, n - 1)


def test_a_significant_change_under_the_floor_reaching_past_the_resolution_does_not_claim_within() -> None:
    settings = Settings(session_cv=0.0, noise_floor=0.10)
    m = _one([100, 104, 97, 101, 99], [108, 112, 104, 109, 107], settings)
    assert m.p_adjusted is not None and m.p_adjusted < 0.05 and m.ci_high is not None and m.ci_high > 0.10
    assert m.verdict == "not enough repeats" and "within" not in m.reason
    assert "below the 10% noise floor" in m.reason and "reaches beyond ±10%" in m.reason
    # only the interval inside ±10% decides it: more repeats would not make +7.8% count
    assert m.change is not None and m.noise is not None and m.repeats_needed is not None
    target = math.log1p(0.10) - math.log1p(m.change)
    assert _needed_for(m.noise, target, m.repeats_needed) and not _needed_for(m.noise, target, m.repeats_needed - 1)
    assert "the interval inside ±10%" in m.reason


def test_the_same_change_well_inside_the_resolution_is_no_significant_change() -> None:
    m = _one([100, 100.5, 99.5, 100.2], [103, 103.5, 102.5, 103.2])
    assert m.verdict == "no significant change" and "below the 5% noise floor" in m.reason
    assert m.ci_low is not None and m.ci_high is not None and m.ci_low > -0.10 and m.ci_high < 0.10
    assert f"[{m.ci_low:+.1%}, {m.ci_high:+.1%}] lies within ±10%" in m.reason


def test_the_method_in_every_report_states_the_equivalence_rule() -> None:
    text = method(Settings())
    assert "'no significant change' needs the whole 95% interval [low, high] inside ±10% (equivalence)" in text


def test_within_is_the_log_scale_band() -> None:
    def est(low: float, high: float) -> Estimate:
        return Estimate((low + high) / 2, low, high, 0.5, 10.0, 0.05, 5, 5)

    assert within(est(-0.09, 0.10), 0.10)
    assert not within(est(-0.095, 0.05), 0.10)  # below -10/110 = -9.09%: outside on the log scale
    assert not within(est(0.03, 0.13), 0.10)  # +8% ± 5%: half-width 5%, yet not within ±10%
    assert not within(est(-1.0, 0.0), 0.10)  # a change too large for a float


# --- properties ----------------------------------------------------------------------------------------


def _side(deviations: list[list[float]], level: float) -> list[list[float]]:
    return [[100.0 * math.exp(level + d) for d in session] for session in deviations]


_sessions = st.lists(
    st.lists(st.floats(min_value=-0.3, max_value=0.3, allow_nan=False), min_size=1, max_size=6), min_size=1, max_size=3
)
_settings = st.builds(
    lambda confidence, floor, resolution, cv: Settings(
        confidence=confidence, noise_floor=floor, resolution=resolution, session_cv=cv
    ),
    st.sampled_from([0.8, 0.9, 0.95, 0.99]),
    st.floats(min_value=0.0, max_value=0.2),
    st.floats(min_value=0.02, max_value=0.3),
    st.one_of(st.none(), st.sampled_from([0.0, 0.03, 0.08])),
)


def _check(m: MetricChange, settings: Settings) -> None:
    res = settings.resolution
    if m.verdict == "no significant change":
        assert m.ci_low is not None and m.ci_high is not None
        assert m.ci_low >= -res and m.ci_high <= res
        assert math.log1p(m.ci_low) >= -math.log1p(res) - 1e-12  # the log-scale band, symmetric
        assert "lies within" in m.reason
    elif m.verdict in ("improved", "regressed"):
        assert m.p_adjusted is not None and m.p_adjusted < settings.alpha
        assert m.change is not None and abs(m.change) >= settings.noise_floor
        assert (m.verdict == "improved") == ((m.change > 0) == HIGHER_IS_BETTER[m.metric])
    else:
        assert m.verdict == "not enough repeats" and "within" not in m.reason
        if m.ci_low is not None and m.ci_high is not None:
            est = Estimate(m.change or 0.0, m.ci_low, m.ci_high, 0.5, 1.0, 0.0, 1, 1)
            assert not within(est, res)


@given(base=_sessions, new=_sessions, gain=st.floats(min_value=-0.4, max_value=0.4), settings=_settings)
def test_every_verdict_states_what_its_interval_shows(
    base: list[list[float]], new: list[list[float]], gain: float, settings: Settings
) -> None:
    b, n = _side(base, 0.0), _side(new, gain)
    between = Between("assumed", sd=settings.session_cv) if settings.session_cv is not None else NONE
    tests = [Contrast(metric, [v for s in b for v in s], [v for s in n for v in s], False, b, n, between) for metric in METRICS]
    for m in metric_changes(tests, settings):
        _check(m, settings)
        if m.repeats_needed is not None and m.ci_low is not None:  # never advise what was already run
            assert m.repeats_needed > min(len(s) for s in b + n)


@given(
    cycles=st.lists(
        st.tuples(st.floats(min_value=-0.3, max_value=0.3), st.floats(min_value=-0.3, max_value=0.3)), min_size=1, max_size=8
    ),
    gain=st.floats(min_value=-0.4, max_value=0.4),
    settings=_settings,
)
def test_every_paired_verdict_states_what_its_interval_shows(
    cycles: list[tuple[float, float]], gain: float, settings: Settings
) -> None:
    base = [100.0 * math.exp(a) for a, _ in cycles]
    new = [100.0 * math.exp(gain + a + b) for a, b in cycles]
    (m,) = metric_changes([Contrast(HEAD, base, new, is_paired=True)], settings)
    _check(m, settings)
    if m.repeats_needed is not None and m.ci_low is not None:
        assert m.repeats_needed > len(cycles)
