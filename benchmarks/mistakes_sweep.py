"""Try ordinary mistakes against the real command line and count how each one ends.

Each mistake is a `rigaudit` command a new user could type (a wrong path, a swapped flag, a closed
port, a pipe closed early, Ctrl-C, a live machine handed the demo's plan). Every one runs as a real
subprocess with its own temporary HOME and working folder and a deadline, and ends in one of:

- ``one-line``: a non-zero exit with one line on stderr (what a usage error should be);
- ``sensible``: exit 0, read in a way the user meant (a URL without a scheme, say);
- ``other``: neither, but nothing false (several lines, say);
- ``traceback``: Python's "Traceback (most recent call last)" reached the user;
- ``hang``: still running at the deadline;
- ``false``: a line the mistake says must not appear (a verdict nobody made, "healthy" on a node
  without GPUs), or a line it must show is missing.

Usage: ``python benchmarks/mistakes_sweep.py [--jobs N] [--deadline S] [--show]``. It prints one row
per mistake that is not ``one-line``/``sensible`` with ``--show``, then the counts. Exit 1 when any
mistake ends in a traceback, a hang or a false statement.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "tests" / "fixtures" / "seed-lxc-8x-rtxpro6000"
BENCH = ROOT / "docs" / "validation" / "h200x2" / "inference_base.json"
TRACEBACK = "Traceback (most recent call last)"
# What an audit that never read its facts must not say (issue 34: an interrupted audit).
UNMADE_VERDICTS = ("No problem and nothing unknown", "Plan: nothing to change", "No NVIDIA GPU")


@dataclass(frozen=True)
class Mistake:
    """One command a user could get wrong, and what it must (not) print."""

    name: str
    argv: tuple[str, ...]
    expect: str = "one-line"  # or "sensible" (exit 0 is right) or "any" (a clear outcome of either kind)
    forbid: tuple[str, ...] = ()
    require: tuple[str, ...] = ()
    stdin: str = ""
    interrupt_after_line: int = 0  # send SIGINT once stdout+stderr has this many lines
    read_lines: int = 0  # close the pipe after reading this many lines of stdout (`| head -N`)


@dataclass
class Outcome:
    mistake: Mistake
    kind: str
    status: int | None
    detail: str = ""
    lines: list[str] = field(default_factory=list)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _has_nvidia_gpu() -> bool:
    """Whether this machine's PCI bus shows an NVIDIA function (the gate's line must then not hide it)."""
    try:
        return any((d / "vendor").read_text().strip() == "0x10de" for d in Path("/sys/bus/pci/devices").iterdir())
    except OSError:
        return False


def mistakes(work: Path) -> list[Mistake]:
    """The catalog: at least 60 mistakes, over every command."""
    port = _closed_port()
    url = f"http://127.0.0.1:{port}"
    plan = str(work / "demo-plan.json")
    bench = str(BENCH)
    m = Mistake
    served = ("--base-url", url, "--model", "m")
    return [
        # audit
        m("audit: snapshot that does not exist", ("audit", "--snapshot", "/nonexistent-rigaudit/snap")),
        m("audit: snapshot is a file", ("audit", "--snapshot", str(SEED / "manifest.json"))),
        m("audit: snapshot is an empty folder", ("audit", "--snapshot", str(work / "empty"))),
        m("audit: unknown demo", ("audit", "--demo", "nosuchdemo")),
        m("audit: unknown area", ("audit", "--demo", "seed", "--areas", "gpu,warp-drive")),
        m("audit: empty areas", ("audit", "--demo", "seed", "--areas", ""), expect="any"),
        m("audit: timeout 0", ("audit", "--demo", "seed", "--timeout", "0")),
        m("audit: timeout not a number", ("audit", "--demo", "seed", "--timeout", "soon")),
        m("audit: concurrency 0", ("audit", "--demo", "seed", "--concurrency", "0")),
        m("audit: concurrency negative", ("audit", "--demo", "seed", "--concurrency", "-3")),
        m("audit: fail-on unknown", ("audit", "--demo", "seed", "--fail-on", "severe")),
        m("audit: report in /proc", ("audit", "--demo", "seed", "--report", "/proc/nope/x.md")),
        m("audit: report in /sys", ("audit", "--demo", "seed", "--report", "/sys/kernel/x.md")),
        m("audit: json over /proc/version", ("audit", "--demo", "seed", "--json", "/proc/version")),
        m("audit: report is a folder", ("audit", "--demo", "seed", "--report", str(work))),
        m("audit: json into a missing folder", ("audit", "--demo", "seed", "--json", str(work / "no" / "a.json")), expect="any"),
        m("audit: explain unknown check", ("audit", "--demo", "seed", "--explain", "gpu.nope")),
        m("audit: snapshot and demo", ("audit", "--demo", "seed", "--snapshot", str(SEED))),
        m("audit: replay latency negative", ("audit", "--demo", "seed", "--replay-latency-ms", "-5")),
        m("audit: a bundle given as a snapshot", ("audit", "--snapshot", str(work / "bundle.tar.gz"))),
        m("audit: llm with a closed port", ("audit", "--demo", "seed", "--llm", "--base-url", url, "--model", "m")),
        m("audit: llm without a model", ("audit", "--demo", "seed", "--llm", "--base-url", url), expect="any"),
        m("audit: hosts file missing", ("audit", "--hosts", str(work / "nohosts.txt"))),
        m("audit: results folder missing", ("audit", "--results", str(work / "noresults"))),
        m("audit: transcript in /proc", ("audit", "--demo", "seed", "--transcript", "/proc/x.jsonl")),
        m("audit: a flag misspelt", ("audit", "--demo", "seed", "--jsn", "a.json")),
        m(
            "audit: piped into head -5",
            ("audit", "--demo", "seed"),
            expect="any",
            read_lines=5,
        ),
        m(
            "audit: interrupted (Ctrl-C)",
            ("audit", "--demo", "seed", "--replay-latency-ms", "50", "--no-live"),
            expect="any",
            forbid=UNMADE_VERDICTS,
            interrupt_after_line=1,
        ),
        # snapshot
        m("snapshot: into an existing file", ("snapshot", "-o", str(SEED / "snapshot.json"), "--no-live")),
        m("snapshot: into /proc", ("snapshot", "-o", "/proc/snap")),
        # apply / rollback
        m("apply: plan missing", ("apply", "--plan", str(work / "noplan.json"))),
        m("apply: plan is not JSON", ("apply", "--plan", str(work / "garbage.json"))),
        m("apply: plan is a bench result", ("apply", "--plan", bench)),
        m(
            "apply: the demo's plan on this machine",
            ("apply", "--plan", plan, "--yes"),
            forbid=("applied", "verified"),
        ),
        m("apply: only an unknown step", ("apply", "--plan", plan, "--only", "gpu.nope", "--yes")),
        m("apply: into an existing folder", ("apply", "--plan", plan, "--into", str(work))),
        m("apply: journal in /proc", ("apply", "--plan", plan, "--journal", "/proc/j.json", "--yes")),
        m("rollback: journal missing", ("rollback", str(work / "nojournal.jsonl"))),
        m("rollback: journal is garbage", ("rollback", str(work / "garbage.json"))),
        m("rollback: a plan given as a journal", ("rollback", plan)),
        # bench
        m("bench: no kind", ("bench",)),
        m("bench inference: closed port", ("bench", "inference", *served, "--yes")),
        m(
            "bench inference: URL ends in /chat/completions",
            ("bench", "inference", "--base-url", f"{url}/v1/chat/completions", "--model", "m", "--yes"),
            require=("chat/completions",),
        ),
        m("bench inference: ftp URL", ("bench", "inference", "--base-url", "ftp://x", "--model", "m", "--yes")),
        m("bench inference: no URL", ("bench", "inference", "--model", "m", "--yes")),
        m(
            "bench inference: concurrency 0",
            ("bench", "inference", *served, "--concurrency", "0", "--yes"),
        ),
        m(
            "bench inference: concurrency text",
            ("bench", "inference", *served, "--concurrency", "a", "--yes"),
        ),
        m("bench inference: repeat 0", ("bench", "inference", *served, "--repeat", "0", "--yes")),
        m("bench inference: bad slo", ("bench", "inference", *served, "--slo", "ttft=fast", "--yes")),
        m("bench inference: without approval, no tty", ("bench", "inference", "--base-url", url, "--model", "m")),
        m("bench compare: one file twice", ("bench", "compare", bench, bench), require=("twice",)),
        m("bench compare: one file", ("bench", "compare", bench)),
        m("bench compare: missing file", ("bench", "compare", bench, str(work / "none.json"))),
        m("bench compare: garbage file", ("bench", "compare", bench, str(work / "garbage.json"))),
        m("bench compare: a plan as a result", ("bench", "compare", bench, plan)),
        m("bench ab: no plan and no arms", ("bench", "ab", *served, "--yes")),
        m("bench ab: one arm", ("bench", "ab", "--arm", "base=true", *served, "--yes")),
        m("bench ab: arm without a name", ("bench", "ab", "--arm", "true", "--arm", "x=true", "--base-url", url)),
        m("bench p2p: json in /proc", ("bench", "p2p", "--yes", "--json", "/proc/p2p.json")),
        m("bench p2p: no GPU here", ("bench", "p2p", "--yes"), forbid=("GB/s",)),
        m("bench nccl: bad size", ("bench", "nccl", "--sizes", "1X", "--yes")),
        # the rest
        m("roofline: nothing given", ("roofline",)),
        m("explain: missing profile", ("explain", str(work / "none.json"))),
        m("replay: missing file", ("replay", str(work / "none.jsonl"))),
        m("replay: garbage file", ("replay", str(work / "garbage.json"))),
        m("replay: last with none recorded", ("replay", "last")),
        m("transcripts: unknown action", ("transcripts", "burn")),
        m("diff: one side missing", ("diff", str(SEED), str(work / "none"))),
        m("diff: one argument", ("diff", str(SEED))),
        m("policy: check nothing", ("policy", "check")),
        m("schema: unknown name", ("schema", "nosuch")),
        m(
            "check: this machine" + ("" if _has_nvidia_gpu() else ", which has no NVIDIA GPU"),
            ("check",),
            expect="any",
            forbid=() if _has_nvidia_gpu() else ("healthy: no problem",),
        ),
        m("check: only an unknown check", ("check", "--only", "gpu.nope")),
        m("check: prometheus into /proc", ("check", "--prometheus", "/proc/x.prom")),
        m("checks: unknown area", ("checks", "--areas", "warp")),
        m("chat: no terminal, end of input at once", ("chat",), expect="any"),
        m("chat: no terminal, an unknown slash command", ("chat",), stdin="/frobnicate\n", expect="any"),
        m("unknown command", ("auditt",)),
        m("no command at all", (), expect="any"),
    ]


def _setup(work: Path) -> None:
    """The files the mistakes hand over: an empty folder, a broken JSON, a fake bundle, the demo's plan."""
    plan = str(work / "demo-plan.json")
    (work / "empty").mkdir()
    (work / "garbage.json").write_text('{"schema": "rigaudit.audit/1", "plan": [', encoding="utf-8")
    (work / "bundle.tar.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 60)
    audit = ("audit", "--demo", "seed", "--no-live", "--no-transcript", "--json", plan)
    subprocess.run(
        [sys.executable, "-m", "rigaudit", *audit],
        env=_env(work, work / "home"),
        cwd=work,
        capture_output=True,
        timeout=120,
        check=False,
    )


def _env(work: Path, home: Path) -> dict[str, str]:
    """A private HOME per mistake (its transcripts, journals and keys); the demos' cache is shared."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RIGAUDIT_", "OPENAI_"))}
    home.mkdir(exist_ok=True)
    env.update(
        HOME=str(home),
        XDG_STATE_HOME=str(home / "state"),
        XDG_CACHE_HOME=str(work / "cache"),
        XDG_CONFIG_HOME=str(home / "config"),
        PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
        COLUMNS="100",
    )
    return env


def _run(mistake: Mistake, work: Path, deadline: float) -> Outcome:
    cwd = Path(tempfile.mkdtemp(dir=work, prefix="case-"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "rigaudit", *mistake.argv],
        cwd=cwd,
        env=_env(work, cwd / "home"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if not mistake.interrupt_after_line else subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert proc.stdin is not None
    if mistake.read_lines or mistake.interrupt_after_line:
        proc.stdin.write(mistake.stdin)
        proc.stdin.close()
        return _streamed(mistake, proc, deadline)
    try:
        out, err = proc.communicate(mistake.stdin, timeout=deadline)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return Outcome(mistake, "hang", None, f"still running after {deadline:.0f} s")
    return _judge(mistake, proc.returncode, out, err)


def _streamed(mistake: Mistake, proc: subprocess.Popen[str], deadline: float) -> Outcome:
    """Read stdout line by line: close it early (a pipe to head) or send Ctrl-C after the first lines."""
    assert proc.stdout is not None
    seen: list[str] = []
    timer = threading.Timer(deadline, lambda: os.killpg(proc.pid, signal.SIGKILL))
    timer.start()
    try:
        for line in proc.stdout:
            seen.append(line)
            if mistake.read_lines and len(seen) >= mistake.read_lines:
                proc.stdout.close()
                break
            if mistake.interrupt_after_line and len(seen) == mistake.interrupt_after_line:
                os.killpg(proc.pid, signal.SIGINT)
        rest_err = proc.stderr.read() if proc.stderr is not None else ""
        status = proc.wait()
    finally:
        timer.cancel()
    if status == -signal.SIGKILL:
        return Outcome(mistake, "hang", None, f"still running after {deadline:.0f} s")
    return _judge(mistake, status, "".join(seen), rest_err)


def _judge(mistake: Mistake, status: int, out: str, err: str) -> Outcome:
    text = out + err
    lines = [line for line in err.strip().splitlines() if line.strip()]
    if TRACEBACK in text:
        return Outcome(mistake, "traceback", status, text[text.index(TRACEBACK) :][:300])
    said = [phrase for phrase in mistake.forbid if phrase in text]
    if said:
        return Outcome(mistake, "false", status, f"said {said[0]!r}")
    missing = [phrase for phrase in mistake.require if phrase not in text]
    if missing:
        return Outcome(mistake, "false", status, f"never said {missing[0]!r}: {(lines or [''])[-1][:160]}")
    if status == 0 and mistake.expect in ("sensible", "any"):
        return Outcome(mistake, "sensible", status)
    if status != 0 and len(lines) == 1 and mistake.expect in ("one-line", "any"):
        return Outcome(mistake, "one-line", status, lines[0][:160])
    if status != 0 and mistake.expect == "any":
        return Outcome(mistake, "one-line" if len(lines) <= 1 else "other", status, (lines or [""])[-1][:160])
    return Outcome(mistake, "other", status, f"{len(lines)} stderr lines: {(lines or [''])[-1][:160]}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="mistakes run at once (default 2)")
    parser.add_argument("--deadline", type=float, default=60.0, help="seconds before a mistake counts as a hang")
    parser.add_argument("--show", action="store_true", help="print every mistake's outcome, not only the bad ones")
    parser.add_argument("--json", metavar="FILE", help="write every outcome as JSON")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="rigaudit-mistakes-"))
    try:
        _setup(work)
        catalog = mistakes(work)
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            outcomes = list(pool.map(lambda mk: _run(mk, work, args.deadline), catalog))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    counts = Counter(o.kind for o in outcomes)
    for o in outcomes:
        if args.show or o.kind in ("traceback", "hang", "false", "other"):
            print(f"{o.kind:10} exit {o.status!s:4} {o.mistake.name}: {o.detail}")
    print(
        f"{len(outcomes)} mistakes: {counts['one-line']} one-line errors, {counts['sensible']} sensible readings, "
        f"{counts['other']} other, {counts['traceback']} tracebacks, {counts['hang']} hangs, "
        f"{counts['false']} false statements"
    )
    if args.json:
        rows = [
            {"name": o.mistake.name, "argv": o.mistake.argv, "kind": o.kind, "status": o.status, "detail": o.detail}
            for o in outcomes
        ]
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 1 if counts["traceback"] or counts["hang"] or counts["false"] else 0


if __name__ == "__main__":
    sys.exit(main())
