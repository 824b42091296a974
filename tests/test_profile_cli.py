"""`bench inference --profile` and `explain`, end to end: a scripted GPU's known time through a fake NVML.

The scripted client (tests/support/profile_load.py) streams a token every ``itl`` and keeps its fake GPU
busy for ``busy`` of each gap (the rest is idle, as a GPU waits for a slow host), on one scripted clock
that the load's figures, the GPU's kernels and the sampler's ticks all read; the model is described so
that streaming its bytes at the given bandwidth takes a known time. The split must find those times,
add up, and move the right way when the launch overhead rises or the model becomes memory-bound (the
CPU analogue of benchmarks/explain_h200.py), the same on an idle machine and a busy one. The loopback
server and the real clock are for what speed does not decide.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from rigaudit.orchestrator.bench.explain import ProfileOptions, run_profile
from rigaudit.orchestrator.bench.run import Outputs
from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.report.document import LATER_SECTIONS, PLACEHOLDER
from rigaudit.tools.bench.fake_server import FakeTiming, OpenAIStreamServer
from rigaudit.tools.bench.loadgen import LoadSpec
from rigaudit.tools.bench.model_spec import model_spec
from rigaudit.tools.bench.profile_fake import busy_generator
from rigaudit.tools.bench.profile_result import load_profiled
from rigaudit.tools.bench.results import load_result
from rigaudit.tools.hosts.fake_nvml import FakeGpu, fake_pynvml
from rigaudit.tools.schema.events.sink import discard
from tests.support.bench_ab import ScriptedClock
from tests.support.profile_load import GpuClient, InLoopHost

BANDWIDTH = 100.0  # GB/s: 0.15 B parameters x 2 bytes stream in 3 ms
LOAD = ["--concurrency", "1", "--requests", "6", "--max-tokens", "24", "--prompt-tokens", "8", "--warmup", "1"]
NOWHERE = "http://127.0.0.1:9"  # nothing listens: a request that escaped the scripted client fails the test


def _server(gpu: FakeGpu, itl_s: float, busy_s: float) -> OpenAIStreamServer:
    return OpenAIStreamServer(busy_generator(FakeTiming(ttft_s=itl_s, itl_s=itl_s), gpu, busy_s))


def _scripted(itl_s: float, busy_s: float, **gpu: Any) -> tuple[GpuClient, list[FakeGpu]]:
    """A scripted client and the host's GPUs on its clock: an idle GPU 0 and the serving GPU 1 (its process: pid 1)."""
    clock = ScriptedClock()
    serving = FakeGpu(pids=[1], clock=clock, **gpu)
    return GpuClient(serving, itl_s, itl_s, busy_s, clock), [FakeGpu(clock=clock), serving]


def _level(data: dict[str, Any]) -> dict[str, Any]:
    level = data["profile"]["levels"][0]
    return {**level, "ms": {t["name"]: t["ms"] for t in level["terms"]}, "share": {t["name"]: t["share"] for t in level["terms"]}}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, str, GpuClient]]:
    """One profile of the scripted GPU (10 ms per token, 4 ms of it busy) through the CLI: (JSON, report, output)."""
    folder = tmp_path_factory.mktemp("profile")
    client, gpus = _scripted(0.010, 0.004, nvlink_gbs=20.0)
    with pytest.MonkeyPatch.context() as patch:
        seam = functools.partial(run_profile, open_host=lambda: InLoopHost(gpus), load=client.load())
        patch.setattr("rigaudit.orchestrator.bench.explain.run_profile", seam)
        out, report = folder / "profile.json", folder / "system-improve.md"
        later = "\n\n".join(f"## {title}\n\n{PLACEHOLDER}" for title in LATER_SECTIONS)  # as the audit writes it
        report.write_text(f"# System improvement plan: test\n\n{later}\n")
        argv = ["bench", "inference", "--base-url", NOWHERE, "--model", "m", *LOAD, "--profile"]
        argv += ["--profile-interval-ms", "20", "--params-b", "0.15", "--bytes-per-param", "2", "--bandwidth-gbs", str(BANDWIDTH)]
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            code = main([*argv, "--yes", "--json", str(out), "--report", str(report), "--no-transcript", "--no-live"])
        assert code == 0, text.getvalue()[-2000:]
    yield out, report, text.getvalue(), client


