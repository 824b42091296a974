"""Synthetic benchmark results whose truth is known, to measure how often ``compare`` and ``bench ab`` are right.

The model of a session (every figure seeded, so the same seed gives the same results):
- a level's true speed is fixed (``LEVELS``); each run of a level (a repeat, or an A/B visit) runs
  at that speed times its own factor exp(N(0, ``drift``)): with ``drift=0.10`` the speed of a repeat
  has a standard deviation of about 10%, the typical difference between two repeats about 11%;
- optionally the whole session trends: a run at position k of n runs is slower by ``trend * k / (n - 1)``
  (warm-up, clocks, thermals, another tenant), in the order the runs ran;
- optionally each session has its own speed factor exp(N(0, ``session_cv``)), shared by all its runs
  (a new process, new connections, the server's state: what repeats inside a session cannot see;
  the 1x H200 measured about 6% between sessions at concurrency 4);
- within a run, each figure carries a little measurement noise (2% on tok/s, 4% on the TTFT
  median, 1% on the ITL median);
- a change of the configuration by ``gain`` multiplies the speed by ``gain``: tok/s x gain, TTFT
  and ITL / gain.
Runs carry repeat-level figures only (no per-request samples), which is all the verdicts use.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Literal

from rigaudit.tools.bench.ab import BASELINE, AbResult, ArmResult, Visit
from rigaudit.tools.bench.results import BenchResult, Run
from rigaudit.tools.bench.schedule import visit_order, williams_rows
from rigaudit.tools.core.record import Record

LEVELS: dict[int, tuple[float, float, float]] = {1: (260.0, 4.5, 3.2), 4: (220.0, 19.0, 16.7), 16: (140.0, 115.0, 108.0)}
"""concurrency -> (output tok/s, TTFT ms, ITL ms) of the true configuration (the H200 tiny-model story's figures)."""


class Session(Record):
    drift: float = 0.10
    trend: float = 0.0
    levels: tuple[int, ...] = (1, 4, 16)
    session_cv: float = 0.0


class Judging(Record):
    """How ``compare`` is told about the between-session noise in a simulated comparison.

    ``given``: ``--session-cv session_cv`` (0: repeats only, what the tool assumed before sessions were a level);
    ``default``: nothing (one session a side: the conservative default); ``calibrated``: a calibration of
    ``calibration_sessions`` A/A sessions drawn from the same model before each comparison.
    ``sessions``: results per side."""

    mode: Literal["given", "default", "calibrated"] = "given"
    session_cv: float = 0.0
    calibration_sessions: int = 6
    sessions: int = 1


def _run(rng: random.Random, concurrency: int, repeat: int, order: int, speed: float) -> Run:
    tput, ttft, itl = LEVELS[concurrency]
    return Run(
        concurrency=concurrency,
        repeat=repeat,
        order=order,
        started_s=float(order),
        output_tokens_per_s=tput * speed * math.exp(rng.gauss(0.0, 0.02)),
        ttft_ms_p50=ttft / speed * math.exp(rng.gauss(0.0, 0.04)),
        itl_ms_p50=itl / speed * math.exp(rng.gauss(0.0, 0.01)),
        requests_ok=8,
        duration_s=1.0,
    )


def _trend(session: Session, position: int, total: int) -> float:
    return 1.0 - session.trend * position / max(1, total - 1)


def session_result(rng: random.Random, session: Session, repeats: int, gain: float = 1.0) -> BenchResult:
    """One ``bench inference`` session: ``repeats`` repeats of every level, in the balanced order."""
    visits = visit_order(list(session.levels), repeats)
    runs = []
    offset = math.exp(rng.gauss(0.0, session.session_cv)) if session.session_cv else 1.0
    for order, (repeat, concurrency) in enumerate(visits):
        speed = gain * offset * math.exp(rng.gauss(0.0, session.drift)) * _trend(session, order, len(visits))
        runs.append(_run(rng, concurrency, repeat, order, speed))
    return BenchResult(
        base_url="http://synthetic",
        model="synthetic",
        api="chat",
        started_at="2026-01-01T00:00:00+00:00",
        max_tokens=64,
        prompt_tokens=128,
        tool="rigaudit synthetic",
        runs=runs,
    )


def ab_result(rng: random.Random, session: Session, cycles: int, gains: Sequence[float]) -> AbResult:
    """One interleaved ``bench ab`` session: the baseline and one arm per gain (arm ``fix1``, ``fix2``, ...)."""
    names = [BASELINE, *(f"fix{i + 1}" for i in range(len(gains)))]
    gain_of = dict(zip(names, [1.0, *gains], strict=True))
    visits = visit_order(names, cycles)
    rows = williams_rows(len(session.levels))
    total = len(visits) * len(session.levels)
    runs: dict[str, list[Run]] = {name: [] for name in names}
    order = 0
    for index, (cycle, arm) in enumerate(visits):
        for level in rows[index % len(rows)]:
            speed = gain_of[arm] * math.exp(rng.gauss(0.0, session.drift)) * _trend(session, order, total)
            runs[arm].append(_run(rng, session.levels[level], cycle, order, speed))
            order += 1
    arms = [
        ArmResult(name=n, steps=[] if n == BASELINE else [n], result=BenchResult(started_at="t", runs=runs[n])) for n in names
    ]
    return AbResult(
        host="synthetic",
        source="synthetic",
        plan_hash="0",
        steps=names[1:],
        journal="",
        cycles=cycles,
        complete=True,
        arms=arms,
        visits=[Visit(cycle=c, arm=a, started_s=float(i), switched=True) for i, (c, a) in enumerate(visits)],
    )


class Rates(Record):
    """How often the verdicts were right over many simulated comparisons with the same truth."""

    comparisons: int
    levels: int
    """Levels per comparison (for ``bench ab``: levels per fix)."""
    any_change: int
    """Comparisons with at least one "improved" or "regressed" verdict, any metric, any level."""
    regressed: int
    """Comparisons with at least one "regressed" verdict, any metric, any level."""
    headline_improved: int
    """(comparison, level) pairs whose headline (output tok/s) was called "improved"."""
    all_levels_improved: int
    """Comparisons whose headline was "improved" at every level."""
    not_enough: int
    """(comparison, level) pairs whose headline was "not enough repeats"."""

    @property
    def false_change_rate(self) -> float:
        return self.any_change / self.comparisons

    @property
    def found_rate(self) -> float:
        return self.headline_improved / (self.comparisons * self.levels)

    @property
    def all_levels_rate(self) -> float:
        return self.all_levels_improved / self.comparisons


def _tally(level_sets: Sequence[Sequence[object]]) -> tuple[int, int, int, int, int]:
    from rigaudit.tools.bench.compare import LevelComparison

    any_change = regressed = improved = every = not_enough = 0
    for levels in level_sets:
        verdicts = [m.verdict for lv in levels if isinstance(lv, LevelComparison) for m in lv.metrics]
        heads = [lv.verdict for lv in levels if isinstance(lv, LevelComparison)]
        any_change += any(v in ("improved", "regressed") for v in verdicts)
        regressed += "regressed" in verdicts
        improved += heads.count("improved")
        every += bool(heads) and all(v == "improved" for v in heads)
        not_enough += heads.count("not enough repeats")
    return any_change, regressed, improved, every, not_enough


def compare_rates(
    comparisons: int, *, repeats: int, gain: float, session: Session, seed: int = 0, judging: Judging | None = None
) -> Rates:
    """``comparisons`` comparisons (base at speed 1, new at ``gain``; ``judging.sessions`` sessions a side), each
    judged by ``compare`` as ``judging`` says (default: repeats only, ``--session-cv 0``)."""
    from rigaudit.tools.bench.calibration import calibrate
    from rigaudit.tools.bench.compare import Settings, compare

    judging = judging or Judging()
    if judging.mode == "calibrated" and judging.calibration_sessions < 2:
        raise ValueError("a calibration needs at least 2 sessions")
    settings = Settings(session_cv=judging.session_cv if judging.mode == "given" else None)
    rng = random.Random(seed)
    found = []
    for _ in range(comparisons):
        calibration = None
        if judging.mode == "calibrated":
            sessions = [session_result(rng, session, repeats) for _ in range(judging.calibration_sessions)]
            calibration = calibrate(sessions, sources=[f"session {i + 1}" for i in range(len(sessions))], host="synthetic")
        base = [session_result(rng, session, repeats) for _ in range(judging.sessions)]
        new = [session_result(rng, session, repeats, gain) for _ in range(judging.sessions)]
        found.append(compare(base, new, settings, calibration=calibration).levels)
    return Rates(comparisons, len(session.levels), *_tally(found))


def ab_rates(comparisons: int, *, cycles: int, gain: float, session: Session, seed: int = 0) -> Rates:
    """``comparisons`` interleaved sessions of one fix worth ``gain``, each judged by ``bench ab``'s analysis."""
    from rigaudit.tools.bench.ab import analyze

    rng = random.Random(seed)
    found = []
    for _ in range(comparisons):
        arms = analyze(ab_result(rng, session, cycles, [gain])).arms
        found.append(arms[0].levels)
    return Rates(comparisons, len(session.levels), *_tally(found))
