"""How often `bench compare` and `bench ab` are right, on synthetic result pairs whose truth is known, and on real A/A sessions.

Synthetic (fixed seeds; the model of rigaudit.tools.testing.bench_pairs): three levels; each run's speed has
its own factor exp(N(0, drift)) (drift 0.10: about 10% between repeats); optionally the session trends;
optionally each session has its own factor exp(N(0, session_cv)) shared by its runs (what repeats inside
a session cannot see; the 1x H200 measured about 6%); a changed configuration runs `gain` times faster.
Each scenario is judged as a user could: `--session-cv 0` (repeats the only noise), not calibrated (the
default), calibrated from K A/A sessions drawn from the same model, or several sessions a side.

Real: the eight A/A sessions of the 1x H200 run (docs/validation/h200-run1) replayed: every pair (28), and
every split into 2 against 2 and 4 against 4, calibrated from the sessions not compared, or not.

It prints, per scenario: how often identical configurations were called a change (any metric, any level),
how often a gain was found (per level, and at every level), how often anything was called a regression,
and how often the headline was "not enough repeats".

  python benchmarks/compare_validation.py [--comparisons 2000] [--json FILE] [--real DIR] [--only TEXT]
Targets (issue 21): identical configurations called a change in at most 5% of comparisons; a 30% gain
found in at least 80% of comparisons with five repeats (no session component), never called a regression.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rigaudit.tools.bench.results import load_result  # noqa: E402
from rigaudit.tools.testing.bench_pairs import Judging, Rates, Session, ab_rates, compare_rates  # noqa: E402
from rigaudit.tools.testing.bench_replay import replay  # noqa: E402

H200 = Session(drift=0.065, session_cv=0.06)
ZERO, DEFAULT = Judging("given", 0.0), Judging("default")
CAL6, CAL10 = Judging("calibrated", calibration_sessions=6), Judging("calibrated", calibration_sessions=10)

S3, S3CAL = Judging("default", sessions=3), Judging("calibrated", sessions=3)


Scenario = tuple[str, str, dict[str, object]]


def _c(name: str, gain: float, session: Session, judging: Judging | None = None, repeats: int = 5) -> Scenario:
    kwargs: dict[str, object] = {"repeats": repeats, "gain": gain, "session": session}
    if judging is not None:
        kwargs["judging"] = judging
    return ("compare", name, kwargs)


def _ab(name: str, gain: float, session: Session, cycles: int) -> Scenario:
    return ("ab", name, {"cycles": cycles, "gain": gain, "session": session})


SCENARIOS: list[Scenario] = [
    _c("identical, 3 repeats, drift 10%", 1.0, Session(), repeats=3),
    _c("identical, 5 repeats, drift 10%", 1.0, Session()),
    _c("identical, 5 repeats, drift 5% + 10% trend", 1.0, Session(0.05, 0.10)),
    _c("identical, 10 repeats, drift 10%", 1.0, Session(), repeats=10),
    _c("+30%, 3 repeats, drift 10%", 1.3, Session(), repeats=3),
    _c("+30%, 5 repeats, drift 10%", 1.3, Session()),
    _c("+30%, 5 repeats, drift SD 5.8% (uniform ±10%)", 1.3, Session(0.058)),
    _c("-30%, 5 repeats, drift 10%", 1 / 1.3, Session()),
    _c("+10%, 5 repeats, drift 10%", 1.1, Session()),
    # the same world (no session component) judged without knowing it: the cost of not knowing
    _c("identical, 5 repeats, drift 10%; calibrated (6)", 1.0, Session(), CAL6),
    _c("+30%, 5 repeats, drift 10%; calibrated (6)", 1.3, Session(), CAL6),
    _c("+30%, 5 repeats, drift 10%; calibrated (10)", 1.3, Session(), CAL10),
    _c("+30%, 5 repeats, drift 10%; not calibrated", 1.3, Session(), DEFAULT),
    # a session component as the H200 measured: 6% between sessions, 6.5% between repeats
    _c("H200-like identical; --session-cv 0", 1.0, H200, ZERO),
    _c("H200-like identical; not calibrated", 1.0, H200, DEFAULT),
    _c("H200-like identical; calibrated (6)", 1.0, H200, CAL6),
    _c("H200-like identical; calibrated (10)", 1.0, H200, CAL10),
    _c("H200-like identical; 3 vs 3 sessions", 1.0, H200, S3),
    _c("H200-like identical; 3 vs 3, calibrated (6)", 1.0, H200, S3CAL),
    _c("H200-like +30%; --session-cv 0", 1.3, H200, ZERO),
    _c("H200-like +30%; not calibrated", 1.3, H200, DEFAULT),
    _c("H200-like +30%; calibrated (6)", 1.3, H200, CAL6),
    _c("H200-like +30%; calibrated (10)", 1.3, H200, CAL10),
    _c("H200-like +30%; 3 vs 3 sessions", 1.3, H200, S3),
    _c("H200-like +30%; 3 vs 3, calibrated (6)", 1.3, H200, S3CAL),
    _c("H200-like -30%; calibrated (6)", 1 / 1.3, H200, CAL6),
    _ab("identical, 6 cycles, drift 10% + 20% trend", 1.0, Session(0.10, 0.20), 6),
    _ab("+30%, 6 cycles, drift 10% + 20% trend", 1.3, Session(0.10, 0.20), 6),
    _ab("+30%, 8 cycles, drift 10% + 20% trend", 1.3, Session(0.10, 0.20), 8),
    _ab("+10%, 6 cycles, drift 3% + 20% trend", 1.1, Session(0.03, 0.20), 6),
]


def row(kind: str, name: str, rates: Rates, seconds: float) -> dict[str, object]:
    return {
        "tool": kind,
        "scenario": name,
        "comparisons": rates.comparisons,
        "called_a_change": rates.false_change_rate,
        "found_per_level": rates.found_rate,
        "found_at_every_level": rates.all_levels_rate,
        "any_regression": rates.regressed / rates.comparisons,
        "not_enough_repeats_per_level": rates.not_enough / (rates.comparisons * rates.levels),
        "seconds": round(seconds, 2),
    }


def synthetic(comparisons: int, only: str | None = None) -> list[dict[str, object]]:
    rows = []
    print(f"{'tool':8} {'scenario':52} {'change':>7} {'found/lv':>8} {'all lv':>7} {'regr':>6} {'n.e.r.':>7}")
    for index, (kind, name, kwargs) in enumerate(SCENARIOS):
        if only is not None and only not in name:
            continue
        start = time.perf_counter()
        # calibrated scenarios draw K more sessions per comparison: fewer comparisons keep the run short
        judging = kwargs.get("judging")
        count = comparisons // 2 if isinstance(judging, Judging) and judging.mode == "calibrated" else comparisons
        fn = compare_rates if kind == "compare" else ab_rates
        rates = fn(count, seed=1000 + index, **kwargs)  # type: ignore[operator]
        item = row(kind, name, rates, time.perf_counter() - start)
        rows.append(item)
        print(
            f"{kind:8} {name:52} {item['called_a_change']:7.1%} {item['found_per_level']:8.1%} "
            f"{item['found_at_every_level']:7.1%} {item['any_regression']:6.1%} {item['not_enough_repeats_per_level']:7.1%}",
            flush=True,
        )
    print("change: comparisons with any 'improved' or 'regressed' verdict (any metric, any level);")
    print("found/lv: (comparison, level) pairs whose output tok/s was called 'improved'; all lv: at every level;")
    print("regr: comparisons with any 'regressed' verdict; n.e.r.: levels whose verdict was 'not enough repeats'")
    return rows


def real(folder: Path) -> list[dict[str, object]]:
    sessions = [load_result(p) for p in sorted(folder.glob("aa-*.json"))]
    print(f"\nreal A/A sessions: {len(sessions)} from {folder}")
    print(f"{'sessions a side':>15} {'judged':12} {'comparisons':>11} {'false':>6} {'rate':>6}  headline verdicts")
    rows = []
    for k in (1, 2, 4):
        for mode in ("zero", "default", "calibrated"):
            if mode == "calibrated" and len(sessions) - 2 * k < 2:
                continue
            done = replay(sessions, mode, sessions_a_side=k)  # type: ignore[arg-type]
            rows.append(
                {
                    "sessions_a_side": k,
                    "mode": mode,
                    "comparisons": done.comparisons,
                    "false": done.false,
                    "rate": done.rate,
                    "headline_verdicts": done.headline_verdicts,
                    "calls": done.calls,
                }
            )
            verdicts = ", ".join(f"{v}: {n}" for v, n in sorted(done.headline_verdicts.items()))
            print(f"{k:>15} {mode:12} {done.comparisons:>11} {done.false:>6} {done.rate:6.1%}  {verdicts}", flush=True)
    print("zero: --session-cv 0 (repeats the only noise); default: not calibrated; calibrated: from the sessions not compared")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--comparisons", type=int, default=2000)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--real", type=Path, default=ROOT / "docs" / "validation" / "h200-run1")
    parser.add_argument("--no-synthetic", action="store_true")
    parser.add_argument("--only", metavar="TEXT", help="only the scenarios whose name contains TEXT (same seeds)")
    args = parser.parse_args()
    rows = [] if args.no_synthetic else synthetic(args.comparisons, args.only)
    replayed = real(args.real) if args.real.is_dir() else []
    if args.json:
        args.json.write_text(json.dumps({"synthetic": rows, "real": replayed}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
