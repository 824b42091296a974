"""Issue 24 on real hardware: does `bench inference --profile` put the time of a token where it goes?

On a 1x H200 with benchmarks/tiny_openai_server.py on GPU 0 (a random Llama built from a config:
real GPU timing), three profiles at concurrency 1, each from a fresh server:
  base   the tiny model (4 layers, hidden 512): launch-bound, the GPU mostly idle between kernels;
  clb    the same with CUDA_LAUNCH_BLOCKING=1 in the server's environment: more launch overhead,
         so the idle share must go up;
  big    a memory-bound model (4 layers, hidden 16384: about 27 GB read per token, batch 1), so
         the streaming share must go up.
The memory bandwidth is measured once (`--measure-bandwidth`: a 1 GiB matrix-vector product on GPU
0) and given to the other two runs, so the three splits rest on the same figure. Each split must add
up to the measured time per token within 10% (the terms never over-explain it by more than 10%).
Every profile JSON, the servers' logs, the report (system-improve.md with its "Where the time goes"
section) and a summary (summary.json, summary.md) go to --out ($OUT).

  python3 benchmarks/explain_h200.py --out "$OUT"            # on the H200 (about 3-5 minutes)
  python3 benchmarks/explain_h200.py --out DIR --server fake --quick   # CPU check of the script itself

Only the standard library is imported here (and benchmarks/device_run.py, which shares the
wheelhouse and the server's start and stop with benchmarks/bench_stats_h200.py); rigaudit runs as
`python -m rigaudit`, its missing dependencies (pydantic, openai) unpacked from the wheelhouse
(--wheels, default .whl, made by benchmarks/make_wheelhouse.sh). The fake server has no GPU: its
profiles say NVML is missing and the checks read "unknown"; it proves the script, not the attribution.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from device_run import ROOT, ServerDown, dependencies, environment, free_port, machine, rigaudit, start_server, stop

MODELS = {
    "base": ["--hidden", "512", "--layers", "4", "--heads", "8"],
    "clb": ["--hidden", "512", "--layers", "4", "--heads", "8"],
    "big": ["--hidden", "16384", "--layers", "4", "--heads", "128"],
}
ENV = {"base": {}, "clb": {"CUDA_LAUNCH_BLOCKING": "1"}, "big": {}}
CLOSURE = 0.10


class Runner:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out: Path = args.out
        self.started = time.perf_counter()
        self.env = environment(dependencies(args.wheels), self.out / "state")
        self.log = (self.out / "log.txt").open("a", encoding="utf-8")
        self.timings: dict[str, float] = {}

    def say(self, text: str) -> None:
        line = f"[{time.perf_counter() - self.started:6.1f}s] {text}"
        print(line, flush=True)
        self.log.write(line + "\n")
        self.log.flush()

    def rigaudit(self, *argv: str) -> int:
        self.say("+ rigaudit " + " ".join(argv))
        proc = rigaudit(argv, env=self.env)
        self.log.write(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            self.say(f"exit {proc.returncode}: {proc.stderr.strip()[-600:]}")
        return proc.returncode

    def server_argv(self, name: str, port: int) -> list[str]:
        if self.args.server == "fake":
            itl = "2" if name != "big" else "6"
            return [
                sys.executable,
                "-m",
                "rigaudit.tools.bench.fake_server",
                "--port",
                str(port),
                "--ttft-ms",
                "2",
                "--itl-ms",
                itl,
            ]
        config = self.out / f"config-{name}.json"
        return [
            sys.executable, str(ROOT / "benchmarks" / "tiny_openai_server.py"), "--port", str(port), "--device", "cuda:0",
            *MODELS[name], "--config-out", str(config),
        ]  # fmt: skip

    def start_server(self, name: str) -> tuple[subprocess.Popen[bytes], str]:
        port = free_port()
        log = self.out / f"server-{name}.log"
        try:
            server = start_server(self.server_argv(name, port), log=log, port=port, env={**self.env, **ENV[name]})
        except ServerDown as exc:
            raise SystemExit(f"the {name} server did not come up: {exc}") from None
        self.timings[f"server {name} start s"] = server.started_s
        self.say(f"server {name} ready on port {port} ({ENV[name] or 'default environment'})")
        return server.proc, server.url

    def stop_server(self, proc: subprocess.Popen[bytes]) -> None:
        stop(proc, 30.0)

    def profile(self, name: str, bandwidth: float | None) -> dict[str, Any]:
        a = self.args
        server, url = self.start_server(name)
        path = self.out / f"profile-{name}.json"
        try:
            model = ["--model", "fake-model"] if a.server == "fake" else ["--model", "tiny-llama"]
            argv = [
                "bench", "inference", "--base-url", url, *model, "--concurrency", "1", "--requests", str(a.requests),
                "--max-tokens", str(a.max_tokens), "--prompt-tokens", str(a.prompt_tokens), "--warmup", str(a.warmup),
                "--repeat", str(a.repeat), "--profile", "--gpus", "0", "--yes", "--json", str(path),
                "--report", str(self.out / "system-improve.md"), "--no-transcript", "--no-live",
            ]  # fmt: skip
            config = self.out / f"config-{name}.json"
            fake_size = "2" if name == "big" else "0.05"  # billions of parameters the fake server pretends to stream
            argv += ["--config", str(config)] if config.exists() else ["--params-b", fake_size, "--bytes-per-param", "2"]
            argv += (
                ["--bandwidth-gbs", f"{bandwidth:.1f}"] if bandwidth else (["--measure-bandwidth"] if a.server != "fake" else [])
            )
            if a.server == "fake":
                argv += ["--bandwidth-gbs", "4000"]
            begin = time.perf_counter()
            code = self.rigaudit(*argv)
            self.timings[f"profile {name} s"] = round(time.perf_counter() - begin, 1)
        finally:
            self.stop_server(server)
        data = json.loads(path.read_text()) if path.exists() else {}
        return {"exit": code, "data": data}


def split(data: dict[str, Any]) -> dict[str, Any]:
    """The single-stream level's split, the shares by term, and what NVML said."""
    profile = data.get("profile") or {}
    levels = profile.get("levels") or []
    if not levels:
        return {"ms_per_token": None, "shares": {}, "ms": {}, "closure": None, "holder": None, "verdict": None}
    level = min(levels, key=lambda lv: lv["concurrency"])
    inputs = profile.get("inputs") or {}
    return {
        "ms_per_token": level["ms_per_token"],
        "tpot_ms_median": level.get("tpot_ms_median"),
        "ms": {t["name"]: t["ms"] for t in level["terms"]},
        "shares": {t["name"]: t["share"] for t in level["terms"]},
        "closure": level["closure"],
        "holder": level["holder"],
        "verdict": level["verdict"],
        "notes": level["notes"],
        "util_pct": level["readings"]["util_pct"],
        "mem_util_pct": level["readings"]["mem_util_pct"],
        "samples": level["readings"]["samples"],
        "window_s": level["readings"]["window_s"],
        "bandwidth_gbs": inputs.get("bandwidth_gbs"),
        "bandwidth_source": inputs.get("bandwidth_source"),
        "nvml_error": profile.get("nvml_error"),
    }


