"""Results say what ran (the GPUs at the start, a digest of the samples), and compare refuses what does not hold together."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.bench.loadgen import LoadSpec
from rigaudit.tools.bench.provenance import parse_gpus
from rigaudit.tools.bench.results import Run, Sample, summarize

SPEC = LoadSpec(base_url="http://127.0.0.1:9", model="m", concurrency=(1,), requests=4, max_tokens=4)
SMI = "NVIDIA H200, GPU-f735dee3-2e44-cc45-121f-b028665f4635, 580.159.04, 345, 3201, 700.00\n"


def _runs(pace: float) -> list[Run]:
    runs = []
    for repeat in range(3):
        samples = [Sample(ttft_ms=5.0 * pace, itl_ms=[pace, pace * 1.1, pace], output_tokens=4, latency_ms=9.0)] * 4
        runs.append(summarize(samples, concurrency=1, repeat=repeat, duration_s=0.05 * pace + 0.001 * repeat))
    return runs


def _write(path: Path, pace: float, smi: str = SMI) -> dict[str, object]:
    data = json.loads(SPEC.result(_runs(pace), "2026-01-01T00:00:00+00:00", parse_gpus(smi)).to_json())
    path.write_text(json.dumps(data))
    return data


def _compare(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["bench", "compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--no-calibration", *extra])
    return code, capsys.readouterr().err.strip()


def test_gpus_are_read_by_name_and_uuid_digest_never_the_uuid() -> None:
    (gpu,) = parse_gpus(SMI + "garbage line\n")
    assert gpu.name == "NVIDIA H200" and len(gpu.uuid_digest) == 16 and "f735dee3" not in gpu.uuid_digest
    assert (gpu.driver, gpu.sm_clock_mhz, gpu.mem_clock_mhz, gpu.power_limit_w) == ("580.159.04", 345.0, 3201.0, 700.0)


def test_a_result_that_holds_together_is_compared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _write(tmp_path / "a.json", 1.0)
    _write(tmp_path / "b.json", 1.02)
    assert str(data["samples_digest"]).startswith("sha256:") and data["gpus"]
    code, err = _compare(tmp_path, capsys)
    assert code == 0, err


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda d: d["runs"][0]["samples"][0].update(output_tokens=40), "do not match the digest"),
        (lambda d: d["runs"][1].update(output_tokens_per_s=d["runs"][1]["output_tokens_per_s"] * 2), "repeat 2 does not follow"),
        (lambda d: d.pop("host"), "names no host"),
    ],
)
def test_compare_refuses_a_file_that_does_not_hold_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: object, said: str
) -> None:
    _write(tmp_path / "a.json", 1.0)
    data = _write(tmp_path / "b.json", 1.02)
    edit(data)  # type: ignore[operator]
    (tmp_path / "b.json").write_text(json.dumps(data))
    code, err = _compare(tmp_path, capsys)
    assert code == 2 and said in err and "b.json" in err and "\n" not in err


def test_compare_refuses_results_of_different_gpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path / "a.json", 1.0)
    _write(tmp_path / "b.json", 1.0, SMI.replace("f735dee3", "00000000"))
    code, err = _compare(tmp_path, capsys)
    assert code == 2 and "GPUs 1 x NVIDIA H200" in err


def test_inference_sessions_run_each_in_a_fresh_process_and_write_one_file_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rigaudit.tools.bench.fake_server import FakeTiming, fake_server
    from rigaudit.tools.bench.results import load_result

    with fake_server(FakeTiming(ttft_s=0.0, itl_s=0.001)) as server:
        argv = ["bench", "inference", "--base-url", server.base_url, "--model", "m", "--concurrency", "1", "--requests", "2"]
        argv += ["--max-tokens", "3", "--sessions", "2", "--gap-s", "0", "--yes", "--json", str(tmp_path / "b.json")]
        assert main([*argv, "--no-transcript"]) == 0
    out = capsys.readouterr().out
    assert "with 2 sessions a side" in out and "compare them with: rigaudit bench compare" in out
    first, second = load_result(tmp_path / "b-s01.json"), load_result(tmp_path / "b-s02.json")
    assert first.samples_digest != second.samples_digest and first.runs[0].requests_ok == 2


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--sessions", "2"], "give --json FILE"),
        (["--sessions", "0", "--json", "x.json"], "--sessions wants 2 to 100"),
        (["--sessions", "2", "--command", "true", "--json", "x.json"], "does not go with --command"),
        (["--sessions", "2", "--profile", "--json", "x.json"], "does not go with --sessions"),
    ],
)
def test_inference_sessions_refusals_are_one_line(
    extra: list[str], said: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["bench", "inference", "--base-url", "http://127.0.0.1:9", "--model", "m", "--yes", "--no-transcript", *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert said in err and "\n" not in err
    assert not list(tmp_path.glob("*.json"))


def test_compare_says_what_its_sessions_can_detect(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path / "a.json", 1.0)
    _write(tmp_path / "b.json", 1.02)
    code = main(["bench", "compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--no-calibration"])
    assert code == 0 and "spread between sessions 8.0% (assumed: not calibrated)" in capsys.readouterr().out
    widths = []
    for cv in ("0.04", "0.16"):
        code = main(["bench", "compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--session-cv", cv])
        out = capsys.readouterr().out
        assert code == 0 and "power: 1 vs 1 session(s)" in out
        widths.append(float(out.split("output tok/s of about ")[1].split("%")[0]))
    assert widths[0] < widths[1]  # a wider spread between sessions resolves only larger changes


def test_the_server_version_is_read_where_the_api_gives_it() -> None:
    import http.server
    import threading

    from rigaudit.tools.bench.provenance import server_version

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'{"version": "0.11.0"}' if self.path == "/get_server_info" else b"no"
            self.send_response(200 if self.path == "/get_server_info" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        assert server_version(url) == "0.11.0 (/get_server_info)"
    finally:
        server.shutdown()
        server.server_close()
    assert server_version("http://127.0.0.1:9", timeout_s=0.5) is None  # nothing listens
