"""Issue 37 on real hardware: `bench ab` with arms that restart the server, on an H200.

The project's tiny server (benchmarks/tiny_openai_server.py: a random 4-layer Llama on GPU 0, real GPU
timing) is started by benchmarks/restart_server.sh, then two `bench ab --arm` sessions run, each arm
the command that restarts it:
  (1) base against clb: the same server with CUDA_LAUNCH_BLOCKING=1 in its environment (every kernel
      launch synchronous): the A/B must find the change at concurrency 1, and its direction (slower);
  (2) base against same: two identical commands: the A/B must not call it a change (any metric).
Each ends with the server restarted as base (the state it was found in). Read-only on the GPU: its
name, driver, clocks and power limit are read once with nvidia-smi, never set. Everything rigaudit wrote
(both A/B results, the journals, the restart logs) goes into ONE tar.gz under --out, beside summary.md
and summary.json.

  python3 benchmarks/restart_ab_h200.py --out "$OUT" [--wheels .whl] [--cycles 5] [--aa-cycles 4]
  python3 benchmarks/restart_ab_h200.py --out DIR --server fake --cycles 2 --aa-cycles 2   # CPU check

Only the standard library is needed to start (benchmarks/device_run.py unpacks pydantic from the wheels).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from device_run import READY, ROOT, dependencies, environment, free_port, machine, rigaudit

RESTART = ROOT / "benchmarks" / "restart_server.sh"
GPU_FIELDS = "name,uuid,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.limit,persistence_mode"


def gpu_facts() -> str:
    """nvidia-smi's reading of the GPUs (read only), UUIDs cut to 8 characters."""
    try:
        proc = subprocess.run(
            ["nvidia-smi", f"--query-gpu={GPU_FIELDS}", "--format=csv,noheader"],
            check=False,
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "no nvidia-smi"
    rows = []
    for line in proc.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) > 1:
            parts[1] = parts[1][:12] + "…"
        rows.append(", ".join(parts))
    return "; ".join(rows) or proc.stderr.strip() or "nothing listed"


def server_argv(kind: str, port: int) -> list[str]:
    if kind == "fake":
        return [sys.executable, "-m", "rigaudit.tools.bench.fake_server", "--port", str(port), "--itl-ms", "3"]
    return [sys.executable, str(ROOT / "benchmarks" / "tiny_openai_server.py"), "--port", str(port), "--device", "cuda:0"]


def arm(name: str, pidfile: Path, log: Path, argv: list[str], env: dict[str, str]) -> str:
    variables = [f"{k}={v}" for k, v in env.items()]
    command = [str(RESTART), str(pidfile), str(log), *variables, "--", *argv]
    return f"{name}={shlex.join(command)}"