def _moved(before: dict[str, Any], after: dict[str, Any], term: str) -> str:
    a, b = before["shares"].get(term), after["shares"].get(term)
    if a is None or b is None:
        return "unknown"
    return "yes" if b > a else "no"


def _closes(s: dict[str, Any]) -> str:
    if s["closure"] is None or s["shares"].get("idle") is None:
        return "unknown"
    return "yes" if abs(s["closure"] - 1) <= CLOSURE else "no"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:,.3f}"


def markdown(summary: dict[str, Any]) -> str:
    lines = ["# Where the time goes, on real hardware (benchmarks/explain_h200.py)", ""]
    lines.append(f"Machine: {summary['machine']}. Workload: {summary['workload']}. Total {summary['elapsed_s']:.0f} s.")
    header = "| run | ms/token | streaming | communication | idle | remainder | sum / measured | holds the gap | util | mem |"
    lines += ["", header]
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for name in ("base", "clb", "big"):
        s = summary["runs"][name]
        cells = [
            f"{_ms(s['ms'].get(t))} ({_pct(s['shares'].get(t))})" for t in ("streaming", "communication", "idle", "remainder")
        ]
        util = "—" if s.get("util_pct") is None else f"{s['util_pct']:.1f}%"
        mem = "—" if s.get("mem_util_pct") is None else f"{s['mem_util_pct']:.1f}%"
        lines.append(
            f"| {name} | {_ms(s['ms_per_token'])} | {' | '.join(cells)} | {_pct(s['closure'])} | {s['holder']} | {util} | {mem} |"
        )
    checks = summary["checks"]
    lines += ["", "## Checks", ""]
    lines += [f"- {key}: **{value}**" for key, value in checks.items()]
    lines += ["", "## Verdicts", ""]
    lines += [f"- {name}: {summary['runs'][name]['verdict']}" for name in ("base", "clb", "big")]
    lines += [
        "",
        f"Bandwidth: {summary['runs']['base'].get('bandwidth_gbs')} GB/s ({summary['runs']['base'].get('bandwidth_source')})",
    ]
    lines += ["", "## Timings", ""] + [f"- {k}: {v}" for k, v in summary["timings"].items()]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "explain-out")))
    parser.add_argument("--server", choices=("tiny", "fake"), default="tiny")
    parser.add_argument("--wheels", default=str(ROOT / ".whl"))
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--prompt-tokens", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="tiny sizes for a CPU check of the script itself")
    args = parser.parse_args()
    if args.quick:
        args.requests, args.max_tokens, args.prompt_tokens, args.repeat, args.warmup = 2, 8, 8, 1, 1
    args.out.mkdir(parents=True, exist_ok=True)
    run = Runner(args)
    summary: dict[str, Any] = {"machine": machine(), "server": args.server}
    summary["workload"] = (
        f"concurrency 1, {args.requests} requests x {args.repeat} repeats, {args.prompt_tokens} prompt / {args.max_tokens} "
        f"output tokens, {args.warmup} warm-up; one fresh server per run"
    )
    results: dict[str, dict[str, Any]] = {}
    exits: dict[str, int] = {}
    bandwidth = None
    for name in ("base", "clb", "big"):
        done = run.profile(name, bandwidth)
        exits[name] = done["exit"]
        results[name] = split(done["data"])
        bandwidth = bandwidth or results[name].get("bandwidth_gbs")
        s = results[name]
        run.say(f"{name}: {_ms(s['ms_per_token'])} ms per token, shares {s['shares']}, sum / measured {_pct(s['closure'])}")
    summary["runs"] = results
    summary["exits"] = exits
    summary["checks"] = {
        "idle share up with CUDA_LAUNCH_BLOCKING=1 (clb > base)": _moved(results["base"], results["clb"], "idle"),
        "streaming share up when memory-bound (big > base)": _moved(results["base"], results["big"], "streaming"),
        **{f"{name}: the shares add up to the measured time within 10%": _closes(results[name]) for name in results},
    }
    summary["elapsed_s"] = round(time.perf_counter() - run.started, 1)
    summary["timings"] = run.timings
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    (args.out / "summary.md").write_text(markdown(summary))
    shutil.rmtree(args.out / "state", ignore_errors=True)
    print(markdown(summary))
    failed = [k for k, v in summary["checks"].items() if v == "no"] or [n for n, code in exits.items() if code != 0]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
