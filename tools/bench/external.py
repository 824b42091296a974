"""Run an external serving benchmark (sglang bench_serving, vLLM bench serve) and parse its summaries.

Both print a block framed by ``==== Serving Benchmark Result ====`` lines with ``Label: value``
rows; each block becomes one run of a ``rigaudit.bench/1`` result (no per-request samples).
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Callable
from datetime import datetime, timezone

from rigaudit.tools.bench.errors import BenchFailed, BenchInputError
from rigaudit.tools.bench.results import BenchResult, Run

_ROW = re.compile(r"^\s*([A-Za-z][^:]*?)\s*:\s*(\S+)")
_FIELDS: dict[str, str] = {
    "output token throughput (tok/s)": "output_tokens_per_s",
    "median ttft (ms)": "ttft_ms_p50",
    "p99 ttft (ms)": "ttft_ms_p99",
    "median itl (ms)": "itl_ms_p50",
    "p99 itl (ms)": "itl_ms_p99",
    "successful requests": "requests_ok",
    "failed requests": "requests_failed",
    "benchmark duration (s)": "duration_s",
    "max request concurrency": "concurrency",
    "maximum request concurrency": "concurrency",
}


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def parse_summaries(text: str) -> list[Run]:
    """Every ``Serving Benchmark Result`` block in ``text`` → a Run (repeat numbers count blocks per concurrency)."""
    blocks: list[dict[str, float]] = []
    current: dict[str, float] | None = None
    for line in text.splitlines():
        if "Serving Benchmark Result" in line:
            current = {}
            blocks.append(current)
            continue
        if current is None:
            continue
        match = _ROW.match(line)
        if not match:
            continue
        key = _FIELDS.get(match.group(1).strip().lower())
        value = _number(match.group(2))
        if key and value is not None:
            current[key] = value
    runs: list[Run] = []
    seen: dict[int, int] = {}
    for block in blocks:
        if "output_tokens_per_s" not in block:
            continue
        concurrency = int(block.get("concurrency", 0))
        repeat = seen.get(concurrency, 0)
        seen[concurrency] = repeat + 1
        runs.append(
            Run(
                concurrency=concurrency,
                repeat=repeat,
                output_tokens_per_s=block["output_tokens_per_s"],
                ttft_ms_p50=block.get("ttft_ms_p50"),
                ttft_ms_p99=block.get("ttft_ms_p99"),
                itl_ms_p50=block.get("itl_ms_p50"),
                itl_ms_p99=block.get("itl_ms_p99"),
                requests_ok=int(block.get("requests_ok", 0)),
                requests_failed=int(block.get("requests_failed", 0)),
                duration_s=block.get("duration_s", 0.0),
            )
        )
    return runs


def run_command(
    command: str, *, base_url: str | None = None, model: str | None = None, on_line: Callable[[str], None] | None = None
) -> BenchResult:
    """Run ``command`` (split like a shell would, run without one), stream its output to ``on_line``, parse it."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise BenchInputError(f"--command: {exc}") from None
    if not argv:
        raise BenchInputError("--command is empty")
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    lines: list[str] = []
    try:
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line.rstrip("\n"))
                if on_line is not None:
                    on_line(lines[-1])
            code = proc.wait()
    except OSError as exc:
        raise BenchFailed(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    runs = parse_summaries("\n".join(lines))
    if code != 0:
        raise BenchFailed(f"{argv[0]} exited {code}: {lines[-1] if lines else 'no output'}")
    if not runs:
        raise BenchFailed(f"{argv[0]} printed no 'Serving Benchmark Result' summary to parse")
    return BenchResult(base_url=base_url, model=model, started_at=started, command=command, runs=runs)
