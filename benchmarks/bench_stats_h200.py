"""Issue 21 on real hardware: does `bench compare` / `bench ab` tell noise from a change on an H200?

On a 1x H200 with benchmarks/tiny_openai_server.py on GPU 0 (a random tiny Llama: real GPU timing):
  calibration: `bench calibrate` runs K A/A sessions (each in a fresh process) and stores the
      between-session noise of this host and workload;
  (a) identical configurations: at least 10 A/A comparisons of separate `bench inference` sessions
      (disjoint pairs), each judged by `bench compare` with that calibration; a false verdict is any
      "improved"/"regressed" (any metric, any level). Every pair of all the A/A sessions is also
      replayed in-process, calibrated from the sessions not compared (leave the pair out);
  (b) CUDA_LAUNCH_BLOCKING=1 in the server's environment against not (server restarted for each),
      two sessions a side, judged with the calibration pooled with the sessions' own spread;
  (c) an interleaved `bench ab` of a kernel setting that changes nothing for serving (vm.swappiness
      through a one-step plan), rolled back at the end, at concurrency 4 with 16 requests a visit.
The device returns few files: everything (results, comparisons, calibration, logs) is packed into
ONE tar.gz under --out ($OUT), beside summary.md (written to be pasted as the H200 section of
docs/validation/bench-stats.md) and summary.json: three files.

  python3 benchmarks/bench_stats_h200.py --out "$OUT" --live          # on the H200, as root
  python3 benchmarks/bench_stats_h200.py --out DIR --server fake --ab-snapshot SNAP --quick   # CPU check

Without --live the swappiness step is switched in a copy of --ab-snapshot (never on this machine).
Only the standard library is needed to start (and benchmarks/device_run.py, which shares the
wheelhouse and the server's start and stop with benchmarks/explain_h200.py); rigaudit runs as
`python -m rigaudit`, its missing dependencies (pydantic, openai) unpacked from the wheelhouse
(--wheels, default .whl, made by benchmarks/make_wheelhouse.sh). The number of A/A sessions, then
(b)'s sessions a side, adapt so that the whole run stays within --budget-s (default 400 s; under 7
minutes with the end's work): 10 A/A comparisons come first.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from device_run import ROOT, dependencies, environment, free_port, machine, rigaudit, start_server, stop

STEP = "demo.swappiness"
ARCHIVE = "bench-stats-h200.tar.gz"


class Runner:
    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args = args
        self.work = work
        """Every file goes here first; the archive is made of it at the end."""
        self.started = time.perf_counter()
        self.site = dependencies(args.wheels)
        self.env = environment(self.site, work / "state")
        self.log = (work / "log.txt").open("a", encoding="utf-8")
        self.lock = threading.Lock()
        self.timings: dict[str, float] = {}
        self.port = free_port()
        """Every server listens here: compare refuses results of different URLs (like with like)."""

    def say(self, text: str) -> None:
        line = f"[{self.elapsed():6.1f}s] {text}"
        self.write(line + "\n")
        print(line, flush=True)

    def write(self, text: str) -> None:
        with self.lock:  # compares run in threads
            self.log.write(text)
            self.log.flush()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def left(self) -> float:
        return self.args.budget_s - self.elapsed()

    def rigaudit(self, *argv: str, expect: tuple[int, ...] = (0,)) -> int:
        self.say("+ rigaudit " + " ".join(argv))
        proc = rigaudit([*argv, "--no-transcript", "--no-live"], env=self.env)
        self.write(proc.stdout + proc.stderr)
        if proc.returncode not in expect:
            self.say(f"exit {proc.returncode}: {proc.stderr.strip()[-400:]}")
        return proc.returncode

    # --- the server --------------------------------------------------------------------------------

    def server_argv(self, port: int) -> list[str]:
        if self.args.server == "fake":
            fake = ["-m", "rigaudit.tools.bench.fake_server", "--port", str(port), "--ttft-ms", "2", "--itl-ms", "2"]
            return [sys.executable, *fake]
        return [sys.executable, str(ROOT / "benchmarks" / "tiny_openai_server.py"), "--port", str(port), "--device", "cuda:0"]

    def start_server(self, name: str, extra_env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
        """ServerDown (a RuntimeError: main packs what ran) when it does not come up."""
        log = self.work / f"server-{name}.log"
        server = start_server(self.server_argv(self.port), log=log, port=self.port, env={**self.env, **extra_env}, timeout_s=240)
        self.timings[f"server {name} start s"] = server.started_s
        self.say(f"server {name} ready on port {self.port} ({extra_env or 'default environment'})")
        return server.proc, server.url

    def stop_server(self, proc: subprocess.Popen[bytes]) -> None:
        stop(proc, 20.0)

    # --- the benchmarks ----------------------------------------------------------------------------

    def load(self, url: str, *, concurrency: str | None = None, requests: int | None = None) -> list[str]:
        a = self.args
        return [
            "--base-url", url, "--model", a.model, "--concurrency", concurrency or a.concurrency,
            "--requests", str(requests or a.requests), "--max-tokens", str(a.max_tokens),
            "--prompt-tokens", str(a.prompt_tokens), "--warmup", str(a.warmup),
        ]  # fmt: skip

    def calibrate(self, url: str) -> dict[str, Any]:
        path, keep = self.work / "calibration.json", self.work / "calibration-sessions"
        begin = time.perf_counter()
        argv = ["bench", "calibrate", *self.load(url), "--repeat", str(self.args.repeat)]
        argv += ["--sessions", str(self.args.calibration_sessions), "--keep", str(keep), "--json", str(path), "--yes"]
        code = self.rigaudit(*argv)
        self.timings["calibration s"] = round(time.perf_counter() - begin, 1)
        if code != 0 or not path.exists():
            raise RuntimeError("bench calibrate failed; see log.txt")
        return self.calibration_summary(path)

    def inference(self, url: str, name: str) -> Path:
        path = self.work / f"{name}.json"
        begin = time.perf_counter()
        self.rigaudit("bench", "inference", *self.load(url), "--repeat", str(self.args.repeat), "--yes", "--json", str(path))
        self.timings.setdefault("one inference session s", round(time.perf_counter() - begin, 1))
        if not path.exists():
            raise RuntimeError(f"bench inference wrote no {path.name}; see log.txt")
        return path

    def compare(self, base: list[Path], new: list[Path], name: str) -> dict[str, Any]:
        path = self.work / f"{name}.json"
        sides = [str(p) for p in base] + (["--against", *map(str, new)] if len(base) + len(new) > 2 else [str(new[0])])
        self.rigaudit("bench", "compare", *sides, "--json", str(path), expect=(0, 3))
        return dict(json.loads(path.read_text())) if path.exists() else {}

    def compare_all(self, jobs: list[tuple[list[Path], list[Path], str]]) -> list[dict[str, Any]]:
        """Every ``bench compare`` at once (each a process of its own; they only read): in the order given."""
        begin = time.perf_counter()
        with ThreadPoolExecutor(max_workers=max(1, min(8, (os.cpu_count() or 2) - 1))) as pool:
            done = list(pool.map(lambda job: self.compare(*job), jobs))
        self.timings["compares s"] = round(time.perf_counter() - begin, 1)
        return done

    def ab(self, url: str) -> dict[str, Any]:
        plan, before, where = self.ab_plan()
        path, journal = self.work / "ab.json", self.work / "ab-journal.jsonl"
        load = self.load(url, concurrency=self.args.ab_concurrency, requests=self.args.ab_requests)
        argv = ["bench", "ab", "--plan", str(plan), "--only", STEP, *load, "--cycles", str(self.args.cycles)]
        argv += ["--yes", "--journal", str(journal), "--json", str(path), *where]
        begin = time.perf_counter()
        code = self.rigaudit(*argv)
        self.timings["bench ab s"] = round(time.perf_counter() - begin, 1)
        after = self.swappiness()
        data = json.loads(path.read_text()) if path.exists() else {}
        return {"exit": code, "swappiness_before": before, "swappiness_after": after, "restored": before == after, "result": data}

    def swappiness(self) -> str:
        if self.args.live:
            return Path("/proc/sys/vm/swappiness").read_text().strip()
        return (self.work / "ab-copy" / "files" / "proc" / "sys" / "vm" / "swappiness").read_text().strip()

    def ab_plan(self) -> tuple[Path, str, list[str]]:
        if self.args.live:
            where: list[str] = []
            current = Path("/proc/sys/vm/swappiness").read_text().strip()
        else:
            if self.args.ab_snapshot is None:
                raise SystemExit("without --live, (c) needs --ab-snapshot SNAP (a snapshot with /proc/sys/vm/swappiness)")
            where = ["--snapshot", str(self.args.ab_snapshot), "--into", str(self.work / "ab-copy")]
            current = (Path(self.args.ab_snapshot) / "files" / "proc" / "sys" / "vm" / "swappiness").read_text().strip()
        value = "10" if current != "10" else "30"
        step = {
            "id": STEP, "check": "kernel.swappiness", "priority": "P2", "kind": "runtime", "where": "host",
            "title": f"vm.swappiness {current} -> {value} (changes nothing for serving)",
            "actions": [{"type": "sysctl", "key": "vm.swappiness", "value": value}], "risk": "low",
            "verify": f"cat /proc/sys/vm/swappiness shows {value}", "revert": f"sysctl -w vm.swappiness={current}",
        }  # fmt: skip
        plan = self.work / "ab-plan.json"
        plan.write_text(json.dumps({"steps": [step]}, indent=2))
        return plan, current, where

    def importable(self) -> None:
        """rigaudit and its dependencies importable in this process too (for the figures computed here)."""
        for path in (*self.site, str(ROOT)):
            if path not in sys.path:
                sys.path.insert(0, path)

    def calibration_summary(self, path: Path) -> dict[str, Any]:
        self.importable()
        from rigaudit.tools.bench.calibration import load_calibration
        from rigaudit.tools.bench.compare import Settings
        from rigaudit.tools.bench.render_calibration import calibration_table

        calibration = load_calibration(path)
        return {
            "describe": calibration.describe(),
            "session_cv": calibration.headline_cv(),
            "table": calibration_table(calibration, Settings()),
        }

    def replay(self, files: list[Path]) -> dict[str, Any]:
        """Every pair of the A/A sessions through compare, in this process: calibrated leave-pair-out, default, zero."""
        self.importable()
        from rigaudit.tools.bench.results import load_result
        from rigaudit.tools.testing.bench_replay import replay

        sessions = [load_result(p) for p in files]
        out: dict[str, Any] = {"sessions": len(sessions)}
        for mode in ("calibrated", "default", "zero"):
            if mode == "calibrated" and len(sessions) < 4:
                continue
            done = replay(sessions, mode)  # type: ignore[arg-type]
            out[mode] = {
                "comparisons": done.comparisons,
                "false": done.false,
                "rate": round(done.rate, 4),
                "headline_verdicts": done.headline_verdicts,
                "calls": done.calls[:40],
            }
        return out


def _levels(comparison: dict[str, Any]) -> list[dict[str, Any]]:
    return comparison.get("levels") or [lv for arm in comparison.get("arms", []) for lv in arm["levels"]]


def calls(comparison: dict[str, Any]) -> list[str]:
    """Every verdict that calls a change ("improved"/"regressed"), as "c=4 ttft_ms_p50 improved"."""
    return [
        f"c={lv['concurrency']} {m['metric']} {m['verdict']}"
        for lv in _levels(comparison)
        for m in lv["metrics"]
        if m["verdict"] in ("improved", "regressed")
    ]


def _label(m: dict[str, Any]) -> str:
    if m["verdict"] != "not enough repeats":
        return str(m["verdict"])
    if m.get("repeats_needed"):
        return f"not enough repeats (need >= {m['repeats_needed']})"
    if m.get("sessions_needed"):
        return f"not enough sessions (need >= {m['sessions_needed']} a side)"
    return "not enough repeats"


def headline(comparison: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for lv in _levels(comparison):
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
                "label": _label(m),
                "noise": m["noise"],
                "session_noise": m.get("session_noise"),
            }
        )
    return out


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1%}"


def _row(h: dict[str, Any]) -> str:
    """``| level | base → new | change [CI] | p | verdict |``."""
    shown = f"{h['base'] or 0:.1f} → {h['new'] or 0:.1f}"
    return f"| {h['concurrency']} | {shown} | {_ci(h)} | {_p(h['p_holm'])} | {h['label']} |"


def _ci(h: dict[str, Any]) -> str:
    return f"{_pct(h['change'])} [{_pct(h['ci'][0])}, {_pct(h['ci'][1])}]"


def _p(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _calibration_lines(cal: dict[str, Any]) -> list[str]:
    headers, rows = cal["table"]
    lines = [
        f"{cal['describe']}. Each session a fresh process. Session CV: the spread between sessions that repeats "
        "cannot see (one-way ANOVA of the sessions, output tok/s); repeat CV: the spread within one; one session a side: "
        "the half-width of a compare of one session against one at this spread, whatever its repeats.",
        "",
        "| " + " | ".join(headers) + " |",
        "|" + "---|" * len(headers),
    ]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def markdown(summary: dict[str, Any]) -> str:
    lines = [f"## On real hardware: 1x H200, {summary['when']} (benchmarks/bench_stats_h200.py)", ""]
    lines.append(
        f"Machine: {summary['machine']}. Server: {summary['server']}. Workload: {summary['workload']}. "
        f"Total {summary['elapsed_s']:.0f} s."
    )
    if summary.get("error"):
        lines += ["", f"**The run stopped early**: {summary['error']}; what ran is below."]
    if "calibration" in summary:
        lines += ["", "### Calibration", "", *_calibration_lines(summary["calibration"])]
    aa = summary.get("a_identical")
    if aa:
        lines += [
            "",
            f"### (a) identical configurations: {aa['comparisons']} comparisons, {aa['false']} with a false verdict",
            "",
            "Disjoint pairs of separate `bench inference` sessions, judged by `bench compare` with the stored "
            f"calibration (between sessions: {aa.get('modes')}).",
            "",
            "| pair | level | tok/s base → new | change [95% CI] | p (Holm) | verdict |",
            "|---|---|---|---|---|---|",
        ]
        for item in aa["pairs"]:
            for h in item["headline"]:
                lines.append(
                    f"| {item['name']} | {h['concurrency']} | {h['base'] or 0:.1f} → {h['new'] or 0:.1f} | {_ci(h)} "
                    f"| {_p(h['p_holm'])} | {h['label']} |"
                )
            for call in item["calls"]:
                lines.append(f"| {item['name']} | | | | | false call: {call} |")
    rep = summary.get("replay")
    if rep:
        lines += [
            "",
            f"Every pair of the {rep['sessions']} A/A sessions (calibration's and (a)'s), replayed through the same compare:",
            "",
            "| judged | comparisons | false calls | rate | headline verdicts |",
            "|---|---|---|---|---|",
        ]
        names = {
            "calibrated": "calibrated from the other sessions",
            "default": "not calibrated (default)",
            "zero": "--session-cv 0",
        }
        for mode in ("calibrated", "default", "zero"):
            if mode in rep:
                r = rep[mode]
                verdicts = ", ".join(f"{k}: {v}" for k, v in sorted(r["headline_verdicts"].items()))
                lines.append(f"| {names[mode]} | {r['comparisons']} | {r['false']} | {r['rate']:.1%} | {verdicts} |")
    b = summary.get("b_sessions", 1)
    for key, title in (
        ("b_add_clb", f"(b) adding CUDA_LAUNCH_BLOCKING=1 (server restarted; {b} session(s) a side)"),
        ("b_remove_clb", "(b) removing CUDA_LAUNCH_BLOCKING=1 (server restarted again)"),
    ):
        if key in summary:
            lines += ["", f"### {title}", "", "| level | tok/s before → after | change [95% CI] | p (Holm) | verdict |"]
            lines.append("|---|---|---|---|---|")
            lines += [_row(h) for h in summary[key]]
    ab = summary.get("c_ab")
    if ab:
        lines += ["", f"### (c) bench ab of vm.swappiness {ab['swappiness_before']} ↔ another value", ""]
        lines.append(
            f"{ab['workload']}. Exit {ab['exit']}; swappiness before {ab['swappiness_before']}, after "
            f"{ab['swappiness_after']} (restored: {ab['restored']}); complete: {ab['complete']}."
        )
        lines += ["", "| level | tok/s A → B | change [95% CI] | p (Holm) | verdict |", "|---|---|---|---|---|"]
        lines += [_row(h) for h in ab["headline"]]
        lines.append(f"- false calls: {', '.join(ab['calls']) or 'none'}")
    lines += ["", "### Timings", ""]
    lines += [f"- {k}: {v}" for k, v in summary["timings"].items()]
    lines += ["", f"Every result, comparison, the calibration and the logs: `{ARCHIVE}`."]
    return "\n".join(lines) + "\n"


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "bench-stats-out")))
    parser.add_argument("--server", choices=("tiny", "fake"), default="tiny")
    parser.add_argument("--live", action="store_true", help="switch vm.swappiness on this machine (root; the H200)")
    parser.add_argument("--ab-snapshot", type=Path, help="without --live: the snapshot whose copy bench ab switches")
    parser.add_argument("--wheels", default=str(ROOT / ".whl"))
    parser.add_argument("--budget-s", type=float, default=400.0)
    parser.add_argument("--comparisons", type=int, default=10, help="A/A comparisons wanted (two sessions each)")
    parser.add_argument("--calibration-sessions", type=int, default=5)
    parser.add_argument("--b-sessions", type=int, default=2, help="sessions a side for (b)")
    parser.add_argument("--model", default="tiny-llama")
    # (a) as in the lead's first run (docs/validation/h200-run1), so both runs' sessions are alike
    parser.add_argument("--concurrency", default="1,4")
    parser.add_argument("--requests", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=24)
    parser.add_argument("--prompt-tokens", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=4)
    # (c): concurrency 4, four full waves a visit: the paired noise then fits ±10% in 8 cycles (bench-stats.md)
    parser.add_argument("--ab-concurrency", default="4")
    parser.add_argument("--ab-requests", type=int, default=16)
    parser.add_argument("--cycles", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="tiny sizes for a CPU check of the script itself")
    args = parser.parse_args()
    if args.quick:
        args.comparisons, args.calibration_sessions, args.b_sessions = min(args.comparisons, 2), 3, 1
        args.requests, args.max_tokens, args.prompt_tokens = 2, 4, 8
        args.repeat, args.warmup, args.cycles, args.concurrency = 3, 1, 2, "1,2"
        args.ab_concurrency, args.ab_requests = "2", 2
    if args.server == "fake" and args.model == "tiny-llama":
        args.model = "fake-model"
    return args


FIXED_S = 20.0
"""What the end needs besides sessions and restarts: the compares (in parallel), the replay, packing, a margin."""


def plan(left: float, per_session: float, restart: float, comparisons: int, b_sessions: int) -> tuple[int, int]:
    """(A/A sessions in all, (b) sessions a side) that fit ``left`` seconds once one A/A session has run: the
    comparisons first (10 pairs is the issue's test), then (b) with as many sessions a side as still fit (at least 1)."""
    room = left - FIXED_S - 2 * restart
    for b in range(b_sessions, 0, -1):
        if room - 2 * b * per_session >= (2 * comparisons - 1) * per_session:
            return 2 * comparisons, b
    sessions = 1 + int((room - 2 * per_session) // per_session)
    return max(2, min(2 * comparisons, sessions)), 1


def run_all(run: Runner, summary: dict[str, Any]) -> None:
    a = run.args
    server, url = run.start_server("normal-1", {})
    try:
        summary["calibration"] = run.calibrate(url)
        ab = run.ab(url)
        first = run.inference(url, "aa-01")
        # a session as the calibration's ran them (steadier than one), unless the one just run was quicker
        calibrated_each = run.timings["calibration s"] / a.calibration_sessions
        per_session = min(run.timings["one inference session s"], calibrated_each)
        restart = min(run.timings["server normal-1 start s"], 60.0)
        sessions, b_sessions = plan(run.left(), per_session, restart, a.comparisons, a.b_sessions)
        summary["b_sessions"] = b_sessions
        run.say(
            f"one session {per_session:.1f} s, bench ab {run.timings['bench ab s']:.1f} s: {sessions // 2} A/A pairs "
            f"and {b_sessions} session(s) a side for (b) fit"
        )
        aa = [first]
        for index in range(1, sessions):
            if index >= 2 and run.left() < FIXED_S + 2 * restart + (2 * b_sessions + 1) * per_session:
                run.say("budget reached: stopping the A/A sessions")
                break
            aa.append(run.inference(url, f"aa-{index + 1:02d}"))
    finally:
        run.stop_server(server)
    ab_result = ab.pop("result")
    comparison = ab_result.get("comparison", {})
    summary["c_ab"] = {
        **ab,
        "workload": f"concurrency {a.ab_concurrency}, {a.ab_requests} requests a visit, {a.cycles} cycles",
        "headline": headline(comparison),
        "calls": calls(comparison),
        "complete": ab_result.get("complete"),
    }
    groups: dict[str, list[Path]] = {}
    for name, env in (("clb", {"CUDA_LAUNCH_BLOCKING": "1"}), ("normal-2", {})):
        server, url = run.start_server(name, env)
        try:
            groups[name] = [run.inference(url, f"{name}-{i + 1}") for i in range(b_sessions)]
        finally:
            run.stop_server(server)
    aa = aa[: len(aa) // 2 * 2]
    jobs = [([aa[i]], [aa[i + 1]], f"aa-compare-{i // 2 + 1:02d}") for i in range(0, len(aa), 2)]
    jobs += [(aa[-b_sessions:], groups["clb"], "compare-add-clb"), (groups["clb"], groups["normal-2"], "compare-remove-clb")]
    done = run.compare_all(jobs)
    pairs = [
        {"name": name, "headline": headline(c), "calls": calls(c), "between": c.get("between")}
        for (_, _, name), c in zip(jobs[:-2], done[:-2], strict=True)
    ]
    modes = sorted({str((p["between"] or {}).get("mode")) for p in pairs})
    summary["a_identical"] = {"comparisons": len(pairs), "false": sum(1 for p in pairs if p["calls"]), "modes": ", ".join(modes)}
    summary["a_identical"]["pairs"] = pairs
    summary["b_add_clb"], summary["b_remove_clb"] = headline(done[-2]), headline(done[-1])
    calibration_sessions = sorted((run.work / "calibration-sessions").glob("session-*.json"))
    summary["replay"] = run.replay([*calibration_sessions, *aa])


def pack(work: Path, out: Path, summary: dict[str, Any]) -> None:
    """ONE archive of every file made, then summary.md and summary.json beside it: three files under ``out``."""
    shutil.rmtree(work / "state", ignore_errors=True)
    (work / "summary.json").write_text(json.dumps(summary, indent=2))
    (work / "summary.md").write_text(markdown(summary))
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out / ARCHIVE, "w:gz") as archive:
        archive.add(work, arcname="bench-stats-h200")
    shutil.copyfile(work / "summary.json", out / "summary.json")
    shutil.copyfile(work / "summary.md", out / "summary.md")


def main() -> int:
    args = arguments()
    work = Path(tempfile.mkdtemp(prefix="bench-stats-"))
    run = Runner(args, work)
    summary: dict[str, Any] = {
        "machine": machine(),
        "server": "benchmarks/tiny_openai_server.py on cuda:0" if args.server == "tiny" else "the fake server (CPU check)",
        "live": args.live,
        "b_sessions": args.b_sessions,
        "when": time.strftime("%Y-%m-%d", time.gmtime()),
        "workload": (
            f"concurrency {args.concurrency}, {args.requests} requests per level and repeat, {args.prompt_tokens} prompt / "
            f"{args.max_tokens} output tokens, {args.repeat} repeats, {args.warmup} warm-up"
        ),
    }
    try:
        run_all(run, summary)
    except Exception as exc:  # pack what ran, whatever stopped it
        summary["error"] = f"{type(exc).__name__}: {exc}"
        run.log.write(traceback.format_exc())
    summary["elapsed_s"] = round(run.elapsed(), 1)
    summary["timings"] = run.timings
    run.log.close()
    pack(work, args.out, summary)
    shutil.rmtree(work, ignore_errors=True)
    print(markdown(summary))
    ab = summary.get("c_ab", {})
    return 0 if not summary.get("error") and ab.get("restored") and ab.get("exit") == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
