"""bench compare and the session transcript, on the results recorded on the 2x H200 machine (before issue 21)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rigaudit.tools.schema.events.bench import BenchResultReported
from rigaudit.transcripts.reader import read_transcript

RECORDED = Path(__file__).resolve().parent.parent / "docs" / "validation" / "h200x2"


def test_compare_of_the_recorded_runs_finds_noise_and_says_so(tmp_path: Path) -> None:
    transcript, out = tmp_path / "bench.jsonl", tmp_path / "compare.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rigaudit",
            "bench",
            "compare",
            str(RECORDED / "inference_base.json"),
            str(RECORDED / "inference_after.json"),
            "--json",
            str(out),
            "--transcript",
            str(transcript),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    # three repeats of a tiny model whose speed swings 30% between repeats cannot support a verdict either way
    assert [level["verdict"] for level in result["levels"]] == ["not enough repeats"] * 3
    # not calibrated: the default between-session spread; more repeats, or more sessions, would be needed
    assert result["between"]["mode"] == "default"
    assert all((m := level["metrics"][0])["repeats_needed"] or m["sessions_needed"] for level in result["levels"])
    assert not any(m["verdict"] in ("improved", "regressed") for level in result["levels"] for m in level["metrics"])
    assert "unstable" in proc.stdout + proc.stderr and "need >=" in proc.stdout
    events = read_transcript(transcript).events
    reported = [e for e in events if isinstance(e, BenchResultReported)]
    assert len(reported) == 1 and reported[0].kind == "compare"
    assert reported[0].data["levels"][0]["concurrency"] == 1
