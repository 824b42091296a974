"""The gate's start (interpreter + what ``rigaudit check`` imports) of two source trees, on one machine, interleaved.

Two machines of one kind can differ by a quarter in everything (docs/performance.md, "Gate start"), so a
change's effect on the start is measured here on the same machine in the same minutes: runs alternate between
the trees (A B A B ...), each in a new process started in its tree, with its bytecode compiled first.

Run:
  python benchmarks/gate_start_ab.py --before /tmp/old                 the tree at /tmp/old against this one
  python benchmarks/gate_start_ab.py --before /tmp/old --repeats 41 --deps DIR

``--before``/``--after`` name repository roots (the folder holding ``rigaudit/``); ``--deps`` a folder with
pydantic and anyio (an unpacked wheelhouse, its bytecode compiled first where it may be written) put after
the tree on ``PYTHONPATH``. Prints best and median wall
seconds and CPU seconds of each, and after/before ratios. With $OUT set, the figures also go to
$OUT/gate_start_ab.json.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from gate_speed import children_cpu  # the sibling script: one way to count a child's CPU

REPOSITORY = Path(__file__).resolve().parent.parent
PROGRAM = """
import contextlib
from rigaudit.orchestrator import gate
paused = getattr(gate, "without_cyclic_collector", contextlib.nullcontext)
with gate.without_pydantic_plugins(), paused():
    import rigaudit.orchestrator.cli, rigaudit.orchestrator.commands.check, rigaudit.orchestrator.gate.run
    import rigaudit.orchestrator.gate.render, rigaudit.tools.hosts.local
    from rigaudit.agents.registry import all_investigators
    all_investigators()
"""
"""What a live ``rigaudit check`` imports before it runs (``gate_speed.py``'s program; a tree without the
collector's pause runs without it)."""


_NOT_CODE = re.compile(r"/(\.venv|\.git|\.whl|tests|benchmarks)/")


def _env(tree: Path, deps: Path | None) -> dict[str, str]:
    path = [str(tree), *([str(deps)] if deps else []), os.environ.get("PYTHONPATH", "")]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in path if p))


def _summary(walls: list[float], cpus: list[float]) -> dict[str, float]:
    return {
        "best_s": round(min(walls), 4),
        "median_s": round(statistics.median(walls), 4),
        "cpu_best_s": round(min(cpus), 4),
        "cpu_median_s": round(statistics.median(cpus), 4),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True, help="the repository root to compare against")
    parser.add_argument("--after", type=Path, default=REPOSITORY, help="the changed tree (default: this repository)")
    parser.add_argument("--deps", type=Path, help="a folder of rigaudit's dependencies, after the tree on PYTHONPATH")
    parser.add_argument("--repeats", type=int, default=21, help="runs of each tree (default 21)")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    for label, tree in trees.items():
        if not (tree / "rigaudit" / "__init__.py").is_file():
            parser.error(f"--{label} {tree}: no rigaudit/ there")
        compileall.compile_dir(tree, quiet=2, rx=_NOT_CODE)
    if args.deps is not None and os.access(args.deps, os.W_OK):  # an unpacked wheel has no bytecode
        compileall.compile_dir(args.deps, quiet=2)
    envs = {label: _env(tree, args.deps) for label, tree in trees.items()}
    for label, env in envs.items():  # each imports its own tree, and works
        done = subprocess.run(
            [sys.executable, "-c", PROGRAM + "\nimport rigaudit; print(rigaudit.__file__)"],
            check=False,
            capture_output=True,
            text=True,
            env=env,
            cwd=trees[label],
            timeout=120,
        )
        if done.returncode != 0 or not done.stdout.strip().startswith(str(trees[label])):
            print(f"{label}: the program failed or imported another tree: {(done.stdout + done.stderr).strip()[-400:]}")
            return 1
    walls: dict[str, list[float]] = {label: [] for label in trees}
    cpus: dict[str, list[float]] = {label: [] for label in trees}
    for _ in range(args.repeats):
        for label, tree in trees.items():
            cpu, start = children_cpu(), time.perf_counter()
            subprocess.run([sys.executable, "-c", PROGRAM], check=True, env=envs[label], cwd=tree, timeout=120)
            walls[label].append(time.perf_counter() - start)
            cpus[label].append(children_cpu() - cpu)
    figures: dict[str, object] = {
        "python": sys.version.split()[0],
        "repeats": args.repeats,
        "load_average": os.getloadavg()[0],
        **{label: _summary(walls[label], cpus[label]) for label in trees},
    }
    before, after = figures["before"], figures["after"]
    assert isinstance(before, dict) and isinstance(after, dict)
    figures["after_over_before"] = {key: round(after[key] / before[key], 3) for key in before}
    for key in ("before", "after", "after_over_before"):
        print(f"{key:<18} {figures[key]}")
    out = os.environ.get("OUT")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "gate_start_ab.json").write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
