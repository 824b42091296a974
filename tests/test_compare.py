"""bench compare on synthesized results: the repeat as the unit, Holm, not enough repeats, like with like, exit codes.

The repeat-level machinery is tested with ``REPEATS_ONLY`` (``--session-cv 0``: no between-session noise);
sessions as a level of the model, calibrations and the default are in tests/test_compare_sessions.py.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.bench.compare import Contrast, Settings, compare, metric_changes
from rigaudit.tools.bench.drift import stability_warnings
from rigaudit.tools.bench.errors import BenchInputError
from rigaudit.tools.bench.like import WorkloadMismatch
from rigaudit.tools.bench.results import BenchResult, Sample, load_result, summarize
from rigaudit.tools.bench.stats import t_quantile

TOKENS = 16


def _result(
    levels: dict[int, list[float]], *, requests: int = 8, seed: int = 1, slow_first: int = 0, **meta: object
) -> BenchResult:
    """Each level's repeats at the given output tok/s (repeat-major order, as a session runs them)."""
    rng = random.Random(seed)
    runs = []
    order = 0
    for repeat in range(max(len(v) for v in levels.values())):
        for concurrency, rates in levels.items():
            if repeat >= len(rates):
                continue
            samples = []
            for i in range(requests):
                ttft = rng.uniform(40, 60) * (10 if repeat == 0 and i < slow_first else 1) * 100 / rates[repeat]
                itl = [rng.uniform(9.5, 10.5) * 100 / rates[repeat] for _ in range(TOKENS - 1)]
                samples.append(Sample(ttft_ms=ttft, itl_ms=itl, output_tokens=TOKENS, latency_ms=ttft + sum(itl)))
            duration = requests * TOKENS / rates[repeat]
            runs.append(summarize(samples, concurrency=concurrency, repeat=repeat, duration_s=duration, order=order))
            order += 1
    fields: dict[str, object] = {"base_url": "http://x", "model": "m", "max_tokens": TOKENS, "tool": "rigaudit 1", **meta}
    return BenchResult(started_at="2026-01-01T00:00:00+00:00", runs=runs, **fields)  # type: ignore[arg-type]


REPEATS_ONLY = Settings(session_cv=0.0)
FIVE_BASE = [100, 104, 97, 101, 99]
FIVE_GAIN = [130, 127, 133, 129, 131]


def test_a_clear_gain_with_five_repeats_is_improved_with_an_interval_around_it() -> None:
    (level,) = compare(_result({4: FIVE_BASE}), _result({4: FIVE_GAIN}, seed=2)).levels
    tput, ttft, itl = level.metrics
    assert level.verdict == "improved" and tput.headline
    assert tput.change == pytest.approx(0.30, abs=0.01)
    assert tput.ci_low is not None and tput.ci_high is not None and 0 < tput.ci_low < tput.change < tput.ci_high
    assert tput.p_adjusted is not None and tput.p is not None and tput.p_adjusted >= tput.p
    assert itl.metric == "itl_ms_p50" and itl.verdict == "improved" and itl.change is not None and itl.change < 0
    assert ttft.verdict == "improved"


def test_a_clear_loss_is_regressed() -> None:
    (level,) = compare(_result({4: FIVE_GAIN}), _result({4: FIVE_BASE}, seed=2)).levels
    assert level.verdict == "regressed" and level.metrics[2].verdict == "regressed"


def test_stable_identical_runs_are_no_significant_change() -> None:
    (level,) = compare(_result({4: FIVE_BASE}), _result({4: [101, 99, 100, 102, 98]}, seed=2), REPEATS_ONLY).levels
    assert level.verdict == "no significant change"
    assert "within ±10%" in level.headline.reason


def _fewest_repeats(noise: float, half_width: float, quantile: float) -> int:
    """The fewest repeats a side whose interval at this t quantile is no wider than ``half_width``."""
    return next(n for n in range(2, 100_000) if t_quantile(quantile, 2 * n - 2) * noise * math.sqrt(2 / n) <= half_width)


