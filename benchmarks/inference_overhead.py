"""How exact is `rigaudit bench inference`? Its own overhead per request, and its timing against a known server.

Runs the fake OpenAI server (rigaudit.tools.bench.fake_server) in a separate process, so the client and the
server do not share a GIL, and prints:
  - overhead: rigaudit's median request latency minus a raw-socket client's, on a server that
    answers at once (target: under 1 ms);
  - accuracy: measured ITL and TTFT against the server's schedule (a token every 10 ms after 20 ms;
    target: ITL within 5%).

Usage: python benchmarks/inference_overhead.py [--json FILE]
Exit status 0 when both targets are met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402

from rigaudit.tools.bench.loadgen import LoadSpec, run_load  # noqa: E402


def start_server(ttft_ms: float, itl_ms: float) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from rigaudit.tools.bench.fake_server import _main; sys.exit(_main())",
            "--ttft-ms",
            str(ttft_ms),
            "--itl-ms",
            str(itl_ms),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    port = int(line.strip().rsplit(":", 1)[1].split("/")[0])
    return proc, port


def raw_latency_ms(port: int, n: int = 200) -> float:
    """The floor: a blocking socket client that sends a prepared request and reads to the last chunk."""
    body = json.dumps(
        {
            "model": "m",
            "stream": True,
            "max_tokens": 1,
            "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "hello " * 128}],
        }
    ).encode()
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    times = []
    for _ in range(n):
        start = time.perf_counter()
        sock.sendall(request)
        data = b""
        while not data.endswith(b"0\r\n\r\n"):
            data += sock.recv(65536)
        times.append((time.perf_counter() - start) * 1000.0)
    sock.close()
    return statistics.median(times[10:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    proc, port = start_server(0.0, 0.0)
    try:
        floor = raw_latency_ms(port)
        quick = anyio.run(
            run_load, LoadSpec(f"http://127.0.0.1:{port}", "m", concurrency=(1,), requests=200, max_tokens=1, warmup=10)
        )
        ours = statistics.median([s.latency_ms for s in quick.runs[0].samples if s.latency_ms is not None][10:])
    finally:
        proc.terminate()
        proc.wait()
    overhead = ours - floor

    proc, port = start_server(20.0, 10.0)
    try:
        paced = anyio.run(
            run_load, LoadSpec(f"http://127.0.0.1:{port}", "m", concurrency=(1, 8), requests=16, max_tokens=32, warmup=2)
        )
    finally:
        proc.terminate()
        proc.wait()
    rows = []
    for run in paced.runs:
        itls = [gap for s in run.samples for gap in s.itl_ms]
        itl_mean = statistics.fmean(itls)
        expected_tps = 32 / (0.020 + 31 * 0.010) * run.concurrency
        rows.append(
            {
                "concurrency": run.concurrency,
                "itl_ms_p50": run.itl_ms_p50,
                "itl_ms_mean": itl_mean,
                "itl_error": abs(itl_mean - 10.0) / 10.0,
                "ttft_ms_p50": run.ttft_ms_p50,
                "output_tokens_per_s": run.output_tokens_per_s,
                "expected_tokens_per_s": expected_tps,
                "failed": run.requests_failed,
            }
        )

    print(
        f"overhead: rigaudit {ours:.3f} ms vs raw socket {floor:.3f} ms per request → {overhead:.3f} ms "
        f"({'PASS' if overhead < 1.0 else 'FAIL'}: target < 1 ms)"
    )
    ok = overhead < 1.0
    for row in rows:
        good = row["itl_error"] < 0.05 and row["failed"] == 0
        ok = ok and good
        print(
            f"c={row['concurrency']}: ITL p50 {row['itl_ms_p50']:.3f} ms, mean {row['itl_ms_mean']:.3f} ms vs 10 ms "
            f"({row['itl_error']:.2%} off, {'PASS' if good else 'FAIL'}: target < 5%); TTFT p50 {row['ttft_ms_p50']:.2f} ms "
            f"vs 20 ms; {row['output_tokens_per_s']:.1f} tok/s vs {row['expected_tokens_per_s']:.1f} scheduled"
        )
    if args.json:
        args.json.write_text(
            json.dumps({"overhead_ms": overhead, "rigaudit_ms": ours, "raw_socket_ms": floor, "paced": rows}, indent=2) + "\n"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
