"""bench compare on synthesized results: improved, regressed, no change, an unstable baseline, warm-up."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.bench.compare import compare, stability_warnings
from rigaudit.tools.bench.errors import BenchInputError
from rigaudit.tools.bench.results import BenchResult, Sample, load_result, summarize


def _result(levels: dict[int, list[float]], *, requests: int = 24, seed: int = 1, slow_first: int = 0) -> BenchResult:
    """Each level's repeats at the given output tok/s; requests of 128 tokens with jittered TTFT and ITL."""
    rng = random.Random(seed)
    runs = []
    for repeat in range(max(len(v) for v in levels.values())):
        for concurrency, rates in levels.items():
            if repeat >= len(rates):
                continue
            samples = []
            for i in range(requests):
                ttft = rng.uniform(40, 60) * (10 if repeat == 0 and i < slow_first else 1)
                itl = [rng.uniform(9, 11) * 100 / rates[repeat] for _ in range(127)]
                samples.append(Sample(ttft_ms=ttft, itl_ms=itl, output_tokens=128))
            duration = requests * 128 / rates[repeat]
            runs.append(summarize(samples, concurrency=concurrency, repeat=repeat, duration_s=duration))
    return BenchResult(base_url="http://x", model="m", started_at="2026-01-01T00:00:00+00:00", runs=runs)


def test_improved() -> None:
    result = compare(_result({4: [100, 102, 98]}), _result({4: [130, 128, 132]}, seed=2))
    (level,) = result.levels
    tput = level.metrics[0]
    assert level.verdict == "improved"
    assert tput.change == pytest.approx(0.30, abs=0.01)
    assert tput.ci_low is not None and tput.ci_high is not None and 0 < tput.ci_low <= tput.change <= tput.ci_high
    itl = level.metrics[2]
    assert itl.metric == "itl_ms_p50" and itl.verdict == "improved" and itl.change is not None and itl.change < 0


def test_regressed() -> None:
    (level,) = compare(_result({4: [130, 128, 132]}), _result({4: [100, 102, 98]}, seed=2)).levels
    assert level.verdict == "regressed"
    assert level.metrics[2].verdict == "regressed"  # ITL went up


def test_no_significant_change() -> None:
    (level,) = compare(_result({4: [100, 102, 98]}), _result({4: [101, 99, 100]}, seed=2)).levels
    assert level.verdict == "no significant change"


def test_small_but_consistent_change_under_the_noise_floor_does_not_count() -> None:
    base, new = _result({1: [100, 100.5, 99.5]}), _result({1: [103, 103.5, 102.5]}, seed=2)
    assert compare(base, new).levels[0].verdict == "no significant change"
    assert compare(base, new, noise_floor=0.01).levels[0].verdict == "improved"


def test_unstable_baseline_is_reported_and_swamps_the_change() -> None:
    # the story: concurrency-10 throughput at 38 and 66 tok/s between sessions with nothing changed
    base, new = _result({10: [38, 66, 52]}), _result({10: [60, 61, 59]}, seed=2)
    result = compare(base, new)
    assert result.levels[0].verdict == "no significant change"
    warning = next(w for w in result.warnings if "unstable" in w)
    assert "baseline unstable at concurrency 10" in warning and "38.0–66.0" in warning


def test_warmup_detected_in_first_repeat_and_first_requests() -> None:
    slow_repeat = stability_warnings(_result({4: [70, 100, 101]}), "baseline")
    assert any("first repeat at concurrency 4" in w and "--warmup" in w for w in slow_repeat)
    slow_requests = stability_warnings(_result({4: [100, 100, 100]}, slow_first=4), "baseline")
    assert any("first 4 request(s)" in w and "--warmup" in w for w in slow_requests)
    assert stability_warnings(_result({4: [100, 101, 99]}), "baseline") == []


def test_single_repeat_and_unmatched_levels_warn() -> None:
    result = compare(_result({1: [100], 8: [300]}), _result({1: [120], 16: [500]}, seed=2))
    assert [lv.concurrency for lv in result.levels] == [1]
    assert any("one repeat per level" in w for w in result.warnings)
    assert any("concurrency 8 only in the baseline" in w for w in result.warnings)
    assert any("concurrency 16 only in the new run" in w for w in result.warnings)


def test_seeded_and_deterministic() -> None:
    base, new = _result({4: [100, 104, 97]}), _result({4: [108, 103, 110]}, seed=2)
    assert compare(base, new, seed=7).to_dict() == compare(base, new, seed=7).to_dict()
    assert compare(base, new, seed=7).to_dict() != compare(base, new, seed=8).to_dict()


def test_external_results_without_samples_compare_on_repeats() -> None:
    base = BenchResult(
        started_at="t",
        runs=[
            summarize([], concurrency=4, repeat=r, duration_s=1).model_copy(
                update={"output_tokens_per_s": v, "ttft_ms_p50": 50.0}
            )
            for r, v in enumerate([100, 101, 99])
        ],
    )
    new = BenchResult(
        started_at="t",
        runs=[
            summarize([], concurrency=4, repeat=r, duration_s=1).model_copy(
                update={"output_tokens_per_s": v, "ttft_ms_p50": 40.0}
            )
            for r, v in enumerate([150, 149, 151])
        ],
    )
    (level,) = compare(base, new).levels
    assert level.verdict == "improved" and level.metrics[1].verdict == "improved"


def test_cli_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    base.write_text(_result({10: [38, 66, 52]}).to_json())
    new.write_text(_result({10: [60, 61, 59]}, seed=2).to_json())
    report = tmp_path / "system-improve.md"
    out = tmp_path / "cmp.json"
    assert main(["bench", "compare", str(base), str(new), "--json", str(out), "--report", str(report)]) == 0
    data = json.loads(out.read_text())
    assert data["schema"] == "rigaudit.compare/1" and data["levels"][0]["verdict"] == "no significant change"
    assert "unstable" in capsys.readouterr().out
    assert "## Benchmark comparison" in report.read_text() and "baseline unstable" in report.read_text()


def test_bad_inputs_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wrong = tmp_path / "audit.json"
    wrong.write_text('{"schema": "rigaudit.audit/1"}')
    with pytest.raises(BenchInputError, match=r"not a rigaudit\.bench/1"):
        load_result(wrong)
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema": "rigaudit.bench/1", "started_at": "t", "runs": [{"concurrency": "x"}]}')
    with pytest.raises(BenchInputError, match=r"runs\.0"):
        load_result(broken)
    assert main(["bench", "compare", str(tmp_path / "missing.json"), str(wrong)]) == 2
    assert "cannot read" in capsys.readouterr().err
