"""An audit with an investigator that crashed or timed out is not a clean audit: status and exit code say so."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from rigaudit.orchestrator.audit.run import AuditOptions, run_audit
from rigaudit.orchestrator.cli import main
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.events.audit import AuditFinished
from rigaudit.transcripts.reader import read_transcript
from tests.test_audit_runner import BROKEN, HANGING, NUMA


def test_the_result_says_incomplete_and_why(seed_dir: Path) -> None:
    options = AuditOptions(investigators=[NUMA, BROKEN, HANGING], timeout_s=1.0)  # NUMA done 100x sooner at any load
    result = anyio.run(lambda: run_audit(SnapshotHost(seed_dir), options=options))
    assert result.status == "incomplete"
    (line,) = [w for w in result.warnings if w.startswith("audit incomplete")]
    assert "2 investigator(s)" in line and "gpu failed (RuntimeError: parser exploded)" in line and "power timeout" in line


def test_a_clean_audit_is_complete(seed_dir: Path) -> None:
    result = anyio.run(lambda: run_audit(SnapshotHost(seed_dir), options=AuditOptions(investigators=[NUMA])))
    assert result.status == "complete" and not any("incomplete" in w for w in result.warnings)


@pytest.mark.parametrize(("fail_on", "code"), [(None, 4), ("high", 4), ("medium", 1)])
def test_exit_status_4_unless_a_problem_fails_first(
    seed_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_on: str | None, code: int
) -> None:
    monkeypatch.setattr("rigaudit.orchestrator.audit.run.select", lambda areas: [NUMA, BROKEN])
    out, transcript = tmp_path / "a.json", tmp_path / "t.jsonl"
    argv = ["audit", "--snapshot", str(seed_dir), "--no-live", "--json", str(out), "--transcript", str(transcript)]
    assert main(argv + (["--fail-on", fail_on] if fail_on else [])) == code
    assert json.loads(out.read_text())["status"] == "incomplete"
    finished = [e for e in read_transcript(transcript).events if isinstance(e, AuditFinished)]
    assert [e.result.status for e in finished] == ["incomplete"]


def test_help_documents_exit_status_4(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["audit", "--help"])
    assert "4 the audit is incomplete" in " ".join(capsys.readouterr().out.split())
