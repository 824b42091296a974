"""Fixtures recorded on the device machine (2x H200 over NVLink, a Firecracker VM): judged like an expert,
replayed and re-diagnosed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from rigaudit.orchestrator.audit.rediagnose import rediagnose
from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.events.audit import InvestigatorFinished
from rigaudit.transcripts.reader import read_transcript
from tests.support.audits import audited

FIXTURES = Path(__file__).parent / "fixtures"
H200 = FIXTURES / "h200x2-vm"
TRANSCRIPT = FIXTURES / "transcripts" / "h200x2-audit.jsonl"


@pytest.fixture(scope="module")
def h200() -> AuditResult:
    return audited(H200)


def test_no_false_problem_on_real_h200s(h200: AuditResult) -> None:
    serious = [f"{f.check}: {f.observed}" for f in h200.findings if f.status == "problem" and f.severity != "low"]
    assert serious == []
    assert all(r.status == "done" for r in h200.investigators)


def test_nvlink_and_p2p_are_seen(h200: AuditResult) -> None:
    by_check = {f.check: f for f in h200.findings}
    assert by_check["nvlink.links"].status == "ok" and "18" in by_check["nvlink.links"].observed
    assert by_check["p2p.status"].status == "ok" and "1/1 pairs" in by_check["p2p.status"].observed
    assert by_check["pcie.link"].status == "ok"
    assert by_check["firmware.rebar"].status == "ok"
    assert h200.host.facts["gpus"] == "2 x NVIDIA H200"


def test_every_unknown_is_explained(h200: AuditResult) -> None:
    for finding in h200.findings:
        if finding.status in ("unknown", "not_applicable"):
            assert len(finding.observed) > 10, finding.check


def test_transcript_replays_and_rediagnoses_to_the_snapshot_audit(h200: AuditResult) -> None:
    transcript = read_transcript(TRANSCRIPT)
    finished = {e.area for e in transcript.events if isinstance(e, InvestigatorFinished)}
    assert len(finished) == 12  # the 13 investigators of release 0.1, its kernel_params and kernel_version now one area
    done = rediagnose(transcript, all_areas=True)
    changes, recorded, mismatches, result = done.changes, done.recorded, done.mismatches, done.result
    assert mismatches == []
    assert len(recorded) >= 45
    # The evidence rebuilt from the transcript judges like the snapshot recorded in the same session
    # (both hold the same reads; only counters and process counts moved between the two recordings).
    snapshot_verdicts = {f.check: (f.status, f.severity) for f in h200.findings if "not recorded" not in f.observed}
    rebuilt_verdicts = {f.check: (f.status, f.severity) for f in result.findings}
    assert {c: v for c, v in snapshot_verdicts.items() if rebuilt_verdicts.get(c) != v} == {}
    # The rule fixed after this recording (a container cannot see the host's /lib/modules) shows as resolved.
    assert any(c.kind == "resolved" and c.check == "kernel.version" for c in changes)


def test_replay_cli_shows_the_findings() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rigaudit", "replay", str(TRANSCRIPT), "--no-live"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "nvlink.links" in proc.stdout and "checks" in proc.stdout  # its problems first, the ok ones counted
    assert "more check(s)" in proc.stdout and "p2p.status" not in proc.stdout
    everything = subprocess.run(
        [sys.executable, "-m", "rigaudit", "replay", str(TRANSCRIPT), "--no-live", "--all"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "p2p.status" in everything.stdout


def test_one_h200_is_judged_without_false_problems() -> None:
    result = anyio.run(lambda: run_audit(SnapshotHost(FIXTURES / "h200x1-vm")))
    by_check = {f.check: f for f in result.findings}
    assert [c for c, f in by_check.items() if f.status == "problem"] == []
    assert by_check["p2p.status"].status == "not_applicable"
    assert by_check["p2p.bandwidth"].status == "not_applicable"
    assert by_check["pcie.aer"].status == "ok" and "3" in by_check["pcie.aer"].observed  # 3 replays, no AER error
    assert "single GPU passed into a VM" in by_check["nvlink.links"].observed


def test_nvlink_pairs_are_named_as_such(h200: AuditResult) -> None:
    status = next(f for f in h200.findings if f.check == "p2p.status")
    assert "1 pairs over NVLink (GPU0–GPU1)" in status.observed and "host bridge" not in status.observed
