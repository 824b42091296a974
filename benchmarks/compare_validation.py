"""How often `bench compare` and `bench ab` are right, on synthetic result pairs whose truth is known.

Each scenario simulates many comparisons (fixed seeds) with the model of
rigaudit.tools.testing.bench_pairs: three levels; each run's speed has its own factor exp(N(0, drift))
(drift 0.10: about 10% between repeats); optionally the session trends; a changed configuration
runs `gain` times faster. It prints, per scenario: how often identical configurations were called a
change (any metric, any level), how often a gain was found (per level, and at every level), how
often anything was called a regression, and how often the verdict was "not enough repeats".

  python benchmarks/compare_validation.py [--comparisons 2000] [--json FILE]
Targets (issue 21): identical configurations called a change in at most 5% of comparisons; a 30%
gain found in at least 80% of comparisons with five repeats, never called a regression.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rigaudit.tools.testing.bench_pairs import Rates, Session, ab_rates, compare_rates  # noqa: E402

SCENARIOS: list[tuple[str, str, dict[str, object]]] = [
    ("compare", "identical, 3 repeats, drift 10%", {"repeats": 3, "gain": 1.0, "session": Session()}),
    ("compare", "identical, 5 repeats, drift 10%", {"repeats": 5, "gain": 1.0, "session": Session()}),
    ("compare", "identical, 5 repeats, drift 5% + 10% trend", {"repeats": 5, "gain": 1.0, "session": Session(0.05, 0.10)}),
    ("compare", "identical, 10 repeats, drift 10%", {"repeats": 10, "gain": 1.0, "session": Session()}),
    ("compare", "+30%, 3 repeats, drift 10%", {"repeats": 3, "gain": 1.3, "session": Session()}),
    ("compare", "+30%, 5 repeats, drift 10%", {"repeats": 5, "gain": 1.3, "session": Session()}),
    ("compare", "+30%, 5 repeats, drift ±10% uniform-like (SD 5.8%)", {"repeats": 5, "gain": 1.3, "session": Session(0.058)}),
    ("compare", "-30%, 5 repeats, drift 10%", {"repeats": 5, "gain": 1 / 1.3, "session": Session()}),
    ("compare", "+10%, 5 repeats, drift 10%", {"repeats": 5, "gain": 1.1, "session": Session()}),
    ("ab", "identical, 6 cycles, drift 10% + 20% trend", {"cycles": 6, "gain": 1.0, "session": Session(0.10, 0.20)}),
    ("ab", "+30%, 6 cycles, drift 10% + 20% trend", {"cycles": 6, "gain": 1.3, "session": Session(0.10, 0.20)}),
    ("ab", "+30%, 8 cycles, drift 10% + 20% trend", {"cycles": 8, "gain": 1.3, "session": Session(0.10, 0.20)}),
    ("ab", "+10%, 6 cycles, drift 3% + 20% trend", {"cycles": 6, "gain": 1.1, "session": Session(0.03, 0.20)}),
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--comparisons", type=int, default=2000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    header = f"{'tool':8} {'scenario':50} {'change':>7} {'found/lv':>8} {'all lv':>7} {'regr':>6} {'n.e.r.':>7}"
    print(header)
    for index, (kind, name, kwargs) in enumerate(SCENARIOS):
        start = time.perf_counter()
        fn = compare_rates if kind == "compare" else ab_rates
        rates = fn(args.comparisons, seed=1000 + index, **kwargs)  # type: ignore[operator]
        item = row(kind, name, rates, time.perf_counter() - start)
        rows.append(item)
        print(
            f"{kind:8} {name:50} {item['called_a_change']:7.1%} {item['found_per_level']:8.1%} "
            f"{item['found_at_every_level']:7.1%} {item['any_regression']:6.1%} {item['not_enough_repeats_per_level']:7.1%}"
        )
    print("change: comparisons with any 'improved' or 'regressed' verdict (any metric, any level);")
    print("found/lv: (comparison, level) pairs whose output tok/s was called 'improved'; all lv: at every level;")
    print("regr: comparisons with any 'regressed' verdict; n.e.r.: levels whose verdict was 'not enough repeats'")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