def test_three_noisy_repeats_are_not_enough_and_say_how_many_would_be() -> None:
    # the H200 story: 259, 307, 230 tok/s for one configuration, 263, 215, 265 for the same one again
    (level,) = compare(_result({1: [258.9, 307.3, 229.9]}), _result({1: [262.7, 215.2, 264.5]}, seed=2), REPEATS_ONLY).levels
    head = level.headline
    assert level.verdict == "not enough repeats"
    assert head.repeats_needed is not None and head.repeats_needed > 3 and head.noise is not None
    assert head.label == f"not enough repeats (need >= {head.repeats_needed})"
    # the number is what the observed change and spread need to decide it by the test applied: the whole interval
    # inside ±10% (the 95% interval, as equivalence is judged), or the change significant as Holm judges it: the
    # headline's share of the family's alpha, 0.05 * 4/6 with TTFT and ITL tested beside it
    assert head.change is not None and abs(head.change) >= 0.05
    assert [m.p is not None for m in level.metrics] == [True, True, True]
    centre = abs(math.log1p(head.change))
    significant = _fewest_repeats(head.noise, centre, 1 - 0.05 * 4 / 6 / 2)
    inside = _fewest_repeats(head.noise, math.log1p(0.10) - centre, 0.975)
    assert head.repeats_needed == min(significant, inside) == significant
    assert significant > _fewest_repeats(head.noise, centre, 0.975)  # the unadjusted figure would promise too few
    assert "significant at p < 0.033, its share of the Holm family, if it holds" in head.reason


def test_resolution_decides_between_no_change_and_not_enough_repeats() -> None:
    base, new = _result({1: [100, 115, 88, 108, 92]}), _result({1: [105, 90, 112, 96, 101]}, seed=2)
    assert compare(base, new, REPEATS_ONLY).levels[0].verdict == "not enough repeats"
    assert compare(base, new, Settings(resolution=0.25, session_cv=0.0)).levels[0].verdict == "no significant change"


def test_small_but_consistent_change_under_the_noise_floor_does_not_count() -> None:
    base, new = _result({1: [100, 100.5, 99.5, 100.2]}), _result({1: [103, 103.5, 102.5, 103.2]}, seed=2)
    level = compare(base, new, REPEATS_ONLY).levels[0]
    assert level.verdict == "no significant change" and "below the 5% noise floor" in level.headline.reason
    assert compare(base, new, Settings(noise_floor=0.01, session_cv=0.0)).levels[0].verdict == "improved"


def test_one_repeat_cannot_support_a_verdict() -> None:
    result = compare(_result({1: [100], 8: [300]}), _result({1: [160], 16: [500]}, seed=2), allow_different=True)
    (level,) = result.levels
    assert level.concurrency == 1 and level.verdict == "not enough repeats" and level.headline.repeats_needed is None
    assert "spread is unknown" in level.headline.reason
    assert level.headline.change == pytest.approx(0.6, abs=0.01)
    assert any("concurrency 8 only in the baseline" in w for w in result.warnings)
    assert any("concurrency 16 only in the new run" in w for w in result.warnings)


def test_holm_adjusts_over_levels_and_metrics() -> None:
    # a borderline headline (p = 0.029): alone it counts; among 8 null secondary metrics its adjusted p is 3x
    borderline = Contrast("output_tokens_per_s", [100, 102, 98, 101, 99], [102.5, 104, 101.5, 103, 101])
    alone = metric_changes([borderline], Settings(noise_floor=0.0))[0]
    assert alone.verdict == "improved" and alone.p is not None and alone.p_adjusted == pytest.approx(alone.p)
    assert 0.02 < alone.p < 0.05
    null = Contrast("ttft_ms_p50", [50, 51, 49, 50, 50.5], [50.2, 49.8, 50.6, 49.4, 50.1])
    family = metric_changes([borderline] + [null] * 8, Settings(noise_floor=0.0))
    head = family[0]
    assert head.p == pytest.approx(alone.p) and head.p_adjusted == pytest.approx(alone.p * (4 + 8) / 4)
    assert head.verdict != "improved"
    assert all(m.verdict != "improved" and m.p_adjusted is not None and m.p_adjusted >= head.p_adjusted for m in family[1:])


def test_identical_inputs_give_identical_answers() -> None:
    base, new = _result({4: [100, 104, 97]}), _result({4: [108, 103, 110]}, seed=2)
    assert compare(base, new).to_dict() == compare(base, new).to_dict()


def test_warmup_detected_in_first_repeat_and_first_requests() -> None:
    slow_repeat = stability_warnings(_result({4: [70, 100, 101]}), "baseline")
    assert any("first repeat at concurrency 4" in w and "--warmup" in w for w in slow_repeat)
    slow_requests = stability_warnings(_result({4: [100, 100, 100]}, requests=16, slow_first=4), "baseline")
    assert any("first 4 request(s)" in w and "--warmup" in w for w in slow_requests)
    assert stability_warnings(_result({4: [100, 101, 99]}), "baseline") == []


