"""The repeats (A/B cycles) advised for an undecided change are those the test applied needs: Holm's, not one test's.

bench ab judges every arm, level and metric in one weighted Holm family, so a change is significant only at its
share of the family's alpha. The advice is checked by its promise: at the advised cycles, an estimate that holds
(the same change and spread) is decided by :func:`analyze`; one cycle fewer it is not.
"""

from __future__ import annotations

import math

import pytest

from rigaudit.tools.bench.ab import BASELINE, AbResult, ArmResult, analyze
from rigaudit.tools.bench.compare import HEADLINE_WEIGHT, Settings
from rigaudit.tools.bench.results import BenchResult, Run
from rigaudit.tools.bench.stats import t_quantile

LEVELS = (1, 4)
CHANGE = 0.07
SPREAD = 0.08
"""The spread of one cycle's log ratio: +7% is undecided at 6 cycles, at its Holm level and at 95% alike."""


def _unit(n: int) -> list[float]:
    """n values of mean 0 and sample SD 1 exactly."""
    raw = [i - (n - 1) / 2 for i in range(n)]
    sd = math.sqrt(math.fsum(x * x for x in raw) / (n - 1))
    return [x / sd for x in raw]


def _runs(cycles: int, gain: dict[int, float]) -> list[Run]:
    """One run per level and cycle: tok/s 100 times exp(log(1+gain) + SPREAD z) (no gain: the baseline's 100)."""
    z = _unit(cycles)
    runs = []
    for c in LEVELS:
        for cycle in range(cycles):
            rate = 100.0 * math.exp(math.log1p(gain[c]) + SPREAD * z[cycle]) if c in gain else 100.0
            runs.append(Run(concurrency=c, repeat=cycle, output_tokens_per_s=rate, ttft_ms_p50=50.0, itl_ms_p50=10.0))
    return runs


def _ab(cycles: int) -> AbResult:
    """The baseline and two arms: fix-a gains CHANGE at c=1, everything else is the baseline's exactly."""
    arms = [(BASELINE, {}), ("fix-a", {1: CHANGE, 4: 0.0}), ("fix-b", {1: 0.0, 4: 0.0})]
    return AbResult(
        host="h",
        source="local",
        plan_hash="x",
        steps=["fix-a", "fix-b"],
        journal="j",
        cycles=cycles,
        complete=True,
        arms=[
            ArmResult(name=name, result=BenchResult(started_at="2026-01-01T00:00:00+00:00", runs=_runs(cycles, gain)))
            for name, gain in arms
        ],
    )


def _headline(cycles: int) -> tuple[str, int | None, str]:
    arm = next(a for a in analyze(_ab(cycles), Settings()).arms if a.arm == "fix-a")
    head = next(level for level in arm.levels if level.concurrency == 1).headline
    return head.verdict, head.repeats_needed, head.reason


def test_the_cycles_advised_decide_the_change_by_holm_and_one_fewer_do_not() -> None:
    verdict, need, reason = _headline(6)
    assert verdict == "not enough repeats" and need is not None and need > 6
    assert "its share of the Holm family" in reason
    assert _headline(need)[0] == "improved"
    assert _headline(need - 1)[0] == "not enough repeats"


def test_the_advice_is_the_holm_level_of_the_family_not_the_unadjusted_one() -> None:
    # 2 arms x 2 levels x (tok/s, TTFT, ITL): 4 headlines of weight 4 and 8 others of 1; the headline's level
    # is 0.05 * 4 / 24; the unadjusted 95% figure would have advised fewer cycles, at which Holm does not count it
    level = 0.05 * HEADLINE_WEIGHT / (4 * HEADLINE_WEIGHT + 8)
    _, need, reason = _headline(6)
    target = math.log1p(CHANGE)

    def fewest(quantile: float) -> int:
        return next(n for n in range(2, 10_000) if t_quantile(quantile, n - 1) * SPREAD / math.sqrt(n) <= target)

    assert need == fewest(1 - level / 2)
    unadjusted = fewest(0.975)
    assert 6 < unadjusted < need and _headline(unadjusted)[0] == "not enough repeats"
    assert f"p < {level:.2g}" in reason


@pytest.mark.parametrize("change", [0.06, 0.09, 0.15])
def test_the_promise_holds_at_other_changes(change: float, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(f"{__name__}.CHANGE", change)
    verdict, need, _ = _headline(3)
    if verdict != "not enough repeats":
        assert verdict == "improved"
        return
    assert need is not None
    assert _headline(need)[0] in ("improved", "no significant change")
    if need > 4:
        assert _headline(need - 1)[0] == "not enough repeats"
