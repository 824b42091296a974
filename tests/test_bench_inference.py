"""The streaming load generator against the loopback fake server, whose token timing is known."""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.bench._http import StreamingClient
from rigaudit.tools.bench.fake_server import FakeTiming, fake_server
from rigaudit.tools.bench.loadgen import LoadSession, LoadSpec, endpoint, make_prompt, one_request, request_body, run_load
from rigaudit.tools.bench.results import BENCH_SCHEMA, Run, load_result


def _run(spec: LoadSpec):  # type: ignore[no-untyped-def]
    return anyio.run(run_load, spec)


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_measures_the_servers_known_timing(api: str) -> None:
    """Against the loopback server, only what no load can break: a busy machine delays tokens, never hastens them."""
    timing = FakeTiming(ttft_s=0.02, itl_s=0.005)
    with fake_server(timing) as server:
        result = _run(LoadSpec(server.base_url, "m", api=api, concurrency=(1, 4), requests=8, max_tokens=12, warmup=1))  # type: ignore[arg-type]
        assert server.requests == 1 + 8 + 8
    assert [r.concurrency for r in result.runs] == [1, 4]
    for run in result.runs:
        assert run.requests_ok == 8 and run.requests_failed == 0
        assert all(s.output_tokens == 12 and len(s.itl_ms) == 11 for s in run.samples)  # usage chunk agrees with events
        for s in run.samples:
            assert s.ttft_ms is not None and s.latency_ms is not None
            assert s.ttft_ms >= 20.0  # the server waits ttft after the request arrived
            assert s.ttft_ms + sum(s.itl_ms) >= 75.0 - 1e-6  # the last token leaves at ttft + 11 itl at the earliest
            assert s.latency_ms >= s.ttft_ms + sum(s.itl_ms) - 1e-6
        assert run.ttft_ms_p50 is not None and run.ttft_ms_p50 >= 20.0
    single, four = result.runs
    # a stream of 12 tokens takes 75 ms at least: at most 160 tokens/s per stream, 640 with four at once
    assert single.duration_s >= 8 * 0.075 and single.output_tokens_per_s <= 12 / 0.075
    assert four.duration_s >= 2 * 0.075 and four.output_tokens_per_s <= 4 * 12 / 0.075


