"""How long the command policy takes to judge a command, on the model host and on this machine's file system.

    python benchmarks/policy_speed.py [--repeat 5]

Judges every line of tests/policy_corpus.txt (1,600+ commands) on the lexical view, on the model host
of the tests, and on this machine (lstat/readlink of every path a command names), and prints the
mean and worst time per command, best of ``--repeat`` passes. Nothing is run.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rigaudit.tools.policy import LEXICAL, LIVE, FileSystem, vet_command_line  # noqa: E402
from tests.support.policy_host import MODEL_HOST  # noqa: E402

_REPEAT = re.compile(r"\{\{(.)\*(\d+)\}\}")


def corpus() -> list[str]:
    lines = []
    for raw in (ROOT / "tests" / "policy_corpus.txt").read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        command = raw.partition(" ")[2].strip(" ")
        if command.startswith("py:"):
            command = _REPEAT.sub(lambda m: m.group(1) * int(m.group(2)), ast.literal_eval(command[3:]))
        lines.append(command)
    return lines


def measure(lines: list[str], fs: FileSystem, repeat: int) -> tuple[float, float]:
    best_total, best_worst = float("inf"), float("inf")
    for _ in range(repeat):
        worst = 0.0
        started = time.perf_counter()
        for line in lines:
            one = time.perf_counter()
            vet_command_line(line, fs)
            worst = max(worst, time.perf_counter() - one)
        best_total = min(best_total, time.perf_counter() - started)
        best_worst = min(best_worst, worst)
    return best_total / len(lines), best_worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="passes over the corpus; the best is kept (default 5)")
    args = parser.parse_args()
    lines = corpus()
    print(f"{len(lines)} commands from tests/policy_corpus.txt, best of {args.repeat} passes")
    for name, fs in (("lexical view", LEXICAL), ("model host", MODEL_HOST), ("this machine", LIVE)):
        mean, worst = measure(lines, fs, max(args.repeat, 1))
        print(f"  {name:<13} mean {mean * 1e6:7.1f} us per command, worst {worst * 1e3:6.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