def test_profile_finds_the_known_split_and_adds_up(recorded: tuple[Path, Path, str, GpuClient]) -> None:
    out, report, text, client = recorded
    assert client.requests == 1 + 6  # the warm-up and the level's requests, all scripted
    data = json.loads(out.read_text())
    assert data["schema"] == "rigaudit.bench/1" and data["profile"]["schema"] == "rigaudit.profile/1"
    assert load_result(out).runs[0].requests_ok == 6  # bench compare reads the same file
    level = _level(data)
    assert level["ms_per_token"] == pytest.approx(10.0, rel=1e-6)
    assert level["ms"]["streaming"] == pytest.approx(3.0, rel=1e-6)  # 0.3 GB at 100 GB/s
    assert level["ms"]["communication"] == 0.0
    assert level["share"]["idle"] == pytest.approx(0.6, abs=0.005)  # 6 of every 10 ms the GPU sat idle
    assert level["share"]["remainder"] == pytest.approx(0.1, abs=0.005)  # 1 of the 4 busy ms did not stream
    assert abs(level["closure"] - 1) <= 0.005 and level["holder"] == "idle"
    assert data["profile"]["gpus"][0]["index"] == 1  # the GPU with the server's process, not GPU 0
    assert data["profile"]["late_rounds"] == 0  # the scripted clock never outruns the sampler
    assert level["readings"]["samples"] >= 10 and level["readings"]["nvlink_tx_gbs"] > 0
    section = report.read_text()
    where = section[section.index("## Where the time goes") : section.index("## Benchmark comparison")]
    assert PLACEHOLDER not in where and "| 1 (1.0 in flight) |" in where  # the audit's placeholder filled in its place
    assert "### Inference benchmark" in section[section.index("## Validation") : section.index("## Where the time goes")]
    assert "GPU idle between kernels holds the gap" in section and "CUDA graphs" in section
    assert "where the time of a token goes" in text
    _, profile = load_profiled(out)
    event = profile.summary_dict()  # what the event (and a transcript line) carries: no samples, their count
    assert "samples" not in event and event["sample_count"] == len(profile.samples) > 0


def _profile(itl_s: float, busy_s: float, params_b: float) -> dict[str, Any]:
    client, gpus = _scripted(itl_s, busy_s)
    spec = LoadSpec(NOWHERE, "m", concurrency=(1,), requests=5, max_tokens=20, prompt_tokens=8, warmup=1)
    options = ProfileOptions(interval_s=0.02, model=model_spec(params_b=params_b, bytes_per_param=2.0), bandwidth_gbs=BANDWIDTH)
    run = run_profile(
        spec,
        options,
        approve=lambda what, details: None,
        emit=discard,
        outputs=Outputs(),
        open_host=lambda: InLoopHost(gpus),
        load=client.load(),
    )
    _, result = anyio.run(lambda: run)
    level = result.levels[0]
    return {"share": {t.name: t.share for t in level.terms}, "closure": level.closure, "holder": level.holder}


def test_the_split_moves_the_right_way() -> None:
    """Launch overhead raised: idle share up. The model made memory-bound: streaming share up."""
    base = _profile(0.010, 0.004, 0.15)
    launch_bound = _profile(0.020, 0.004, 0.15)  # the same GPU work, twice the host time per token
    memory_bound = _profile(0.009, 0.0085, 0.40)  # 8 ms of streaming in a 9 ms token
    assert base["share"]["idle"] == pytest.approx(0.6, abs=0.005)
    assert launch_bound["share"]["idle"] == pytest.approx(0.8, abs=0.005)  # 16 of 20 ms
    assert memory_bound["share"]["streaming"] == pytest.approx(8 / 9, abs=0.005)
    assert memory_bound["holder"] == "streaming" and launch_bound["holder"] == "idle"
    for run in (base, launch_bound, memory_bound):
        assert abs(run["closure"] - 1) <= 0.005


def test_the_same_profile_twice_is_the_same_split() -> None:
    """Nothing in the split depends on how fast this machine is: two runs agree to the last digit."""
    assert _profile(0.010, 0.004, 0.15) == _profile(0.010, 0.004, 0.15)


