"""Ctrl-C during an audit: the audit stops, finished work is kept, the JSON and transcript are closed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from rigaudit.tools.schema.events.session import SessionEnded
from rigaudit.transcripts.reader import read_transcript
from tests.conftest import SEED


def test_sigint_keeps_partial_results(tmp_path: Path) -> None:
    out, transcript = tmp_path / "audit.json", tmp_path / "t.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rigaudit",
            "audit",
            "--snapshot",
            str(SEED),
            "--replay-latency-ms",
            "40",
            "--no-live",
            "--json",
            str(out),
            "--transcript",
            str(transcript),
            "--report",
            str(tmp_path / "report.md"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    for line in proc.stdout:  # wait for real progress (an investigator done), then interrupt
        if " done " in line:
            break
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "No NVIDIA GPU" not in stdout  # the GPUs were not read, not absent
    assert "nothing unknown" not in stdout and "Plan: nothing to change." not in stdout
    assert "What to expect" not in stdout  # no judgement of the host from the checks that finished
    report = (tmp_path / "report.md").read_text()
    assert "This is not a pass" in report and "What to expect" not in report
    assert "Traceback" not in stderr
    result = json.loads(out.read_text())
    statuses = {run["area"]: run["status"] for run in result["investigators"]}
    assert "done" in statuses.values() and "cancelled" in statuses.values()
    assert any("interrupted" in w for w in result["warnings"])
    ended = [e for e in read_transcript(transcript).events if isinstance(e, SessionEnded)]
    assert ended and ended[-1].exit_code == 130
