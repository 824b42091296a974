"""The streaming load generator against the loopback fake server, whose token timing is known."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.bench._http import StreamingClient
from rigaudit.tools.bench.loadgen import LoadSpec, endpoint, make_prompt, one_request, request_body, run_load
from rigaudit.tools.bench.results import BENCH_SCHEMA, load_result
from rigaudit.tools.testing.fake_openai import FakeTiming, fake_server


def _run(spec: LoadSpec):  # type: ignore[no-untyped-def]
    return anyio.run(run_load, spec)


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_measures_the_servers_known_timing(api: str) -> None:
    timing = FakeTiming(ttft_s=0.02, itl_s=0.005)
    with fake_server(timing) as server:
        result = _run(LoadSpec(server.base_url, "m", api=api, concurrency=(1, 4), requests=8, max_tokens=12, warmup=1))  # type: ignore[arg-type]
        assert server.requests == 1 + 8 + 8
    assert [r.concurrency for r in result.runs] == [1, 4]
    for run in result.runs:
        assert run.requests_ok == 8 and run.requests_failed == 0
        assert all(s.output_tokens == 12 and len(s.itl_ms) == 11 for s in run.samples)  # usage chunk agrees with events
        assert run.itl_ms_p50 == pytest.approx(5.0, rel=0.05)
        assert run.ttft_ms_p50 is not None and 20.0 <= run.ttft_ms_p50 < 26.0
    single = result.runs[0]
    # one stream: 12 tokens per (ttft + 11 itl) = 0.075 s
    assert single.output_tokens_per_s == pytest.approx(12 / 0.075, rel=0.1)
    # four streams at once, two full waves: about four times the single-stream rate
    assert result.runs[1].output_tokens_per_s > 3.2 * single.output_tokens_per_s


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
    assert [(r["concurrency"], r["repeat"]) for r in data["runs"]] == [(1, 0), (2, 0), (1, 1), (2, 1)]
    assert {"ttft_ms", "itl_ms", "output_tokens", "ok", "error"} <= set(data["runs"][0]["samples"][0])
    assert load_result(out).runs[0].requests_ok == 4
    assert "## Validation" in report.read_text() and "| concurrency |" in report.read_text()
    assert "Inference benchmark" in capsys.readouterr().out


def test_cli_refuses_without_approval(capsys: pytest.CaptureFixture[str]) -> None:
    with fake_server() as server:
        code = main(["bench", "inference", "--base-url", server.base_url, "--model", "m"])
        assert server.requests == 0
    assert code == 3
    assert "approv" in capsys.readouterr().err


def test_cli_needs_url_and_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "inference", "--yes"]) == 2
    assert "--base-url" in capsys.readouterr().err
