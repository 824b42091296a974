"""The 1x H200 A/A sessions (docs/validation/h200-run1: eight `bench inference` sessions of one configuration,
ten seconds apart) replayed through compare: every pair is "no change", and is judged so."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.tools.bench.calibration import calibrate
from rigaudit.tools.bench.results import BenchResult, load_result
from rigaudit.tools.testing.bench_replay import replay

RECORDED = Path(__file__).resolve().parent.parent / "docs" / "validation" / "h200-run1"


@pytest.fixture(scope="module")
def sessions() -> list[BenchResult]:
    found = [load_result(p) for p in sorted(RECORDED.glob("aa-*.json"))]
    assert len(found) == 8
    return found


def test_repeats_alone_call_identical_sessions_different_as_the_h200_run_did(sessions: list[BenchResult]) -> None:
    old = replay(sessions, "zero")  # --session-cv 0: what compare assumed before sessions were a level
    assert old.comparisons == 28 and old.false >= 5  # the lead's run: 3 of 10


@pytest.mark.parametrize("mode", ["calibrated", "default"])
def test_with_the_between_session_noise_no_pair_is_called_a_change(sessions: list[BenchResult], mode: str) -> None:
    # calibrated: leave the compared pair out, calibrate on the other six
    judged = replay(sessions, mode)  # type: ignore[arg-type]
    assert judged.comparisons == 28 and judged.false <= 1
    # one session a side cannot resolve ±10% at this machine's session spread: the verdict says so
    assert judged.headline_verdicts == {"not enough repeats": 56}


def test_four_sessions_a_side_are_judged_on_their_own_spread(sessions: list[BenchResult]) -> None:
    judged = replay(sessions, "default", sessions_a_side=4)
    assert judged.comparisons == 35 and judged.false <= 2


def test_the_calibration_measures_the_session_component(sessions: list[BenchResult]) -> None:
    calibration = calibrate(sessions, sources=[f"aa-0{i}" for i in range(1, 9)], host="h200")
    cv = calibration.headline_cv()
    # concurrency 4: sessions 6-7% apart while repeats are 6.5% apart (their means only 3%): F about 6
    head = calibration.component(4, "output_tokens_per_s")
    assert head is not None and 0.05 < cv[4] < 0.08 and head.squares.f_p < 0.001
    assert 0.04 < cv[1] < 0.10


RUN2 = RECORDED.parent / "h200-run2"


def test_the_second_h200_run_false_calls_come_from_the_session_the_machine_slowed() -> None:
    # 5 calibration sessions and 14 A/A sessions of one configuration; the last A/A session (aa-14) ran 20-25% slow
    files = [*sorted(RUN2.glob("cal-*.json")), *sorted(RUN2.glob("aa-*.json"))]
    sessions = [load_result(p) for p in files]
    assert len(sessions) == 19
    judged = replay(sessions, "calibrated")  # every pair, calibrated from the 17 others
    assert judged.comparisons == 171 and judged.false <= 17  # at most one in ten
    slow = str(files.index(RUN2 / "aa-14.json") + 1)
    involved = {call.split(":")[0] for call in judged.calls}
    assert sum(slow in pair.split(" vs ") for pair in involved) >= len(involved) - 2
    steady = replay([s for p, s in zip(files, sessions, strict=True) if p.name != "aa-14.json"], "calibrated")
    assert steady.rate <= 0.05 < replay(sessions, "zero").rate
