"""Verdicts on synthetic result pairs whose truth is known (drift between repeats of about 10%), fixed seeds.

The model is :mod:`rigaudit.tools.testing.bench_pairs`; ``benchmarks/compare_validation.py`` measures
the same rates over many more comparisons and prints them (docs/validation/bench-stats.md). Without a
session component, compare is judged with ``--session-cv 0`` (what such a host allows); with one (6%
between sessions, as the 1x H200 measured at concurrency 4), every way compare can learn it is tried.
"""

from __future__ import annotations

import pytest

from rigaudit.tools.testing.bench_pairs import Judging, Session, ab_rates, compare_rates

COMPARISONS = 300
H200 = Session(drift=0.065, session_cv=0.06)
"""Repeats 6.5% apart, sessions 6% apart: the 1x H200 at concurrency 4."""


@pytest.mark.parametrize(
    ("repeats", "session"),
    [(3, Session()), (5, Session()), (5, Session(drift=0.05, trend=0.10))],
    ids=["3 repeats", "5 repeats", "5 repeats, 10% trend in each session"],
)
def test_identical_configurations_are_called_a_change_at_most_5_percent_of_the_time(repeats: int, session: Session) -> None:
    rates = compare_rates(COMPARISONS, repeats=repeats, gain=1.0, session=session, seed=21)
    assert rates.false_change_rate <= 0.05  # any metric, any level
    assert rates.not_enough > 0  # at 10% noise the tool also says so


def test_a_30_percent_gain_is_found_with_five_repeats_and_never_called_a_regression() -> None:
    rates = compare_rates(COMPARISONS, repeats=5, gain=1.3, session=Session(), seed=22)
    assert rates.found_rate >= 0.80  # per (comparison, level)
    assert rates.regressed == 0


def test_a_session_component_fools_a_compare_that_assumes_none() -> None:
    # the class of fault the H200 showed (3 of 10 identical comparisons called a change): repeats cannot see it
    rates = compare_rates(200, repeats=5, gain=1.0, session=H200, seed=25, judging=Judging("given", 0.0))
    assert rates.false_change_rate > 0.15


@pytest.mark.parametrize(
    "judging",
    [Judging("default"), Judging("calibrated", calibration_sessions=6), Judging("default", sessions=3)],
    ids=["not calibrated: the default", "calibrated from 6 sessions", "3 vs 3 sessions, not calibrated"],
)
def test_with_a_session_component_identical_configurations_stay_under_5_percent(judging: Judging) -> None:
    rates = compare_rates(200, repeats=5, gain=1.0, session=H200, seed=26, judging=judging)
    assert rates.false_change_rate <= 0.05


def test_with_a_session_component_a_30_percent_gain_is_never_a_regression_and_sessions_find_it() -> None:
    one = compare_rates(150, repeats=5, gain=1.3, session=H200, seed=27, judging=Judging("calibrated"))
    three = compare_rates(150, repeats=5, gain=1.3, session=H200, seed=27, judging=Judging("calibrated", sessions=3))
    assert one.regressed == three.regressed == 0
    assert three.found_rate >= 0.80 > one.found_rate  # one session a side cannot see it reliably; three can


def test_interleaved_ab_holds_its_error_rate_under_a_strong_trend_and_finds_the_gain() -> None:
    drifting = Session(trend=0.20)  # the session slows 20% from its first run to its last
    null = ab_rates(200, cycles=6, gain=1.0, session=drifting, seed=23)
    assert null.false_change_rate <= 0.05
    gain = ab_rates(200, cycles=8, gain=1.3, session=drifting, seed=24)
    assert gain.found_rate >= 0.80 and gain.regressed == 0
