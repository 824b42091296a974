"""benchmarks/bench_stats_h200.py, the script the lead runs on the H200, checked here on CPU with the fake server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.bench_ab import make_snapshot, tree_digest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_stats_h200.py"


@pytest.mark.slow
def test_the_h200_script_runs_every_part_and_summarizes(tmp_path: Path) -> None:
    snapshot = make_snapshot(tmp_path / "snap")
    pristine = tree_digest(snapshot)
    out = tmp_path / "out"
    argv = [sys.executable, str(SCRIPT), "--out", str(out), "--server", "fake", "--ab-snapshot", str(snapshot)]
    proc = subprocess.run([*argv, "--quick", "--comparisons", "1"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    aa = summary["a_identical"]
    assert aa["comparisons"] == 1 and len(aa["pairs"][0]["headline"]) == 2  # levels 1 and 2
    assert aa["false"] == sum(1 for p in aa["pairs"] if p["calls"])
    # (b): like with like although the server was restarted (same URL), both directions judged
    assert [h["concurrency"] for h in summary["b_add_clb"]] == [1, 2] == [h["concurrency"] for h in summary["b_remove_clb"]]
    ab = summary["c_ab"]
    assert ab["exit"] == 0 and ab["restored"] and ab["complete"] and ab["swappiness_before"] == "60"
    assert [h["concurrency"] for h in ab["headline"]] == [1, 2]
    for name in ("normal-before", "aa-01", "aa-02", "clb", "normal-after", "ab", "aa-compare-01", "compare-remove-clb"):
        assert json.loads((out / f"{name}.json").read_text())["schema"].startswith("rigaudit.")
    assert "CUDA_LAUNCH_BLOCKING" in (out / "summary.md").read_text()
    assert tree_digest(snapshot) == pristine  # only its copy was switched
    assert not (out / "state").exists()
