"""benchmarks/bench_stats_h200.py, the script the lead runs on the H200, checked here on CPU with the fake server."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.bench_ab import make_snapshot, tree_digest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_stats_h200.py"


@pytest.mark.slow
def test_the_h200_script_calibrates_runs_every_part_and_packs_three_files(tmp_path: Path) -> None:
    snapshot = make_snapshot(tmp_path / "snap")
    pristine = tree_digest(snapshot)
    out = tmp_path / "out"
    argv = [sys.executable, str(SCRIPT), "--out", str(out), "--server", "fake", "--ab-snapshot", str(snapshot)]
    proc = subprocess.run([*argv, "--quick", "--comparisons", "1"], capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    # the device returns few files: one archive and the two summaries, nothing else
    assert sorted(p.name for p in out.iterdir()) == ["bench-stats-h200.tar.gz", "summary.json", "summary.md"]
    summary = json.loads((out / "summary.json").read_text())
    assert "error" not in summary
    calibration = summary["calibration"]
    assert "from 3 sessions" in calibration["describe"] and set(calibration["session_cv"]) == {"1", "2"}
    aa = summary["a_identical"]
    assert aa["comparisons"] == 1 and len(aa["pairs"][0]["headline"]) == 2  # levels 1 and 2
    assert aa["modes"] == "calibrated"  # each A/A compare picked up the stored calibration
    assert aa["false"] == sum(1 for p in aa["pairs"] if p["calls"])
    replay = summary["replay"]
    assert replay["sessions"] == 5 and replay["calibrated"]["comparisons"] == 10  # 3 calibration + 2 A/A sessions
    # (b): like with like although the server was restarted (same URL), both directions judged
    assert [h["concurrency"] for h in summary["b_add_clb"]] == [1, 2] == [h["concurrency"] for h in summary["b_remove_clb"]]
    ab = summary["c_ab"]
    assert ab["exit"] == 0 and ab["restored"] and ab["complete"] and ab["swappiness_before"] == "60"
    assert [h["concurrency"] for h in ab["headline"]] == [2]
    with tarfile.open(out / "bench-stats-h200.tar.gz") as archive:
        names = {Path(n).name for n in archive.getnames()}
    for name in ("aa-01.json", "aa-02.json", "calibration.json", "session-01.json", "clb-1.json", "normal-2-1.json"):
        assert name in names
    assert {"ab.json", "aa-compare-01.json", "compare-remove-clb.json", "log.txt", "summary.md"} <= names
    text = (out / "summary.md").read_text()
    assert text.startswith("## On real hardware: 1x H200") and "### Calibration" in text and "CUDA_LAUNCH_BLOCKING" in text
    assert tree_digest(snapshot) == pristine  # only its copy was switched


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_stats_h200", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("left", "expected"),
    [
        (400.0, (20, 2)),  # room for everything
        (270.0, (20, 1)),  # (b) gives up its second session a side before (a) gives up a pair
        (230.0, (17, 1)),  # then (a) takes what is left
        (10.0, (2, 1)),  # never fewer than one pair
    ],
)
def test_the_budget_keeps_ten_identical_comparisons_first(left: float, expected: tuple[int, int]) -> None:
    # one session 10 s, a restart 12 s (the first H200 run), 10 comparisons wanted, (b) 2 sessions a side
    assert _script().plan(left, 10.0, 12.0, 10, 2) == expected
