"""What records cost where many are made: a record against a NamedTuple and a frozen dataclass, and two hot paths.

    python benchmarks/record_speed.py                       this tree only
    python benchmarks/record_speed.py --before /tmp/old     the tree at /tmp/old against this one, interleaved

Prints, for this interpreter: the time to make a 3-field record (positional, keyword), to compare two and to
hash one, against the same class as a ``typing.NamedTuple`` and a frozen dataclass; then the CPU time of two
paths that make records by the tens of thousands: the command policy judging every line of
tests/policy_corpus.txt on the model host, and the judge step of the seed snapshot's audit (facts collected
once). ``--before`` names a repository root (the folder holding ``rigaudit/``): each workload then runs in a
new process per tree, alternating (A B A B ...), and the after/before ratio of the medians is printed. With
$OUT set, the figures also go to $OUT/record_speed.json. Nothing is changed on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import timeit
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent

_WORKLOAD = """
import anyio, ast, json, re, sys, time
from pathlib import Path
root = Path(sys.argv[1])
sys.path.insert(0, str(root))
which = sys.argv[2]
if which == "policy":
    from rigaudit.tools.policy import vet_command_line
    from tests.support.policy_host import MODEL_HOST
    lines = []
    for raw in (root / "tests" / "policy_corpus.txt").read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        command = raw.partition(" ")[2].strip(" ")
        if command.startswith("py:"):
            command = re.sub(r"\\{\\{(.)\\*(\\d+)\\}\\}", lambda m: m.group(1) * int(m.group(2)), ast.literal_eval(command[3:]))
        lines.append(command)
    for line in lines:
        vet_command_line(line, MODEL_HOST)
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        for line in lines:
            vet_command_line(line, MODEL_HOST)
        best = min(best, time.process_time() - start)
    print(json.dumps({"seconds": best, "per": len(lines)}))
else:
    from rigaudit.agents.registry import all_investigators
    from rigaudit.tools.hosts.snapshot import SnapshotHost
    from rigaudit.tools.hosts.probe import Probe
    probe = Probe(SnapshotHost(root / "tests" / "fixtures" / "seed-lxc-8x-rtxpro6000"))
    investigators = all_investigators()
    async def collect_all():
        return [await inv.collect(probe) for inv in investigators]
    facts = anyio.run(collect_all)
    best = float("inf")
    for _ in range(20):
        start = time.process_time()
        for inv, fact in zip(investigators, facts):
            inv.findings(fact)
        best = min(best, time.process_time() - start)
    print(json.dumps({"seconds": best, "per": 1}))
"""


def micro() -> dict[str, dict[str, float]]:
    """Nanoseconds to make (positionally, by keyword), compare and hash a 3-field instance, best of 5."""
    import dataclasses
    from typing import NamedTuple

    sys.path.insert(0, str(REPOSITORY))
    from rigaudit.tools.core.record import Record

    class AsRecord(Record):
        kind: str
        text: str
        offset: int

    class AsTuple(NamedTuple):
        kind: str
        text: str
        offset: int

    @dataclasses.dataclass(frozen=True)
    class AsDataclass:
        kind: str
        text: str
        offset: int

    def best(call: object, number: int = 100_000) -> float:
        return min(timeit.repeat(call, number=number, repeat=5)) / number * 1e9  # type: ignore[arg-type]

    out: dict[str, dict[str, float]] = {}
    for name, cls in (("record", AsRecord), ("namedtuple", AsTuple), ("frozen dataclass", AsDataclass)):
        a, b = cls("operator", "|", 3), cls("operator", "|", 3)
        out[name] = {
            "positional_ns": best(lambda cls=cls: cls("operator", "|", 3)),
            "keyword_ns": best(lambda cls=cls: cls(kind="operator", text="|", offset=3)),
            "eq_ns": best(lambda a=a, b=b: a == b),
            "ne_other_type_ns": best(lambda a=a: a == "absent"),
            "hash_ns": best(lambda a=a: hash(a)),
        }
    return out


def workload(tree: Path, which: str) -> float:
    """CPU seconds of ``which`` (``policy``: per command; ``judge``: one judge step) in a new process in ``tree``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", _WORKLOAD, str(tree), which], capture_output=True, text=True, env=env, cwd=tree, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{tree}: the {which} workload failed: {done.stderr.strip().splitlines()[-1:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return float(figures["seconds"]) / int(figures["per"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, help="a repository root to compare against (the tree before a change)")
    parser.add_argument("--repeats", type=int, default=5, help="processes per tree and workload (default 5)")
    args = parser.parse_args()
    trees = {"after": REPOSITORY} | ({"before": args.before.resolve()} if args.before else {})
    for name, tree in trees.items():
        if not (tree / "rigaudit" / "__init__.py").is_file():
            parser.error(f"--{name}: {tree} holds no rigaudit/ package")
    report: dict[str, object] = {"python": sys.version.split()[0], "micro": micro()}
    print(f"Python {report['python']}: a 3-field class, ns per operation (best of 5)")
    for kind, figures in report["micro"].items():  # type: ignore[attr-defined]
        print(f"  {kind:<17} " + "  ".join(f"{k[:-3]} {v:6.0f}" for k, v in figures.items()))
    runs: dict[str, dict[str, list[float]]] = {w: {t: [] for t in trees} for w in ("policy", "judge")}
    for _ in range(max(args.repeats, 1)):
        for which, by_tree in runs.items():
            for name, tree in trees.items():
                by_tree[name].append(workload(tree, which))
    units = {"policy": ("us per command of tests/policy_corpus.txt, model host", 1e6), "judge": ("ms per judge step", 1e3)}
    medians: dict[str, dict[str, float]] = {}
    for which, by_tree in runs.items():
        label, scale = units[which]
        medians[which] = {name: statistics.median(values) for name, values in by_tree.items()}
        shown = ", ".join(
            f"{name} {median * scale:.1f} (best {min(by_tree[name]) * scale:.1f})" for name, median in medians[which].items()
        )
        ratio = f"; after/before {medians[which]['after'] / medians[which]['before']:.3f}" if "before" in medians[which] else ""
        print(f"{which}: {label}: {shown}{ratio}")
    report["workloads"] = {"medians_s": medians, "runs_s": runs, "trees": {k: str(v) for k, v in trees.items()}}
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "record_speed.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