def test_a_trend_over_the_session_is_reported_as_drift() -> None:
    # two levels, six repeats; every run 3% slower than the one before (thermal throttling, say)
    rates = {1: [100 * 0.97 ** (2 * r) for r in range(6)], 8: [400 * 0.97 ** (2 * r + 1) for r in range(6)]}
    result = compare(_result(rates), _result({1: [100] * 6, 8: [400] * 6}, seed=2), allow_different=True)
    drift = next(w for w in result.warnings if "drifted" in w)
    assert drift.startswith("baseline drifted: output tok/s fell") and "p = 0.000" in drift
    assert result.drift[0].total == pytest.approx(0.97**11 - 1, abs=0.01)
    assert not any(w.startswith("new run drifted") for w in result.warnings)


@pytest.mark.parametrize(
    ("field", "value", "text"),
    [
        ("max_tokens", 64, f"max tokens {TOKENS} vs 64"),
        ("model", "other", "model m vs other"),
        ("base_url", "http://y", "URL http://x vs http://y"),
        ("api", "completions", "API not recorded vs completions"),
        ("prompt_tokens", 512, "prompt tokens not recorded vs 512"),
        ("tool", "rigaudit 2", "tool rigaudit 1 vs rigaudit 2"),
    ],
)
def test_different_workloads_are_refused_with_the_differences(field: str, value: object, text: str) -> None:
    base = _result({4: FIVE_BASE})
    new = _result({4: FIVE_GAIN}, seed=2).model_copy(update={field: value})
    with pytest.raises(WorkloadMismatch) as caught:
        compare(base, new)
    assert caught.value.differences == [text]
    allowed = compare(base, new, allow_different=True)
    assert allowed.differences == [text] and any(text in w for w in allowed.warnings)


def test_different_levels_and_request_counts_are_different_workloads() -> None:
    base, new = _result({1: FIVE_BASE, 4: FIVE_BASE}), _result({1: FIVE_GAIN}, requests=4, seed=2)
    with pytest.raises(WorkloadMismatch) as caught:
        compare(base, new)
    assert caught.value.differences == ["concurrency levels 1,4 vs 1", "requests per run c=1:8 c=4:8 vs c=1:4"]
    assert compare(base, new, allow_different=True).levels[0].verdict == "improved"


def test_the_same_server_with_or_without_v1_is_alike() -> None:
    base, new = _result({4: FIVE_BASE}), _result({4: FIVE_BASE}, seed=2, base_url="http://x/v1/")
    assert compare(base, new).differences == []


def test_external_results_without_samples_compare_on_repeats() -> None:
    def external(rates: list[float], ttft: float) -> BenchResult:
        runs = [
            summarize([], concurrency=4, repeat=r, duration_s=1).model_copy(
                update={"output_tokens_per_s": v, "ttft_ms_p50": ttft + r}
            )
            for r, v in enumerate(rates)
        ]
        return BenchResult(started_at="t", runs=runs)

    (level,) = compare(external([100, 101, 99, 100], 50.0), external([150, 149, 151, 150], 40.0), REPEATS_ONLY).levels
    assert level.verdict == "improved" and level.metrics[1].verdict == "improved"
    assert [m.metric for m in level.metrics] == ["output_tokens_per_s", "ttft_ms_p50"]  # no ITL on either side


def _files(tmp_path: Path, base: BenchResult, new: BenchResult) -> tuple[Path, Path]:
    b, n = tmp_path / "base.json", tmp_path / "new.json"
    b.write_text(base.to_json())
    n.write_text(new.to_json())
    return b, n


def test_cli_compare_writes_json_and_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, new = _files(tmp_path, _result({10: [38, 66, 52]}), _result({10: [60, 61, 59]}, seed=2))
    report, out = tmp_path / "system-improve.md", tmp_path / "cmp.json"
    argv = ["bench", "compare", str(base), str(new), "--json", str(out), "--report", str(report), "--no-transcript"]
    assert main(argv) == 0
    data = json.loads(out.read_text())
    assert data["schema"] == "rigaudit.compare/3" and data["levels"][0]["verdict"] == "not enough repeats"
    # no calibration: the default between-session spread, said in the headline; no repeats would be enough
    assert data["between"]["mode"] == "default" and "NOT CALIBRATED" in data["between"]["text"]
    head = data["levels"][0]["metrics"][0]
    assert head["repeats_needed"] is None and head["sessions_needed"] > 1 and head["session_noise"] == 0.08
    printed = capsys.readouterr().out
    assert "unstable" in printed and "method: the repeat is the unit" in printed and "Holm" in printed
    assert "NOT CALIBRATED" in printed and "bench calibrate" in printed
    text = report.read_text()
    assert "## Benchmark comparison" in text and "baseline unstable" in text and "need >=" in text
    assert "NOT CALIBRATED" in text