class _Clock:
    """A clock that moves only when a scripted response says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class _ScriptedClient:
    """Stands for :class:`StreamingClient`: every response is the same script of (seconds later, bytes) pieces.

    With ``fail_every``, every Nth request (counted from 1) answers HTTP 500 instead.
    """

    def __init__(self, clock: _Clock, script: list[tuple[float, bytes]], status: int = 200, fail_every: int = 0) -> None:
        self.clock, self.script, self.status, self.fail_every, self.posts = clock, script, status, fail_every, 0

    @contextlib.asynccontextmanager
    async def post(self, path: str, body: bytes) -> AsyncIterator[_Reply]:
        del path, body
        self.posts += 1
        failed = bool(self.fail_every) and self.posts % self.fail_every == 0
        yield _Reply(self.clock, self.script, 500 if failed else self.status)


class _Reply:
    def __init__(self, clock: _Clock, script: list[tuple[float, bytes]], status: int) -> None:
        self.clock, self.script, self.status = clock, script, status

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        for later, piece in self.script:
            self.clock.now += later
            await anyio.lowlevel.checkpoint()
            yield piece

    async def aread(self) -> bytes:
        self.clock.now += 0.003
        return b"overloaded"


def _event(text: str) -> bytes:
    return b"data: " + json.dumps({"choices": [{"delta": {"content": text}}]}).encode() + b"\n\n"


_USAGE = b'data: {"choices": [], "usage": {}}\n\ndata: [DONE]\n\n'  # tokens counted from the events
_SCRIPT = [
    (0.030, _event("a")),  # first token 30 ms after the request
    (0.010, _event("b")[:9]),  # half an event: it counts when its line is complete
    (0.004, _event("b")[9:] + _event("c")),  # two events in one piece arrive together: a gap of 0
    (0.020, _event("d") + _USAGE),
]


def test_a_request_is_timed_from_its_send_to_each_token_event() -> None:
    clock = _Clock()
    client = _ScriptedClient(clock, _SCRIPT)
    sample = anyio.run(one_request, client, "/v1/chat/completions", {}, 600.0, clock)  # type: ignore[arg-type]
    assert sample.ok and sample.output_tokens == 4
    assert sample.ttft_ms == pytest.approx(30.0)
    assert sample.itl_ms == pytest.approx([14.0, 0.0, 20.0])
    assert sample.latency_ms == pytest.approx(64.0)


def test_an_http_error_is_timed_to_its_body() -> None:
    clock = _Clock()
    sample = anyio.run(one_request, _ScriptedClient(clock, [], status=503), "/v1/chat/completions", {}, 600.0, clock)  # type: ignore[arg-type]
    assert not sample.ok and sample.error == "HTTP 503: overloaded" and sample.latency_ms == pytest.approx(3.0)


@pytest.mark.parametrize("concurrency", [1, 3])
def test_a_run_s_rate_is_its_tokens_over_its_wall_time(concurrency: int) -> None:
    clock = _Clock()
    client = _ScriptedClient(clock, _SCRIPT)
    spec = LoadSpec("http://127.0.0.1:1", "m", concurrency=(concurrency,), requests=6, max_tokens=4)

    async def go() -> list[Run]:
        session = LoadSession(client, spec, clock=clock)  # type: ignore[arg-type]
        await session.warm_up(2)
        first = await session.run(concurrency, 0, "first")
        clock.now += 5.0  # a pause between runs
        return [first, await session.run(concurrency, 1, "second")]

    first, second = anyio.run(go)
    assert client.posts == 2 + 6 + 6
    # the clock moves 64 ms per request, whichever stream it serves, so a run takes 6 x 64 ms at any concurrency
    assert first.duration_s == pytest.approx(6 * 0.064)
    assert first.output_tokens_per_s == pytest.approx(6 * 4 / (6 * 0.064))
    assert first.ttft_ms_p50 is not None and first.ttft_ms_p50 >= 30.0 - 1e-9
    assert (first.order, second.order) == (0, 1)
    assert first.started_s == 0.0 and second.started_s == pytest.approx(6 * 0.064 + 5.0)


def test_failed_requests_are_counted_not_raised() -> None:
    # requests 3, 6, 9, 12 answer HTTP 500; 4 and 8 have their stream cut half-way
    with fake_server(FakeTiming(ttft_s=0.0, itl_s=0.0, fail_every=3, drop_every=4)) as server:
        result = _run(LoadSpec(server.base_url, "m", concurrency=(1,), requests=12, max_tokens=8, warmup=0))
    run = result.runs[0]
    assert (run.requests_ok, run.requests_failed) == (6, 6)
    errors = [s.error or "" for s in run.samples if not s.ok]
    assert sum(e.startswith("HTTP 500") for e in errors) == 4
    assert sum("closed" in e for e in errors) == 2
    assert all(s.output_tokens == 8 for s in run.samples if s.ok)


def test_tokens_are_counted_from_events_without_a_usage_chunk() -> None:
    async def go(url: str) -> None:
        body = request_body(LoadSpec(url, "m", max_tokens=7), make_prompt(16, 0))
        del body["stream_options"]
        async with StreamingClient(endpoint(url, "chat")) as client:
            sample = await one_request(client, "/v1/chat/completions", body)
        assert sample.ok and sample.output_tokens == 7

    with fake_server(FakeTiming(ttft_s=0.0, itl_s=0.0)) as server:
        anyio.run(go, server.base_url)


def test_unreachable_server_fails_each_request_with_a_reason() -> None:
    with fake_server() as server:
        url = server.base_url
    result = _run(LoadSpec(url, "m", concurrency=(2,), requests=2, warmup=0))
    assert result.runs[0].requests_failed == 2
    assert all("cannot connect" in (s.error or "") for s in result.runs[0].samples)


def test_endpoint_accepts_base_with_or_without_v1() -> None:
    assert endpoint("http://h:1", "chat") == "http://h:1/v1/chat/completions"
    assert endpoint("http://h:1/v1/", "completions") == "http://h:1/v1/completions"
    assert make_prompt(50, 1) != make_prompt(50, 2) and len(make_prompt(50, 1).split()) == 50


def test_cli_writes_bench_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "base.json"
    report = tmp_path / "system-improve.md"
    with fake_server(FakeTiming(ttft_s=0.0, itl_s=0.001)) as server:
        code = main(
            [
                "bench",
                "inference",
                "--base-url",
                server.base_url,
                "--model",
                "m",
                "--concurrency",
                "1,2",
                "--requests",
                "4",
                "--max-tokens",
                "5",
                "--repeat",
                "2",
                "--yes",
                "--json",
                str(out),
                "--report",
                str(report),
            ]
        )
    assert code == 0
    data = json.loads(out.read_text())
    assert data["schema"] == BENCH_SCHEMA and data["kind"] == "inference" and data["model"] == "m"
    # balanced order: the second repeat runs the levels the other way round (a Williams Latin square)
    assert [(r["concurrency"], r["repeat"]) for r in data["runs"]] == [(1, 0), (2, 0), (2, 1), (1, 1)]
    assert [r["order"] for r in data["runs"]] == [0, 1, 2, 3] and data["order"] == "balanced"
    assert data["tool"].startswith("rigaudit ") and data["warmup"] == 2 and data["ignore_eos"] is True
    assert {"ttft_ms", "itl_ms", "output_tokens", "ok", "error"} <= set(data["runs"][0]["samples"][0])
    assert load_result(out).runs[0].requests_ok == 4
    assert "## Validation" in report.read_text() and "| concurrency |" in report.read_text()
    assert "| 1 | TPOT ms |" in report.read_text()
    out_text = capsys.readouterr().out
    assert "Inference benchmark" in out_text and "Serving metrics" in out_text
    assert "Per level: the median of the repeats" in out_text and "Per level: the median" in report.read_text()
    assert "warm-up: the first 2 request(s) were untimed and are excluded from every figure" in out_text


def test_cli_refuses_without_approval(capsys: pytest.CaptureFixture[str]) -> None:
    with fake_server() as server:
        code = main(["bench", "inference", "--base-url", server.base_url, "--model", "m"])
        assert server.requests == 0
    assert code == 3
    assert "approv" in capsys.readouterr().err


def test_cli_needs_url_and_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "inference", "--yes"]) == 2
    assert "--base-url" in capsys.readouterr().err


def test_serving_metrics_match_the_known_timing() -> None:
    # 10 tokens: first after 20 ms, then one every 5 ms, so E2E = 20 + 9 x 5 = 65 ms and TPOT = 45 / 9 = 5 ms
    clock = _Clock()
    pieces = [(0.020, _event("t0")), *((0.005, _event(f"t{i}")) for i in range(1, 9)), (0.005, _event("t9") + _USAGE)]
    client = _ScriptedClient(clock, pieces)
    spec = LoadSpec("http://127.0.0.1:1", "m", concurrency=(1,), requests=6, max_tokens=10, warmup=0, slo={"ttft_ms": 500.0})

    async def go() -> Run:
        return await LoadSession(client, spec, clock=clock).run(1, 0, "c=1")  # type: ignore[arg-type]

    result = spec.result([anyio.run(go)], "2026-12-01T00:00:00+00:00")
    (run,) = result.runs
    serving = run.serving
    assert serving is not None
    for dist, known in ((serving.ttft_ms, 20.0), (serving.tpot_ms, 5.0), (serving.itl_ms, 5.0), (serving.e2e_ms, 65.0)):
        assert dist.median == pytest.approx(known)
        assert dist.mean is not None and dist.p90 is not None and dist.p95 is not None and dist.p99 is not None
        assert dist.median <= dist.p90 <= dist.p95 <= dist.p99 and dist.std is not None and dist.std < known
    assert serving.itl_ms.n == 6 * 9 and serving.tpot_ms.n == serving.ttft_ms.n == serving.e2e_ms.n == 6
    assert run.duration_s == pytest.approx(6 * 0.065) and serving.request_throughput == pytest.approx(6 / run.duration_s)
    assert serving.goodput == pytest.approx(serving.request_throughput) and serving.good_fraction == 1.0
    assert result.slo == {"ttft_ms": 500.0}


@pytest.mark.parametrize(
    ("slo", "good"),
    [
        ({"e2e_ms": 16.5}, 0.5),  # the answered half streams in 16 ms
        ({"e2e_ms": 15.5}, 0.0),
        ({"tpot_ms": 4.5, "e2e_ms": 16.5}, 0.5),  # one token every 4 ms
        ({"tpot_ms": 3.5, "e2e_ms": 16.5}, 0.0),  # within one objective is not enough
        ({"ttft_ms": 1.0}, 0.5),
    ],
)
def test_goodput_counts_only_requests_within_every_objective(slo: dict[str, float], good: float) -> None:
    # every 2nd request fails (HTTP 500, answered in 3 ms); the rest stream 5 tokens: now, then one every 4 ms
    clock = _Clock()
    pieces = [(0.0, _event("t0")), *((0.004, _event(f"t{i}")) for i in range(1, 4)), (0.004, _event("t4") + _USAGE)]
    client = _ScriptedClient(clock, pieces, fail_every=2)
    spec = LoadSpec("http://127.0.0.1:1", "m", concurrency=(1,), requests=8, max_tokens=5, warmup=0, slo=slo)

    async def go() -> Run:
        return await LoadSession(client, spec, clock=clock).run(1, 0, "c=1")  # type: ignore[arg-type]

    run = anyio.run(go)
    assert run.serving is not None and (run.requests_ok, run.requests_failed) == (4, 4)
    assert run.duration_s == pytest.approx(4 * 0.016 + 4 * 0.003)
    assert run.serving.good_fraction == good and run.serving.goodput == pytest.approx(good * 8 / run.duration_s)


def test_runs_record_when_they_ran() -> None:
    with fake_server(FakeTiming(ttft_s=0.0, itl_s=0.001)) as server:
        result = _run(LoadSpec(server.base_url, "m", concurrency=(1, 2, 4), requests=2, max_tokens=3, repeat=2, warmup=1))
    assert [r.order for r in result.runs] == list(range(6))
    starts = [r.started_s for r in result.runs]
    assert starts[0] == 0.0 and all(a is not None and b is not None and a < b for a, b in itertools.pairwise(starts))
    # each level once per repeat, in a different order each repeat
    first, second = [r.concurrency for r in result.runs[:3]], [r.concurrency for r in result.runs[3:]]
    assert sorted(first) == sorted(second) == [1, 2, 4] and first != second


@pytest.mark.parametrize(
    ("extra", "text"),
    [
        (["--repeat", "0"], "--repeat wants a whole number from 1 to 100"),
        (["--repeat", "1000"], "--repeat wants a whole number from 1 to 100"),
        (["--concurrency", "0"], "--concurrency wants positive numbers"),
        (["--concurrency", "1,1"], "--concurrency wants up to 32 different levels"),
        (["--max-tokens", "0"], "--max-tokens wants a whole number"),
        (["--timeout", "0"], "--timeout: 0 s: a time limit must be more than 0 seconds"),
        (["--timeout", "nan"], "--timeout: nan s: a time limit must be more than 0 seconds"),
        (["--timeout", "100000"], "--timeout wants seconds"),
        (["--slo", "ttft=5"], "--slo wants KEY=MILLISECONDS"),
        (["--slo", "ttft_ms=-1"], "--slo ttft_ms: wants a positive number"),
        (["--slo", "tpot_ms=abc"], "is not a number of milliseconds"),
    ],
)
def test_cli_bounds_every_load_parameter(extra: list[str], text: str, capsys: pytest.CaptureFixture[str]) -> None:
    with fake_server() as server:
        try:
            code = main(["bench", "inference", "--base-url", server.base_url, "--model", "m", "--yes", "--no-transcript", *extra])
        except SystemExit as exc:  # refused as it was parsed (tests/test_number_options.py)
            code = int(exc.code or 0)
        assert server.requests == 0
    assert code == 2
    assert text in capsys.readouterr().err


def test_level_summary_gives_each_level_the_median_of_its_repeats_and_their_range() -> None:
    from rigaudit.tools.bench.render import level_summary

    spec = LoadSpec(base_url="http://127.0.0.1:9", model="m", concurrency=(1, 4))
    runs = [
        Run(concurrency=1, repeat=0, output_tokens_per_s=100.0, itl_ms_p50=10.0, requests_ok=8),
        Run(concurrency=4, repeat=0, output_tokens_per_s=300.0, requests_ok=8, requests_failed=1),
        Run(concurrency=1, repeat=1, output_tokens_per_s=120.0, itl_ms_p50=12.0, requests_ok=8),
        Run(concurrency=1, repeat=2, output_tokens_per_s=110.0, itl_ms_p50=11.0, requests_ok=8),
    ]
    headers, rows = level_summary(spec.result(runs, "2026-01-01T00:00:00+00:00"))
    assert headers[:3] == ["concurrency", "repeats", "output tok/s"]
    # c=1: median 110, range (120 - 100) / 110 = 18%; c=4: one repeat, no range; its failure counted
    assert rows == [["1", "3", "110.0 (range 18%)", "—", "11.00 (range 18%)", "0"], ["4", "1", "300.0", "—", "—", "1"]]


def test_time_left_counts_each_remaining_run_at_its_levels_pace() -> None:
    from rigaudit.tools.bench.loadgen import estimate_left, time_left

    done = [
        Run(concurrency=1, output_tokens_per_s=1.0, duration_s=10.0),
        Run(concurrency=4, output_tokens_per_s=1.0, duration_s=50.0),
    ]
    assert estimate_left([], [1, 4]) is None and time_left(None) == ""
    assert estimate_left(done, [1, 4, 16]) == 10.0 + 50.0 + 30.0  # an unseen level at the mean of every run so far
    assert time_left(90.0) == " (about 1m30s left)" and time_left(42.4) == " (about 42 s left)"


def test_the_progress_says_the_time_left_from_the_second_run_on() -> None:
    labels: list[str] = []

    def progress(label: str, done: int, total: int) -> None:
        if not labels or labels[-1] != label:
            labels.append(label)

    with fake_server(FakeTiming(ttft_s=0.6, itl_s=0.0)) as server:  # each run over a second: an estimate is said
        spec = LoadSpec(base_url=server.base_url, model="m", concurrency=(1, 2), requests=2, max_tokens=1, repeat=2, warmup=0)
        anyio.run(run_load, spec, progress)
    assert [label.split(" (")[0] for label in labels] == ["c=1 repeat 1/2", "c=2 repeat 1/2", "c=2 repeat 2/2", "c=1 repeat 2/2"]
    assert "left)" not in labels[0] and all(" (about " in label and label.endswith(" left)") for label in labels[1:]), labels
