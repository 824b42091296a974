"""Sessions as a level of the model: the interval's variance, calibrations stored and found, the default said aloud."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.bench import stats
from rigaudit.tools.bench.calibration import calibrate, calibrations_dir, find, load_calibration, save
from rigaudit.tools.bench.compare import DEFAULT_SESSION_CV, Settings, compare
from rigaudit.tools.bench.errors import BenchInputError
from rigaudit.tools.bench.like import WorkloadMismatch
from rigaudit.tools.bench.machine import same_container
from rigaudit.tools.bench.results import BenchResult
from rigaudit.tools.bench.sessions import Between, _spread, anova, log_sessions, needed, nested
from rigaudit.tools.bench.stats import betainc, t_quantile, t_two_sided_p, welch
from rigaudit.tools.files.bounded import InputError
from rigaudit.tools.testing.bench_pairs import Judging, Session, compare_rates, session_result
from tests.support.bench_files import write_results

H200 = Session(drift=0.065, session_cv=0.06, levels=(1, 4))


def _draw(seed: int, k: int, n: int = 5, sb: float = 0.06, sw: float = 0.065) -> list[list[float]]:
    rng = random.Random(seed)
    sessions = []
    for _ in range(k):
        offset = rng.gauss(0.0, sb)
        sessions.append([100.0 * math.exp(offset + rng.gauss(0.0, sw)) for _ in range(n)])
    return sessions


def _sessions(seed: int, count: int, gain: float = 1.0, session: Session = H200) -> list[BenchResult]:
    rng = random.Random(seed)
    return [session_result(rng, session, 5, gain) for _ in range(count)]


# --- the variance ------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_one_session_a_side_with_no_between_noise_is_welchs_interval(seed: int) -> None:
    base, new = _draw(seed, 1)[0], _draw(seed + 100, 1)[0]
    found = nested([base], [new], Between("assumed", sd=0.0))
    assert found is not None and nested([base], [new]) is not None
    est, _ = found
    reference = welch(base, new)
    assert reference is not None
    assert (est.change, est.low, est.high, est.p, est.df) == pytest.approx(
        (reference.change, reference.low, reference.high, reference.p, reference.df)
    )


def test_several_sessions_a_side_make_the_session_the_unit() -> None:
    base, new = _draw(1, 3), _draw(2, 3)
    found = nested(base, new)
    assert found is not None
    est, model = found
    means = [[sum(math.log(v) for v in s) / len(s) for s in side] for side in (base, new)]
    pooled = sum(sum((m - sum(side) / 3) ** 2 for m in side) for side in means) / 4  # df 2 + 2
    half = t_quantile(0.975, 4) * math.sqrt(pooled * 2 / 3)
    shown = max(pooled * 2 / 3, 0.0)
    assert model.source == "sessions" and model.sessions == (3, 3) and est.df == pytest.approx(4)
    assert est.half_width == pytest.approx(max(half, t_quantile(0.975, 4) * math.sqrt(shown)))


def test_a_calibration_gives_the_variance_of_its_session_means_and_its_degrees_of_freedom() -> None:
    calibration = log_sessions(_draw(3, 6))
    squares = anova(calibration)
    assert squares is not None and squares.df_between == 5 and squares.n0 == 5
    tau2 = squares.between / squares.n0  # = the variance of the 6 session means
    means = [sum(s) / len(s) for s in calibration]
    assert tau2 == pytest.approx(sum((m - sum(means) / 6) ** 2 for m in means) / 5)
    found = nested(_draw(4, 1), _draw(5, 1), Between("calibrated", squares))
    assert found is not None
    est, model = found
    assert model.source == "calibrated" and est.df == pytest.approx(5)
    assert est.half_width == pytest.approx(t_quantile(0.975, 5) * math.sqrt(2 * tau2))
    # fewer repeats than the calibration's sessions add their within part (more earn no credit)
    fewer = nested([_draw(4, 1)[0][:3]], [_draw(5, 1)[0][:3]], Between("calibrated", squares))
    assert fewer is not None
    se = fewer[0].half_width / t_quantile(0.975, fewer[0].df)
    assert se**2 == pytest.approx(2 * (tau2 + squares.within * (1 / 3 - 1 / 5)))


def test_never_narrower_than_the_repeats_compared_show() -> None:
    quiet = anova(log_sessions(_draw(6, 6, sb=0.0, sw=0.01)))  # a calibration on a very quiet day
    assert quiet is not None
    noisy_base, noisy_new = _draw(7, 1, sb=0.0, sw=0.15), _draw(8, 1, sb=0.0, sw=0.15)
    found = nested(noisy_base, noisy_new, Between("calibrated", quiet))
    alone = welch(noisy_base[0], noisy_new[0])
    assert found is not None and alone is not None
    assert found[0].high - found[0].low >= 0.99 * (alone.high - alone.low)


def test_what_would_narrow_it_repeats_or_sessions() -> None:
    # within-dominated: more repeats do it; between-dominated: only more sessions can
    within = nested(_draw(9, 1, sb=0.0, sw=0.10), _draw(10, 1, sb=0.0, sw=0.10), Between("assumed", sd=0.0))
    between = nested(_draw(11, 1), _draw(12, 1), Between("assumed", sd=0.08))
    assert within is not None and between is not None
    repeats, sessions = needed(within[1], resolution=0.10, confidence=0.95)
    assert repeats is not None and repeats > 5 and sessions is None
    repeats, sessions = needed(between[1], resolution=0.10, confidence=0.95)
    assert repeats is None and sessions is not None and 4 <= sessions <= 12
    # the sessions needed is the first count whose interval fits (sigma_B known: Satterthwaite over the within part)
    model = between[1]
    for k, fits in ((sessions, True), (sessions - 1, False)):
        b, w = 2 * model.between_sd**2 / k, 2 * model.within_sd**2 / (k * model.repeats)
        df = (b + w) ** 2 / (w**2 / (2 * k * (model.repeats - 1)))
        assert (t_quantile(0.975, df) * math.sqrt(b + w) <= math.log1p(0.10)) == fits


def test_what_would_narrow_it_is_the_first_count_the_exact_quantile_fits() -> None:
    # a target set to the exact half-width at n repeats (or s sessions) is first met at n (at s): the whole-number
    # bounds that decide most counts must never decide one the exact quantile decides otherwise
    rng = random.Random(8)
    for _ in range(200):
        found = nested(_draw(rng.randrange(1000), 1), _draw(rng.randrange(1000), 1), Between("assumed", sd=rng.uniform(0, 0.1)))
        assert found is not None
        model, n = found[1], rng.randint(3, 60)
        df, se = _spread(model, 1, n, model.between_df)
        assert needed(model, resolution=0.1, confidence=0.95, half_width=t_quantile(0.975, df) * se)[0] == n
        if model.between_sd > 0:
            s = rng.randint(3, 60)
            df, se = _spread(model, s, max(model.repeats, 2.0), model.between_df + 2.0 * (s - 1))
            assert needed(model, resolution=0.1, confidence=0.95, half_width=t_quantile(0.975, df) * se)[1] == s


def test_what_would_narrow_it_takes_few_newton_searches(monkeypatch: pytest.MonkeyPatch) -> None:
    # each count tried has fractional degrees of freedom; its quantile is bounded by the cached whole-number ones
    calls = []

    def counted(a: float, b: float, x: float) -> float:
        calls.append(x)
        return betainc(a, b, x)

    monkeypatch.setattr(stats, "betainc", counted)
    t_quantile.cache_clear()
    h200 = Session(drift=0.065, session_cv=0.06)
    compare_rates(40, repeats=5, gain=1.0, session=h200, seed=26, judging=Judging("calibrated"))
    assert len(calls) < 6000  # 21,000 when each count's quantile was searched for


def test_nothing_to_learn_from_is_no_estimate() -> None:
    assert nested([[100.0]], [[110.0]]) is None  # one repeat, one session a side
    assert nested([[]], [[100.0, 101.0]]) is None
    found = nested([[100.0], [104.0], [98.0]], [[110.0], [108.0], [113.0]])  # sessions of one repeat (external)
    assert found is not None and found[1].source == "sessions"


def test_t_quantile_inverts_the_tail_for_any_degrees_of_freedom() -> None:
    # Satterthwaite's degrees of freedom are not whole numbers; a stalled Newton step once returned a bisection
    rng = random.Random(5)
    for _ in range(2000):
        df, p = rng.uniform(1.0, 400.0), rng.choice([0.9, 0.95, 0.975, 0.99, 0.995, rng.uniform(0.55, 0.999)])
        assert t_two_sided_p(t_quantile(p, df), df) == pytest.approx(2 * (1 - p), rel=1e-6)
    assert t_quantile(0.975, 7.726300337929591) == pytest.approx(2.32030086077, abs=1e-9)  # scipy.stats.t.ppf


# --- compare ------------------------------------------------------------------------------------------


def test_one_session_a_side_uncalibrated_assumes_the_default_and_says_so() -> None:
    base, new = _sessions(1, 2)
    result = compare(base, new)
    assert result.between is not None and result.between.mode == "default"
    assert "NOT CALIBRATED" in result.between.text and "bench calibrate" in result.between.text
    head = result.levels[0].headline
    assert head.session_noise == DEFAULT_SESSION_CV and head.verdict == "not enough repeats"
    assert head.repeats_needed is None and head.sessions_needed is not None and "sessions a side" in head.reason
    assert head.label == f"not enough sessions (need >= {head.sessions_needed} a side)"


def test_the_storys_gain_is_found_even_uncalibrated() -> None:
    base, new = _sessions(2, 1)[0], _sessions(3, 1, gain=66 / 38)[0]  # 38 tok/s became 66
    assert [lv.verdict for lv in compare(base, new).levels] == ["improved", "improved"]


def test_session_cv_given_overrides_a_calibration() -> None:
    calibration = calibrate(_sessions(4, 6), sources=["x"] * 6, host="h")
    base, new = _sessions(5, 2)
    result = compare(base, new, Settings(session_cv=0.02), calibration=calibration)
    assert result.between is not None and result.between.mode == "given"
    assert all(lv.headline.session_noise == 0.02 for lv in result.levels)


def test_a_calibration_is_used_per_level_and_named_in_the_headline() -> None:
    calibration = calibrate(_sessions(6, 8), sources=[f"s{i}" for i in range(8)], host="h200")
    base, new = _sessions(7, 2)
    result = compare(base, new, calibration=calibration, calibration_path="cal.json")
    assert result.between is not None and result.between.mode == "calibrated"
    assert "from 8 sessions of 5 repeats" in result.between.text and "cal.json" in result.between.text
    for level in result.levels:
        component = calibration.component(level.concurrency, "output_tokens_per_s")
        assert component is not None and level.headline.session_noise is not None


def test_several_sessions_a_side_are_counted_and_must_be_alike() -> None:
    base, new = _sessions(8, 3), _sessions(9, 3, gain=1.5)
    result = compare(base, new)
    assert result.between is not None and result.between.mode == "sessions"
    assert (result.base_sessions, result.new_sessions) == (3, 3)
    level = result.levels[0]
    assert (level.base_sessions, level.base_repeats) == (3, 15) and level.verdict == "improved"
    odd = new[1].model_copy(update={"max_tokens": 32})
    with pytest.raises(WorkloadMismatch) as caught:
        compare(base, [new[0], odd, new[2]])
    assert caught.value.differences == ["new run 2: max tokens 64 vs 32"]


def test_results_from_different_hosts_are_not_alike() -> None:
    base, new = _sessions(10, 2)
    with pytest.raises(WorkloadMismatch, match="host a vs b"):
        compare(base.model_copy(update={"host": "a"}), new.model_copy(update={"host": "b"}))
    assert compare(base.model_copy(update={"host": "a"}), new).differences == []  # not recorded: not told apart


# --- calibrations ----------------------------------------------------------------------------------


def test_a_calibration_measures_the_between_session_spread() -> None:
    many = calibrate(_sessions(11, 40), sources=["s"] * 40, host="h")
    assert set(many.headline_cv()) == {1, 4}
    for cv in many.headline_cv().values():
        assert 0.035 < cv < 0.085  # the truth: 6%
    quiet = calibrate(_sessions(12, 12, session=Session(drift=0.065, levels=(1, 4))), sources=["s"] * 12, host="h")
    assert all(cv < 0.035 for cv in quiet.headline_cv().values())


def test_a_calibration_refuses_what_cannot_make_one() -> None:
    one = _sessions(13, 1)
    with pytest.raises(BenchInputError, match="at least 2 sessions"):
        calibrate(one, sources=["a"])
    two = _sessions(14, 2)
    with pytest.raises(WorkloadMismatch, match="session 2"):
        calibrate([two[0], two[1].model_copy(update={"model": "other"})], sources=["a", "b"])
    single = [r.model_copy(update={"runs": [run for run in r.runs if run.repeat == 0]}) for r in two]
    with pytest.raises(BenchInputError, match="--repeat 3"):
        calibrate(single, sources=["a", "b"])


def test_stored_calibrations_are_found_by_host_and_workload(tmp_path: Path) -> None:
    sessions = [s.model_copy(update={"host": "node1"}) for s in _sessions(15, 4)]
    calibration = calibrate(sessions, sources=["s"] * 4)
    assert calibration.host == "node1"
    path = save(calibration)
    assert path.parent == calibrations_dir() and load_calibration(path) == calibration
    found = find(sessions[0])
    assert found is not None and (found.calibration, found.path) == (calibration, path)
    assert found.warning is not None and "keyed by the host name 'node1'" in found.warning  # these record no machine
    assert find(sessions[0].model_copy(update={"host": "node2"})) is None
    assert find(sessions[0].model_copy(update={"max_tokens": 8})) is None


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("not json", "not valid JSON"),
        ('{"schema": "rigaudit.bench/1"}', "not a rigaudit.calibration/1"),
        ('{"schema": "rigaudit.calibration/1", "created_at": "t", "host": "h", "workload": {}, "sessions": 0}', "sessions"),
        (
            '{"schema": "rigaudit.calibration/1", "created_at": "t", "host": "h", "workload": {}, "sessions": 2, '
            '"components": [{"concurrency": 1, "metric": "m", "ms_between": NaN, "ms_within": 1, "df_between": 1, '
            '"df_within": 1, "n0": 1}]}',
            "ms_between",
        ),
    ],
)
def test_a_bad_calibration_file_is_one_line(tmp_path: Path, text: str, match: str) -> None:
    bad = tmp_path / "cal.json"
    bad.write_text(text)
    with pytest.raises((BenchInputError, InputError), match=match):  # both one line and exit 2 (UsageError)
        load_calibration(bad)


# --- the command -----------------------------------------------------------------------------------


def test_cli_calibrate_then_compare_picks_it_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = write_results(tmp_path, _sessions(16, 8), "aa")
    out = tmp_path / "cal.json"
    assert main(["bench", "calibrate", *runs[2:], "--json", str(out), "--no-transcript"]) == 0
    printed = capsys.readouterr().out
    assert "session CV" in printed and "stored as" in printed and "one session a side" in printed
    assert json.loads(out.read_text())["sessions"] == 6
    compared = tmp_path / "cmp.json"
    assert main(["bench", "compare", runs[0], runs[1], "--json", str(compared), "--no-transcript"]) == 0
    data = json.loads(compared.read_text())
    assert data["between"]["mode"] == "calibrated" and "from 6 sessions" in data["between"]["text"]
    printed = capsys.readouterr().out
    assert "between sessions: calibrated" in printed and "(calibrated: 6 sessions)" in printed  # the title says it too
    # the session spread the advice uses is the calibration's, within a little of what it stored
    stored = json.loads(out.read_text())
    head = next(c for c in stored["components"] if c["concurrency"] == 1 and c["metric"] == "output_tokens_per_s")
    used = data["levels"][0]["metrics"][0]["session_noise"]
    assert math.sqrt(max(0.0, (head["ms_between"] - head["ms_within"]) / head["n0"])) == pytest.approx(used, rel=0.35)
    assert main(["bench", "compare", runs[0], runs[1], "--json", str(compared), "--no-transcript", "--no-calibration"]) == 0
    assert json.loads(compared.read_text())["between"]["mode"] == "default"
    assert main(["bench", "compare", runs[0], runs[1], "--json", str(compared), "--no-transcript", "--session-cv", "0"]) == 0
    assert json.loads(compared.read_text())["between"]["mode"] == "given"
    assert main(["bench", "calibrate", "--list", "--no-transcript"]) == 0
    assert "6" in capsys.readouterr().out


def test_cli_compare_several_sessions_a_side(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write_results(tmp_path, _sessions(17, 3), "base")
    new = write_results(tmp_path, _sessions(18, 3, gain=1.6), "new")
    out = tmp_path / "cmp.json"
    assert main(["bench", "compare", *base, "--against", *new, "--json", str(out), "--no-transcript"]) == 0
    data = json.loads(out.read_text())
    assert data["between"]["mode"] == "sessions" and data["levels"][0]["base_sessions"] == 3
    assert [lv["verdict"] for lv in data["levels"]] == ["improved", "improved"]
    assert main(["bench", "compare", *base, "--no-transcript"]) == 2
    assert "--against" in capsys.readouterr().err


def test_cli_refuses_a_calibration_of_another_workload(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = [s.model_copy(update={"model": "other"}) for s in _sessions(19, 4)]
    path = save(calibrate(other, sources=["s"] * 4), tmp_path)
    runs = write_results(tmp_path, _sessions(20, 2), "aa")
    assert main(["bench", "compare", *runs, "--calibration", str(path), "--no-transcript"]) == 2
    assert "another host or workload: model other vs synthetic" in capsys.readouterr().err
    assert main(["bench", "compare", *runs, "--session-cv", "2", "--no-transcript"]) == 2
    assert "--session-cv is a fraction" in capsys.readouterr().err


def test_cli_a_damaged_stored_calibration_is_a_warning_not_a_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sessions = _sessions(21, 6)
    path = save(calibrate(sessions[2:], sources=["s"] * 4))
    path.write_text("{ damaged")
    runs = write_results(tmp_path, sessions[:2], "aa")
    assert main(["bench", "compare", *runs, "--no-transcript"]) == 0
    printed = capsys.readouterr().out
    assert "stored calibration cannot be used" in printed and "NOT CALIBRATED" in printed


@pytest.mark.slow
def test_cli_calibrate_runs_each_session_in_its_own_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rigaudit.tools.bench.fake_server import FakeTiming, fake_server

    with fake_server(FakeTiming(ttft_s=0.002, itl_s=0.001)) as server:
        load = ["--base-url", server.base_url, "--model", "m", "--concurrency", "1,2", "--requests", "2"]
        load += ["--max-tokens", "4", "--warmup", "0", "--repeat", "2", "--sessions", "2", "--no-transcript"]
        assert main(["bench", "calibrate", *load]) == 3  # no terminal, no --yes: nothing sent
        assert server.requests == 0
        keep = tmp_path / "sessions"
        assert main(["bench", "calibrate", *load, "--yes", "--keep", str(keep), "--json", str(tmp_path / "cal.json")]) == 0
        assert server.requests == 2 * 2 * 2 * 2  # sessions x repeats x levels x requests
    kept = sorted(p.name for p in keep.iterdir())
    assert kept == ["session-01.json", "session-02.json"]
    calibration = load_calibration(tmp_path / "cal.json")
    assert calibration.sessions == 2 and calibration.sources == ["session 1", "session 2"]
    assert calibration.workload["model"] == "m" and calibration.repeats == [2, 2]
    session = BenchResult.model_validate_json((keep / "session-01.json").read_text())
    out = capsys.readouterr().out
    assert "stored as" in out
    # found by itself wherever this machine's container is known (outside one, or one whose id shows); inside a
    # container whose id cannot be read (as some CI sandboxes are), not found, and calibrate said so
    known = same_container(session.container, session.container) is True
    assert (find(session) is not None) == known
    assert known or "cannot read" in " ".join(out.split())
