"""How often `bench ab --arm` (arms that restart the server) is right, on a simulated server whose truth is known.

Each comparison runs the real session (rigaudit.orchestrator.bench.restart.run_restart_ab: real shell commands
for the restarts, the journal, the readiness wait, the load generator, the verdicts of bench ab) against the
in-process server of rigaudit.tools.testing.restart_fake, on a scripted clock. The noise model is this
script's (seeded): every restart starts a server session at its own speed factor exp(N(0, session_cv)) (what
a restart changes besides the arm), every request at exp(N(0, request_cv)); the changed arm streams each
token ``gain`` times faster (output tok/s x gain). Scenarios: identical arms (gain 1: any "improved" or
"regressed", any metric, is a false change) and a 30% gain and a 30% loss (found: the headline's verdict at
the level is the right direction; a wrong-direction call is counted apart).

  python benchmarks/restart_ab_validation.py [--comparisons 200] [--cycles 6] [--json FILE]
Targets (issue 37): false change <= 5%; a 30% change found >= 80% of the time; never the wrong direction.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rigaudit.orchestrator.bench.restart import RestartOptions, run_restart_ab  # noqa: E402
from rigaudit.orchestrator.change.approval import StepApprover  # noqa: E402
from rigaudit.tools.bench.ab import analyze  # noqa: E402
from rigaudit.tools.bench.compare import Settings  # noqa: E402
from rigaudit.tools.bench.loadgen import LoadSpec  # noqa: E402
from rigaudit.tools.bench.restart import ArmCommand  # noqa: E402
from rigaudit.tools.testing.restart_fake import RestartedServer  # noqa: E402

SPEC = LoadSpec(base_url="http://127.0.0.1:9", model="m", concurrency=(1,), requests=6, max_tokens=16, warmup=1)
PACE = 0.004


def one(folder: Path, seed: int, gain: float, cycles: int, session_cv: float, request_cv: float) -> dict[str, object]:
    state = folder / f"state-{seed}"
    state.write_text("base\n")
    server = RestartedServer(state, {"base": PACE, "fix": PACE / gain}, session_cv, request_cv, seed)
    arms = [ArmCommand(n, f"echo {n} >> {state}") for n in ("base", "fix")]
    journal = folder / f"journal-{seed}.jsonl"
    outcome = run_restart_ab(
        arms, SPEC, StepApprover("", assume_yes=True), journal, RestartOptions(cycles=cycles), Settings(), load=server.load()
    )
    level = analyze(outcome.result).arms[0].levels[0]
    return {
        "headline": level.verdict,
        "any": sorted({m.verdict for m in level.metrics}),
        "left": server.lines()[-1],
        "complete": outcome.result.complete,
    }


def scenario(name: str, gain: float, n: int, cycles: int, session_cv: float, request_cv: float) -> dict[str, object]:
    start = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory(prefix="restart-ab-") as tmp:
        rows = [one(Path(tmp), seed, gain, cycles, session_cv, request_cv) for seed in range(n)]
    right = "improved" if gain > 1 else "regressed"
    wrong = "regressed" if gain > 1 else "improved"
    changed = sum(1 for r in rows if {"improved", "regressed"} & set(r["any"]))  # type: ignore[arg-type]
    return {
        "scenario": name,
        "gain": gain,
        "comparisons": n,
        "cycles": cycles,
        "session_cv": session_cv,
        "request_cv": request_cv,
        "false change rate" if math.isclose(gain, 1.0) else "found": (
            changed / n if math.isclose(gain, 1.0) else sum(1 for r in rows if r["headline"] == right) / n
        ),
        "wrong direction": 0 if math.isclose(gain, 1.0) else sum(1 for r in rows if r["headline"] == wrong),
        "left as found": sum(1 for r in rows if r["left"] == "base") / n,
        "complete": sum(1 for r in rows if r["complete"]) / n,
        "seconds": round(time.perf_counter() - start, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--comparisons", type=int, default=200)
    parser.add_argument("--cycles", type=int, default=6)
    parser.add_argument("--session-cv", type=float, default=0.08, help="between restarted sessions (default 0.08)")
    parser.add_argument("--request-cv", type=float, default=0.05)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = [
        scenario(name, gain, args.comparisons, args.cycles, args.session_cv, args.request_cv)
        for name, gain in (("identical arms", 1.0), ("30% faster", 1.3), ("30% slower", 1 / 1.3))
    ]
    for row in rows:
        print(json.dumps(row))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    false_rate = float(rows[0]["false change rate"])  # type: ignore[arg-type]
    found = min(float(r["found"]) for r in rows[1:])  # type: ignore[arg-type]
    ok = false_rate <= 0.05 and found >= 0.80 and not any(r["wrong direction"] for r in rows[1:])
    print(f"false change {false_rate:.1%} (goal <= 5%), a 30% change found {found:.1%} (goal >= 80%): {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