def test_cli_fail_on_regression_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, new = _files(tmp_path, _result({4: FIVE_GAIN}), _result({4: FIVE_BASE}, seed=2))
    assert main(["bench", "compare", str(base), str(new), "--no-transcript"]) == 0
    assert main(["bench", "compare", str(base), str(new), "--no-transcript", "--fail-on-regression"]) == 3
    assert "significant regression of output tok/s (concurrency 4)" in capsys.readouterr().out
    improved = _files(tmp_path, _result({4: FIVE_BASE}), _result({4: FIVE_GAIN}, seed=2))
    assert main(["bench", "compare", *map(str, improved), "--no-transcript", "--fail-on-regression"]) == 0


def test_cli_refuses_different_workloads_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, new = _files(tmp_path, _result({4: FIVE_BASE}), _result({4: FIVE_GAIN}, seed=2, max_tokens=64, model="big"))
    assert main(["bench", "compare", str(base), str(new), "--no-transcript"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"rigaudit: not like with like: model m vs big; max tokens {TOKENS} vs 64 "
        "(compare runs of the same workload, or pass --allow-different)"
    )
    assert main(["bench", "compare", str(base), str(new), "--no-transcript", "--allow-different"]) == 0
    assert "different workloads, compared anyway" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flag", "value", "text"),
    [
        ("--confidence", "1.5", "--confidence is a fraction"),
        ("--noise-floor", "-1", "--noise-floor"),
        ("--resolution", "0", "--resolution"),
    ],
)
def test_cli_bounds_every_parameter(tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, text: str) -> None:
    base, new = _files(tmp_path, _result({4: FIVE_BASE}), _result({4: FIVE_BASE}, seed=2))
    try:
        code = main(["bench", "compare", str(base), str(new), "--no-transcript", flag, value])
    except SystemExit as exc:  # refused as it was parsed (tests/test_number_options.py)
        code = int(exc.code or 0)
    assert code == 2
    err = capsys.readouterr().err
    assert text in err and err.count("\n") == 1


def test_bad_inputs_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wrong = tmp_path / "audit.json"
    wrong.write_text('{"schema": "rigaudit.audit/1"}')
    with pytest.raises(BenchInputError, match=r"not a rigaudit\.bench/1"):
        load_result(wrong)
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema": "rigaudit.bench/1", "started_at": "t", "runs": [{"concurrency": "x"}]}')
    with pytest.raises(BenchInputError, match=r"runs\.0"):
        load_result(broken)
    crafted = tmp_path / "nan.json"
    crafted.write_text(
        '{"schema": "rigaudit.bench/1", "started_at": "t", "runs": [{"concurrency": 1, "output_tokens_per_s": NaN}]}'
    )
    with pytest.raises(BenchInputError, match=r"output_tokens_per_s"):
        load_result(crafted)
    negative = tmp_path / "neg.json"
    negative.write_text(
        '{"schema": "rigaudit.bench/1", "started_at": "t", "runs": [{"concurrency": 1, "output_tokens_per_s": -5}]}'
    )
    with pytest.raises(BenchInputError, match=r"output_tokens_per_s"):
        load_result(negative)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(BenchInputError, match=r"nested too deeply|not a rigaudit"):
        load_result(deep)
    with pytest.raises(BenchInputError, match="not a regular file"):
        load_result(tmp_path)
    assert main(["bench", "compare", str(tmp_path / "missing.json"), str(wrong), "--no-transcript"]) == 2
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["compare", "ab"])
def test_help_states_the_method(kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["bench", kind, "--help"])
    assert stopped.value.code == 0
    text = capsys.readouterr().out
    assert "repeats and sessions are the units" in text and "t interval" in text and "Holm" in text
    assert "not enough repeats (need >= N)" in text and "--fail-on-regression" in text
    assert "the WHOLE interval [low, high] lies inside ±--resolution" in text  # the rule the code follows
    if kind == "compare":
        assert "--session-cv" in text and "--calibration" in text and "--against" in text
