"""benchmarks/explain_h200.py, the script the lead runs on the H200, checked here on CPU with the fake server (no NVML)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "explain_h200.py"


@pytest.mark.slow
def test_the_h200_script_profiles_three_servers_and_summarizes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(out), "--server", "fake", "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["exits"] == {"base": 0, "clb": 0, "big": 0}
    for name in ("base", "clb", "big"):
        run = summary["runs"][name]
        assert run["ms_per_token"] > 0 and set(run["shares"]) == {"streaming", "communication", "idle", "remainder"}
        profile = json.loads((out / f"profile-{name}.json").read_text())
        assert profile["schema"] == "rigaudit.bench/1" and profile["profile"]["schema"] == "rigaudit.profile/1"
    checks = summary["checks"]
    assert checks["streaming share up when memory-bound (big > base)"] == "yes"  # the fake pretends a 40x larger model
    assert checks["idle share up with CUDA_LAUNCH_BLOCKING=1 (clb > base)"] == "unknown"  # no NVML here: said, not guessed
    report = (out / "system-improve.md").read_text()
    assert report.count("### fake-model at") == 3 and "## Where the time goes" in report
    assert all(f"| {name} |" in (out / "summary.md").read_text() for name in ("base", "clb", "big"))
    assert not (out / "state").exists()
