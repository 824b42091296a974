"""Recorded sessions of one configuration, replayed through ``compare`` as A/A comparisons whose truth is "no change".

Every pair of the sessions (or every split into k against k) is compared, judged one of three ways:
``calibrated`` (a calibration of the sessions not compared: leave the compared ones out), ``default``
(no calibration: the conservative default), ``zero`` (``--session-cv 0``: repeats the only noise, as
compare judged before sessions were a level of its model). A false call is any "improved" or
"regressed" verdict, any metric, any level.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Literal

from rigaudit.tools.bench.calibration import calibrate
from rigaudit.tools.bench.compare import Comparison, Settings, compare
from rigaudit.tools.bench.results import BenchResult
from rigaudit.tools.core.record import Record, field

Mode = Literal["calibrated", "default", "zero"]


class Replay(Record, frozen=False):
    mode: Mode
    sessions_a_side: int
    comparisons: int = 0
    false: int = 0
    """Comparisons with at least one "improved" or "regressed" verdict."""
    headline_verdicts: dict[str, int] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    """``1+2 vs 3+4: c=4 output_tokens_per_s regressed`` for every false call."""

    @property
    def rate(self) -> float:
        return self.false / self.comparisons if self.comparisons else 0.0


def false_calls(comparison: Comparison) -> list[str]:
    return [
        f"c={level.concurrency} {m.metric} {m.verdict}"
        for level in comparison.levels
        for m in level.metrics
        if m.verdict in ("improved", "regressed")
    ]


def _splits(count: int, k: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Every way to pick k sessions against k others (each unordered pair of sides once)."""
    out = []
    for base in itertools.combinations(range(count), k):
        rest = [i for i in range(count) if i not in base]
        for new in itertools.combinations(rest, k):
            if base < new:
                out.append((base, new))
    return out


def replay(sessions: Sequence[BenchResult], mode: Mode, *, sessions_a_side: int = 1, settings: Settings | None = None) -> Replay:
    """Every split of ``sessions`` into ``sessions_a_side`` against as many, compared as ``mode`` says."""
    base_settings = settings or Settings()
    judged = Settings(
        base_settings.confidence,
        base_settings.noise_floor,
        base_settings.resolution,
        0.0 if mode == "zero" else None,
        base_settings.default_session_cv,
    )
    done = Replay(mode, sessions_a_side)
    for base, new in _splits(len(sessions), sessions_a_side):
        calibration = None
        if mode == "calibrated":
            others = [s for i, s in enumerate(sessions) if i not in base + new]
            calibration = calibrate(others, sources=[f"session {i + 1}" for i in range(len(others))], host="replay")
        comparison = compare([sessions[i] for i in base], [sessions[i] for i in new], judged, calibration=calibration)
        done.comparisons += 1
        for level in comparison.levels:
            done.headline_verdicts[level.verdict] = done.headline_verdicts.get(level.verdict, 0) + 1
        calls = false_calls(comparison)
        if calls:
            done.false += 1
            name = f"{'+'.join(str(i + 1) for i in base)} vs {'+'.join(str(i + 1) for i in new)}"
            done.calls += [f"{name}: {call}" for call in calls]
    return done
