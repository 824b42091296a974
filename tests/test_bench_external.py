"""Parsing the summaries of sglang's bench_serving and vLLM's bench serve, and running a command."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.bench.errors import BenchFailed, BenchInputError
from rigaudit.tools.bench.external import parse_summaries, run_command

SGLANG = """\
Namespace(backend='sglang', base_url=None, host='0.0.0.0', port=30000, dataset_name='random', num_prompts=200, max_concurrency=16)
#Input tokens: 102400
#Output tokens: 25600
100%|██████████████████████████████████████████| 200/200 [00:41<00:00,  4.83it/s]

============ Serving Benchmark Result ============
Backend:                                 sglang
Traffic request rate:                    inf
Max request concurrency:                 16
Successful requests:                     200
Benchmark duration (s):                  41.41
Total input tokens:                      102400
Total generated tokens:                  25600
Total generated tokens (retokenized):    25587
Request throughput (req/s):              4.83
Input token throughput (tok/s):          2472.83
Output token throughput (tok/s):         618.21
Total token throughput (tok/s):          3091.04
Concurrency:                             15.87
----------------End-to-End Latency----------------
Mean E2E Latency (ms):                   3285.12
Median E2E Latency (ms):                 3270.55
---------------Time to First Token----------------
Mean TTFT (ms):                          412.36
Median TTFT (ms):                        388.02
P99 TTFT (ms):                           1204.77
---------------Inter-Token Latency----------------
Mean ITL (ms):                           22.62
Median ITL (ms):                         21.94
P95 ITL (ms):                            27.31
P99 ITL (ms):                            48.66
Max ITL (ms):                            412.90
==================================================
"""

VLLM = """\
INFO 06-12 10:01:02 [__init__.py:244] Automatically detected platform cuda.
Starting initial single prompt test run...
Initial test run completed. Starting main benchmark run...
Maximum request concurrency: 4
100%|██████████| 100/100 [00:22<00:00,  4.44it/s]
============ Serving Benchmark Result ============
Successful requests:                     100
Failed requests:                         2
Maximum request concurrency:             4
Benchmark duration (s):                  22.51
Total input tokens:                      21519
Total generated tokens:                  19706
Request throughput (req/s):              4.44
Output token throughput (tok/s):         875.33
Peak output token throughput (tok/s):    1012.00
Peak concurrent requests:                4.00
Total Token throughput (tok/s):          1831.23
---------------Time to First Token----------------
Mean TTFT (ms):                          82.80
Median TTFT (ms):                        64.40
P99 TTFT (ms):                           264.01
-----Time per Output Token (excl. 1st token)------
Mean TPOT (ms):                          4.51
Median TPOT (ms):                        4.36
P99 TPOT (ms):                           6.29
---------------Inter-token Latency----------------
Mean ITL (ms):                           4.48
Median ITL (ms):                         4.19
P99 ITL (ms):                            9.14
==================================================
"""


def test_sglang_summary() -> None:
    (run,) = parse_summaries(SGLANG)
    assert run.concurrency == 16 and run.requests_ok == 200 and run.requests_failed == 0
    assert run.output_tokens_per_s == 618.21 and run.duration_s == 41.41
    assert (run.ttft_ms_p50, run.ttft_ms_p99, run.itl_ms_p50, run.itl_ms_p99) == (388.02, 1204.77, 21.94, 48.66)


def test_vllm_summary_and_several_blocks() -> None:
    eight = VLLM.replace("Maximum request concurrency:             4", "Maximum request concurrency:             8")
    runs = parse_summaries(VLLM + eight)
    assert [(r.concurrency, r.repeat) for r in runs] == [(4, 0), (8, 0)]
    first = runs[0]
    assert first.output_tokens_per_s == 875.33  # not the "Peak output token throughput" line
    assert (first.requests_ok, first.requests_failed) == (100, 2)
    assert (first.ttft_ms_p50, first.ttft_ms_p99, first.itl_ms_p50, first.itl_ms_p99) == (64.4, 264.01, 4.19, 9.14)
    assert [r.repeat for r in parse_summaries(VLLM * 2)] == [0, 1]


def test_no_summary_no_runs() -> None:
    assert parse_summaries("Traceback (most recent call last):\n  boom") == []


def _script(tmp_path: Path, text: str, code: int = 0) -> str:
    out = tmp_path / "out.txt"
    out.write_text(text)
    script = tmp_path / "bench.py"
    script.write_text(f"import sys\nsys.stdout.write(open({str(out)!r}).read())\nsys.exit({code})\n")
    return f"{sys.executable} {script}"


def test_run_command_parses_its_output(tmp_path: Path) -> None:
    seen: list[str] = []
    result = run_command(_script(tmp_path, SGLANG), base_url="http://x", model="m", on_line=seen.append)
    assert result.runs[0].output_tokens_per_s == 618.21 and result.command and result.model == "m"
    assert "Backend:                                 sglang" in seen


def test_run_command_failures_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(BenchFailed, match="exited 3"):
        run_command(_script(tmp_path, SGLANG, code=3))
    with pytest.raises(BenchFailed, match="no 'Serving Benchmark Result'"):
        run_command(_script(tmp_path, "nothing useful\n"))
    with pytest.raises(BenchFailed, match="cannot run"):
        run_command("/nonexistent/bench --x")
    with pytest.raises(BenchInputError):
        run_command("'unbalanced")


def test_cli_command_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    assert main(["bench", "inference", "--command", _script(tmp_path, VLLM), "--yes", "--json", str(out)]) == 0
    assert '"output_tokens_per_s": 875.33' in out.read_text()
    assert main(["bench", "inference", "--command", _script(tmp_path, "x"), "--yes"]) == 1
    assert "no 'Serving Benchmark Result'" in capsys.readouterr().err