def test_a_profile_over_loopback_samples_through_nvml_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real client, clock, sleep and NVML worker threads: what speed does not decide (samples, the GPU chosen)."""
    gpu = FakeGpu(pids=[1])
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml([FakeGpu(), gpu]))
    out = tmp_path / "p.json"
    with _server(gpu, 0.005, 0.002) as server:
        argv = ["bench", "inference", "--base-url", server.base_url, "--model", "m", *LOAD, "--profile", "--yes"]
        argv += ["--profile-interval-ms", "20", "--params-b", "0.1", "--bytes-per-param", "2", "--bandwidth-gbs", "100"]
        assert main([*argv, "--json", str(out), "--no-transcript"]) == 0
        assert server.requests == 1 + 6
    profile = json.loads(out.read_text())["profile"]
    assert profile["gpus"][0]["index"] == 1 and profile["samples"] and profile["nvml_error"] is None
    assert {t["name"] for t in profile["levels"][0]["terms"]} >= {"streaming", "idle", "remainder"}


def test_explain_splits_a_recorded_profile_again_with_corrected_inputs(
    recorded: tuple[Path, Path, str, GpuClient], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, *_ = recorded
    before = out.read_bytes()
    again, report = tmp_path / "again.json", tmp_path / "si.md"
    assert main(["explain", str(out), "--json", str(again), "--report", str(report), "--no-transcript", "--no-live"]) == 0
    same = _level(json.loads(again.read_text()))
    original = _level(json.loads(before))
    assert same["ms"] == original["ms"]  # as recorded: the same split
    faster = tmp_path / "faster.json"
    assert main(["explain", str(out), "--bandwidth-gbs", str(2 * BANDWIDTH), "--json", str(faster), "--no-transcript"]) == 0
    corrected = _level(json.loads(faster.read_text()))
    assert corrected["ms"]["streaming"] == pytest.approx(original["ms"]["streaming"] / 2)
    assert corrected["ms"]["idle"] == original["ms"]["idle"]  # the measurement is not redone
    assert out.read_bytes() == before and "## Where the time goes" in report.read_text()
    capsys.readouterr()


def test_explain_refuses_what_is_not_a_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str], recorded: Any) -> None:
    out, *_ = recorded
    good = json.loads(out.read_text())
    bad = tmp_path / "bad.json"
    cases = {
        "no such file": None,
        "not valid JSON": "{nope",
        "is not a rigaudit.bench/1 result": json.dumps({"schema": "rigaudit.nccl/1"}),
        "has no profile": json.dumps({k: v for k, v in good.items() if k != "profile"}),
        "profile.samples": json.dumps({**good, "profile": {**good["profile"], "samples": [{"gpu": 0, "t": 1, "util": 250}]}}),
        "profile.interval_s": json.dumps({**good, "profile": {**good["profile"], "interval_s": -1}}),
    }
    for expected, text in cases.items():
        path = tmp_path / "missing.json" if text is None else bad
        if text is not None:
            bad.write_text(text)
        assert main(["explain", str(path), "--no-transcript"]) == 2, expected
        err = capsys.readouterr().err
        assert expected in err and err.count("\n") == 1, err


def test_profile_without_nvml_still_measures_the_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml([], init_error="LIBRARY_NOT_FOUND"))
    out = tmp_path / "p.json"
    with _server(FakeGpu(), 0.002, 0.001) as server:
        argv = ["bench", "inference", "--base-url", server.base_url, "--model", "m", *LOAD, "--profile", "--yes"]
        assert main([*argv, "--params-b", "0.1", "--bytes-per-param", "2", "--json", str(out), "--no-transcript"]) == 0
    profile = json.loads(out.read_text())["profile"]
    assert profile["nvml_error"] == "NVML unavailable (LIBRARY_NOT_FOUND)" and profile["samples"] == []
    level = profile["levels"][0]
    assert {t["name"]: t["ms"] for t in level["terms"]}["idle"] is None
    assert any("idle between kernels not measured" in w for w in profile["warnings"])


def test_profile_usage_errors_stop_before_any_request(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    gpus = [FakeGpu(name="NVIDIA Mystery 9000", pids=[1]), FakeGpu(pids=[2])]
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(gpus))
    with _server(gpus[0], 0.001, 0.0) as server:
        base = ["bench", "inference", "--base-url", server.base_url, "--model", "m", *LOAD, "--yes", "--no-transcript"]
        cases = {
            "does not go with --command": ["--profile", "--command", "true"],
            "describe a profile: add --profile": ["--config", "c.json"],
            "--tp 3 does not divide": ["--profile", "--tp", "3"],
            "is not in rigaudit's table": ["--profile", "--params-b", "1", "--bytes-per-param", "2"],
            "--profile-interval-ms wants": ["--profile", "--profile-interval-ms", "5"],
            "--gpus wants": ["--profile", "--gpus", "a,b"],
            "--gpus: GPU 7 not present": ["--profile", "--gpus", "7"],
        }
        for expected, extra in cases.items():
            assert main([*base, *extra]) == 2, expected
            err = capsys.readouterr().err
            assert expected in err, err
        assert server.requests == 0
