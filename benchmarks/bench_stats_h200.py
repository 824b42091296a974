"""Issue 21 on real hardware: does `bench compare` / `bench ab` tell noise from a change on an H200?

On a 1x H200 with benchmarks/tiny_openai_server.py on GPU 0 (a random tiny Llama: real GPU timing):
  (a) identical configurations benchmarked again and again: at least 10 A/A comparisons, each
      judged by `bench compare`; a false verdict is any "improved"/"regressed" (any metric, any level);
  (b) CUDA_LAUNCH_BLOCKING=1 in the server's environment against not (server restarted for each);
  (c) an interleaved `bench ab` of a kernel setting that changes nothing for serving
      (vm.swappiness through a one-step plan), rolled back at the end.
Every result JSON, every server log and a summary (summary.json, summary.md) go to --out ($OUT).

  python3 benchmarks/bench_stats_h200.py --out "$OUT" --live          # on the H200, as root
  python3 benchmarks/bench_stats_h200.py --out DIR --server fake --ab-snapshot SNAP --quick   # CPU check

Without --live the swappiness step is switched in a copy of --ab-snapshot (never on this machine).
Only the standard library is imported here; rigaudit runs as `python -m rigaudit`, its missing
dependencies (pydantic, openai) unpacked from the wheelhouse (--wheels, default .whl, made by
benchmarks/make_wheelhouse.sh). The number of A/A runs adapts so that the whole run stays within
--budget-s (default 450 s; at least 10 comparisons are attempted, fewer only if time runs out).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
READY = re.compile(r"^(ready on|listening on) ")
STEP = "demo.swappiness"


class Runner:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out: Path = args.out
        self.started = time.perf_counter()
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = os.pathsep.join(p for p in (*self._deps(), str(ROOT), self.env.get("PYTHONPATH", "")) if p)
        self.env["XDG_STATE_HOME"] = str(self.out / "state")
        self.log = (self.out / "log.txt").open("a", encoding="utf-8")
        self.timings: dict[str, float] = {}
        self.port = free_port()
        """Every server listens here: compare refuses results of different URLs (like with like)."""

    def _deps(self) -> list[str]:
        probe = subprocess.run([sys.executable, "-c", "import pydantic, anyio, rich"], check=False, capture_output=True)
        if probe.returncode == 0:
            return []
        wheels = sorted(Path(self.args.wheels).glob("*.whl"))
        if not wheels:
            raise SystemExit(f"rigaudit's dependencies are missing and there are no wheels in {self.args.wheels}")
        site = Path(tempfile.mkdtemp(prefix="rigaudit-deps-"))
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(site)
        return [str(site)]

    def say(self, text: str) -> None:
        line = f"[{self.elapsed():6.1f}s] {text}"
        print(line, flush=True)
        self.log.write(line + "\n")
        self.log.flush()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def rigaudit(self, *argv: str, expect: tuple[int, ...] = (0,)) -> int:
        command = [sys.executable, "-m", "rigaudit", *argv]
        self.say("+ rigaudit " + " ".join(argv))
        proc = subprocess.run(
            command, check=False, cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=self.args.budget_s
        )
        self.log.write(proc.stdout + proc.stderr)
        if proc.returncode not in expect:
            self.say(f"exit {proc.returncode}: {proc.stderr.strip()[-400:]}")
        return proc.returncode

    # --- the server --------------------------------------------------------------------------------

    def server_argv(self, port: int) -> list[str]:
        if self.args.server == "fake":
            return [
                sys.executable,
                "-m",
                "rigaudit.tools.bench.fake_server",
                "--port",
                str(port),
                "--ttft-ms",
                "2",
                "--itl-ms",
                "2",
            ]
        return [sys.executable, str(ROOT / "benchmarks" / "tiny_openai_server.py"), "--port", str(port), "--device", "cuda:0"]

    def start_server(self, name: str, extra_env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
        port = self.port
        log = self.out / f"server-{name}.log"
        env = {**self.env, **extra_env}
        begin = time.perf_counter()
        handle = log.open("wb")
        proc = subprocess.Popen(self.server_argv(port), cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            text = log.read_text(errors="replace")
            if any(READY.match(line) for line in text.splitlines()):
                self.timings[f"server {name} start s"] = round(time.perf_counter() - begin, 1)
                self.say(f"server {name} ready on port {port} ({extra_env or 'default environment'})")
                return proc, f"http://127.0.0.1:{port}"
            if proc.poll() is not None:
                break
            time.sleep(0.2)
        proc.kill()
        raise SystemExit(f"the {name} server did not come up; see {log}")

    def stop_server(self, proc: subprocess.Popen[bytes]) -> None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    # --- the benchmarks ----------------------------------------------------------------------------

    def load(self, url: str) -> list[str]:
        a = self.args
        return [
            "--base-url", url, "--model", a.model, "--concurrency", a.concurrency, "--requests", str(a.requests),
            "--max-tokens", str(a.max_tokens), "--prompt-tokens", str(a.prompt_tokens), "--warmup", str(a.warmup),
        ]  # fmt: skip

    def inference(self, url: str, name: str) -> Path:
        path = self.out / f"{name}.json"
        begin = time.perf_counter()
        self.rigaudit(
            "bench",
            "inference",
            *self.load(url),
            "--repeat",
            str(self.args.repeat),
            "--yes",
            "--json",
            str(path),
            "--no-transcript",
        )
        self.timings.setdefault("inference run s", round(time.perf_counter() - begin, 1))
        return path

    def compare(self, base: Path, new: Path, name: str) -> dict[str, Any]:
        path = self.out / f"{name}.json"
        self.rigaudit("bench", "compare", str(base), str(new), "--json", str(path), "--no-transcript", expect=(0, 3))
        return json.loads(path.read_text()) if path.exists() else {}

    def ab(self, url: str) -> dict[str, Any]:
        plan, before, where = self.ab_plan()
        path, journal = self.out / "ab.json", self.out / "ab-journal.jsonl"
        argv = ["bench", "ab", "--plan", str(plan), "--only", STEP, *self.load(url), "--cycles", str(self.args.cycles)]
        argv += ["--yes", "--journal", str(journal), "--json", str(path), "--no-transcript", *where]
        begin = time.perf_counter()
        code = self.rigaudit(*argv)
        self.timings["bench ab s"] = round(time.perf_counter() - begin, 1)
        after = self.swappiness()
        data = json.loads(path.read_text()) if path.exists() else {}
        return {"exit": code, "swappiness_before": before, "swappiness_after": after, "restored": before == after, "result": data}

    def swappiness(self) -> str:
        if self.args.live:
            return Path("/proc/sys/vm/swappiness").read_text().strip()
        return (self.out / "ab-copy" / "files" / "proc" / "sys" / "vm" / "swappiness").read_text().strip()

    def ab_plan(self) -> tuple[Path, str, list[str]]:
        if self.args.live:
            where: list[str] = []
            current = Path("/proc/sys/vm/swappiness").read_text().strip()
        else:
            if self.args.ab_snapshot is None:
                raise SystemExit("without --live, (c) needs --ab-snapshot SNAP (a snapshot with /proc/sys/vm/swappiness)")
            where = ["--snapshot", str(self.args.ab_snapshot), "--into", str(self.out / "ab-copy")]
            current = (Path(self.args.ab_snapshot) / "files" / "proc" / "sys" / "vm" / "swappiness").read_text().strip()
        value = "10" if current != "10" else "30"
        step = {
            "id": STEP, "check": "kernel.swappiness", "priority": "P2", "kind": "runtime", "where": "host",
            "title": f"vm.swappiness {current} -> {value} (changes nothing for serving)",
            "actions": [{"type": "sysctl", "key": "vm.swappiness", "value": value}], "risk": "low",
            "verify": f"cat /proc/sys/vm/swappiness shows {value}", "revert": f"sysctl -w vm.swappiness={current}",
        }  # fmt: skip
        plan = self.out / "ab-plan.json"
        plan.write_text(json.dumps({"steps": [step]}, indent=2))
        return plan, current, where


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _calls(comparison: dict[str, Any]) -> list[str]:
    """Every verdict that calls a change ("improved"/"regressed"), as "c=4 ttft_ms_p50 improved"."""
    levels = comparison.get("levels") or [lv for arm in comparison.get("arms", []) for lv in arm["levels"]]
    return [
        f"c={lv['concurrency']} {m['metric']} {m['verdict']}"
        for lv in levels
        for m in lv["metrics"]
        if m["verdict"] in ("improved", "regressed")
    ]


def headline(comparison: dict[str, Any]) -> list[dict[str, Any]]:
    levels = comparison.get("levels") or [lv for arm in comparison.get("arms", []) for lv in arm["levels"]]
    out = []
    for lv in levels:
        m = lv["metrics"][0]
        out.append(
            {
                "concurrency": lv["concurrency"],
                "base": m["base"],
                "new": m["new"],
                "change": m["change"],
                "ci": [m["ci_low"], m["ci_high"]],
                "p_holm": m["p_adjusted"],
                "verdict": m["verdict"],
                "repeats_needed": m["repeats_needed"],
                "noise": m["noise"],
            }
        )
    return out


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1%}"


def markdown(summary: dict[str, Any]) -> str:
    lines = ["# bench compare / bench ab on real hardware (benchmarks/bench_stats_h200.py)", ""]
    lines.append(f"Machine: {summary['machine']}. Workload: {summary['workload']}. Total {summary['elapsed_s']:.0f} s.")
    aa = summary["a_identical"]
    lines += ["", f"## (a) identical configurations: {aa['comparisons']} comparisons, {aa['false']} with a false verdict", ""]
    lines += ["| pair | level | tok/s base → new | change [CI] | p (Holm) | verdict |", "|---|---|---|---|---|---|"]
    for item in aa["pairs"]:
        for h in item["headline"]:
            ci = f"[{_pct(h['ci'][0])}, {_pct(h['ci'][1])}]"
            verdict = h["verdict"] + (f" (need >= {h['repeats_needed']})" if h["repeats_needed"] else "")
            lines.append(
                f"| {item['name']} | {h['concurrency']} | {h['base'] or 0:.1f} → {h['new'] or 0:.1f} | {_pct(h['change'])} {ci} "
                f"| {h['p_holm'] if h['p_holm'] is None else round(h['p_holm'], 3)} | {verdict} |"
            )
        for call in item["calls"]:
            lines.append(f"| {item['name']} | | | | | false call: {call} |")
    for key, title in (
        ("b_remove_clb", "(b) removing CUDA_LAUNCH_BLOCKING=1"),
        ("b_add_clb", "(b) adding CUDA_LAUNCH_BLOCKING=1"),
    ):
        lines += ["", f"## {title}", "", "| level | tok/s before → after | change [CI] | verdict |", "|---|---|---|---|"]
        for h in summary[key]:
            lines.append(
                f"| {h['concurrency']} | {h['base'] or 0:.1f} → {h['new'] or 0:.1f} | {_pct(h['change'])} "
                f"[{_pct(h['ci'][0])}, {_pct(h['ci'][1])}] | {h['verdict']} |"
            )
    ab = summary["c_ab"]
    lines += ["", f"## (c) bench ab of vm.swappiness {ab['swappiness_before']} ↔ its new value", ""]
    before, after = ab["swappiness_before"], ab["swappiness_after"]
    lines.append(f"Exit {ab['exit']}; swappiness before {before}, after {after} (restored: {ab['restored']}).")
    lines += ["", "| level | tok/s A → B | change [CI] | verdict |", "|---|---|---|---|"]
    for h in ab["headline"]:
        lines.append(
            f"| {h['concurrency']} | {h['base'] or 0:.1f} → {h['new'] or 0:.1f} | {_pct(h['change'])} "
            f"[{_pct(h['ci'][0])}, {_pct(h['ci'][1])}] | {h['verdict']} |"
        )
    lines += [f"- false calls: {', '.join(ab['calls']) or 'none'}", "", "## Timings", ""]
    lines += [f"- {k}: {v}" for k, v in summary["timings"].items()]
    return "\n".join(lines) + "\n"


def machine() -> str:
    try:
        proc = subprocess.run(["nvidia-smi", "-L"], check=False, capture_output=True, text=True, timeout=20)
        return " ".join(proc.stdout.split()) or "no GPU listed"
    except (OSError, subprocess.TimeoutExpired):
        return "no nvidia-smi (CPU check)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "bench-stats-out")))
    parser.add_argument("--server", choices=("tiny", "fake"), default="tiny")
    parser.add_argument("--live", action="store_true", help="switch vm.swappiness on this machine (root; the H200)")
    parser.add_argument("--ab-snapshot", type=Path, help="without --live: the snapshot whose copy bench ab switches")
    parser.add_argument("--wheels", default=str(ROOT / ".whl"))
    parser.add_argument("--budget-s", type=float, default=450.0)
    parser.add_argument("--comparisons", type=int, default=10, help="A/A comparisons wanted (two runs each)")
    parser.add_argument("--model", default="tiny-llama")
    parser.add_argument("--concurrency", default="1,4")
    parser.add_argument("--requests", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=24)
    parser.add_argument("--prompt-tokens", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=4)
    parser.add_argument("--cycles", type=int, default=6)
    parser.add_argument("--quick", action="store_true", help="tiny sizes for a CPU check of the script itself")
    args = parser.parse_args()
    if args.quick:
        args.comparisons = min(args.comparisons, 2)
        args.requests, args.max_tokens, args.prompt_tokens = 2, 4, 8
        args.repeat, args.warmup, args.cycles, args.concurrency = 3, 1, 2, "1,2"
    if args.server == "fake" and args.model == "tiny-llama":
        args.model = "fake-model"
    args.out.mkdir(parents=True, exist_ok=True)
    run = Runner(args)
    summary: dict[str, Any] = {"machine": machine(), "server": args.server, "live": args.live}
    summary["workload"] = (
        f"concurrency {args.concurrency}, {args.requests} requests per level and repeat, {args.prompt_tokens} prompt / "
        f"{args.max_tokens} output tokens, {args.repeat} repeats, {args.warmup} warm-up; bench ab {args.cycles} cycles"
    )

    server, url = run.start_server("normal-1", {})
    try:
        first = run.inference(url, "normal-before")
        per_run = run.timings["inference run s"]
        ab = run.ab(url)
        ab_cost = run.timings["bench ab s"]
        # what is left after (b): two restarts, two runs, the compares (a few seconds)
        reserve = 2 * run.timings["server normal-1 start s"] + 2 * per_run + 15
        room = max(0.0, args.budget_s - run.elapsed() - reserve)
        pairs = max(1, min(args.comparisons, int(room // (2 * per_run))))
        run.say(f"one run {per_run:.1f} s, bench ab {ab_cost:.1f} s: {pairs} A/A comparisons fit the budget")
        aa_files = []
        for index in range(2 * pairs):
            if index >= 2 and run.elapsed() + reserve + per_run > args.budget_s:
                run.say("budget reached: stopping the A/A runs")
                break
            aa_files.append(run.inference(url, f"aa-{index + 1:02d}"))
    finally:
        run.stop_server(server)
    aa_files = aa_files[: len(aa_files) // 2 * 2]
    pairs_out = []
    for index in range(0, len(aa_files), 2):
        name = f"aa-compare-{index // 2 + 1:02d}"
        comparison = run.compare(aa_files[index], aa_files[index + 1], name)
        pairs_out.append({"name": name, "headline": headline(comparison), "calls": _calls(comparison)})
    summary["a_identical"] = {
        "comparisons": len(pairs_out),
        "false": sum(1 for p in pairs_out if p["calls"]),
        "headline_verdicts": [h["verdict"] for p in pairs_out for h in p["headline"]],
        "pairs": pairs_out,
    }

    server, url = run.start_server("clb", {"CUDA_LAUNCH_BLOCKING": "1"})
    try:
        clb = run.inference(url, "clb")
    finally:
        run.stop_server(server)
    server, url = run.start_server("normal-2", {})
    try:
        after = run.inference(url, "normal-after")
    finally:
        run.stop_server(server)
    summary["b_add_clb"] = headline(run.compare(first, clb, "compare-add-clb"))
    summary["b_remove_clb"] = headline(run.compare(clb, after, "compare-remove-clb"))
    ab_result = ab.pop("result")
    comparison = ab_result.get("comparison", {})
    summary["c_ab"] = {**ab, "headline": headline(comparison), "calls": _calls(comparison), "complete": ab_result.get("complete")}
    summary["elapsed_s"] = round(run.elapsed(), 1)
    summary["timings"] = run.timings
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    (args.out / "summary.md").write_text(markdown(summary))
    shutil.rmtree(args.out / "state", ignore_errors=True)
    print(markdown(summary))
    return 0 if ab["restored"] and ab["exit"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