def verdicts(data: dict[str, Any]) -> dict[str, Any]:
    comparison = data.get("comparison", {})
    arms = comparison.get("arms", [])
    out: dict[str, Any] = {"complete": data.get("complete"), "error": data.get("error"), "restored": data.get("restored")}
    for a in arms:
        for level in a.get("levels", []):
            metrics = level.get("metrics", [])
            head = metrics[0] if metrics else {}
            out[f"{a['arm']} c={level['concurrency']}"] = {
                "verdict": level.get("verdict"),
                "change": head.get("change"),
                "ci": [head.get("ci_low"), head.get("ci_high")],
                "base": head.get("base"),
                "new": head.get("new"),
                "all metrics": {m.get("metric"): m.get("verdict") for m in metrics},
            }
    ready = [v.get("ready_s") for v in data.get("visits", []) if v.get("ready_s") is not None]
    out["restarts"] = len(ready)
    out["ready_s_mean"] = round(sum(ready) / len(ready), 1) if ready else None
    out["bought"] = comparison.get("bought", [])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--wheels", default=str(ROOT / ".whl"))
    parser.add_argument("--server", choices=("tiny", "fake"), default="tiny")
    parser.add_argument("--cycles", type=int, default=5, help="cycles of the CUDA_LAUNCH_BLOCKING A/B (default 5)")
    parser.add_argument("--aa-cycles", type=int, default=4, help="cycles of the identical-arms A/B (default 4)")
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="restart-ab-"))
    env = environment(dependencies(args.wheels), work / "state")
    env["NCCL_NVLS_ENABLE"] = "0"
    port = free_port()
    pidfile, log = work / "server.pid", work / "server.log"
    argv = server_argv(args.server, port)
    summary: dict[str, Any] = {"machine": machine(), "gpus at start": gpu_facts(), "server": args.server}
    subprocess.run(["/bin/sh", str(RESTART), str(pidfile), str(log), "--", *argv], env=env, cwd=ROOT, check=True, timeout=60)
    for _ in range(900):  # the script returns at once; the server's own log says when it serves
        if log.exists() and any(READY.match(line) for line in log.read_text(errors="replace").splitlines()):
            break
        time.sleep(0.2)
    summary["first start s"] = round(time.perf_counter() - began, 1)
    load = ["--base-url", f"http://127.0.0.1:{port}", "--model", "tiny-llama" if args.server == "tiny" else "fake-model"]
    load += ["--concurrency", "1", "--requests", str(args.requests), "--max-tokens", str(args.max_tokens), "--yes"]
    load += ["--ready-timeout", "150", "--no-transcript"]
    runs = {
        "clb": (args.cycles, arm("clb", pidfile, log, argv, {"CUDA_LAUNCH_BLOCKING": "1"})),
        "same": (args.aa_cycles, arm("same", pidfile, log, argv, {})),
    }
    base = arm("base", pidfile, log, argv, {})
    try:
        for name, (cycles, other) in runs.items():
            start = time.perf_counter()
            result = work / f"ab-{name}.json"
            argv_ab = ["bench", "ab", "--arm", base, "--arm", other, "--cycles", str(cycles), *load]
            argv_ab += ["--json", str(result), "--journal", str(work / f"journal-{name}.jsonl")]
            done = rigaudit(argv_ab, env=env, timeout_s=330)
            (work / f"ab-{name}.out").write_text(done.stdout + "\n--- stderr\n" + done.stderr)
            entry: dict[str, Any] = {"exit": done.returncode, "seconds": round(time.perf_counter() - start, 1), "cycles": cycles}
            if result.exists():
                entry.update(verdicts(json.loads(result.read_text())))
            else:
                entry["tail"] = (done.stdout + done.stderr)[-1500:]
            summary[f"ab {name}"] = entry
            print(json.dumps({name: entry}, indent=1), flush=True)
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pidfile.read_text().strip()), signal.SIGTERM)
    summary["total s"] = round(time.perf_counter() - began, 1)
    clb = summary.get("ab clb", {}).get("clb c=1", {})
    same = summary.get("ab same", {}).get("same c=1", {})
    summary["found clb, slower"] = clb.get("verdict") == "regressed"
    summary["identical arms not called a change"] = bool(same) and not {"improved", "regressed"} & set(
        (same.get("all metrics") or {}).values()
    )
    with tarfile.open(args.out / "restart-ab.tar.gz", "w:gz") as tar:
        for path in sorted(work.iterdir()):
            if path.is_file() and path.suffix in (".json", ".jsonl", ".log", ".out"):
                tar.add(path, arcname=path.name)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    lines = [f"# bench ab with restarts on {summary['machine']}", "", f"- GPUs at start (read only): {summary['gpus at start']}"]
    for name in runs:
        entry = summary.get(f"ab {name}", {})
        lines.append(
            f"- ab {name}: exit {entry.get('exit')}, {entry.get('seconds')} s, {entry.get('cycles')} cycles, "
            f"{entry.get('restarts')} restarts ({entry.get('ready_s_mean')} s each to the first token), "
            f"left as {entry.get('restored')}"
        )
        for line in entry.get("bought", []):
            lines.append(f"  - {line}")
    lines += [
        f"- found clb, slower: {summary['found clb, slower']}",
        f"- identical arms not called a change: {summary['identical arms not called a change']}",
        f"- total: {summary['total s']} s",
    ]
    (args.out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
