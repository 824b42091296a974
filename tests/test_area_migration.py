"""Areas renamed since release 0.1 (kernel_params, kernel_version, cuda_memory, nccl_p2p): what was written with
the old names still loads, replays and selects under the new ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigaudit.agents.registry import area_names, select
from rigaudit.orchestrator.cli import main
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.events.audit import FindingReported, InvestigatorFinished
from rigaudit.tools.schema.events.session import SessionStarted
from rigaudit.tools.schema.finding import RENAMED_AREAS, Finding, current_area
from rigaudit.transcripts.format import CURRENT_FORMAT
from rigaudit.transcripts.reader import read_transcript

FIXTURES = Path(__file__).parent / "fixtures"
OLD_TRANSCRIPT = FIXTURES / "transcripts" / "h200x2-audit.jsonl"
"""Recorded by release 0.1 (``rigaudit.transcript/1``, the old area names)."""


def _finding(check: str, area: str) -> dict[str, object]:
    return {"check": check, "area": area, "status": "ok", "title": check}


def _old_audit() -> dict[str, object]:
    findings = [
        _finding("kernel.iommu", "kernel_params"),
        _finding("kernel.thp", "kernel_params"),
        _finding("kernel.version", "kernel_version"),
        _finding("cuda.mig", "cuda_memory"),
        _finding("p2p.status", "nccl_p2p"),
        _finding("nccl.env", "nccl_p2p"),
        _finding("nccl.version", "nccl_p2p"),
        _finding("numa.balancing", "numa"),
    ]
    runs = [
        {"area": "kernel_params", "status": "done", "duration_s": 0.25, "findings": 2},
        {"area": "kernel_version", "status": "timeout", "duration_s": 1.0, "error": "slow", "findings": 1},
        {"area": "numa", "status": "done", "duration_s": 0.1, "findings": 1},
        {"area": "cuda_memory", "status": "done", "duration_s": 0.2, "findings": 1},
        {"area": "nccl_p2p", "status": "done", "duration_s": 0.3, "findings": 3},
    ]
    return {
        "schema": "rigaudit.audit/1",
        "host": {"name": "h", "source": "local"},
        "started_at": "2026-01-01T00:00:00Z",
        "duration_s": 1.0,
        "investigators": runs,
        "findings": findings,
    }


def test_every_old_name_maps_to_areas_that_exist() -> None:
    for old, now in RENAMED_AREAS.items():
        assert old not in area_names()
        assert set(now) <= set(area_names()), old
    assert current_area("nccl_p2p", "nccl.env") == "nccl" and current_area("nccl_p2p", "p2p.status") == "p2p"
    assert current_area("kernel_version", "kernel.version") == "kernel" and current_area("numa", "x.y") == "numa"


def test_an_old_audit_json_loads_with_todays_areas() -> None:
    result = AuditResult.model_validate_json(json.dumps(_old_audit()))
    assert [(f.check, f.area) for f in result.findings] == [
        ("kernel.iommu", "kernel"),
        ("kernel.thp", "kernel"),
        ("kernel.version", "kernel"),
        ("cuda.mig", "cuda"),
        ("p2p.status", "p2p"),
        ("nccl.env", "nccl"),
        ("nccl.version", "nccl"),
        ("numa.balancing", "numa"),
    ]
    runs = {r.area: r for r in result.investigators}
    assert list(runs) == ["kernel", "numa", "cuda", "p2p", "nccl"]
    kernel = runs["kernel"]
    assert (kernel.status, kernel.findings, kernel.error, kernel.duration_s) == ("timeout", 3, "slow", 1.25)
    assert (runs["p2p"].findings, runs["nccl"].findings) == (1, 2)
    assert result.model_dump(mode="json", by_alias=True)["schema"] == "rigaudit.audit/1"


def test_a_finding_keeps_an_area_that_was_not_renamed() -> None:
    assert Finding.model_validate(_finding("llm.extra", "pcie")).area == "pcie"
    with pytest.raises(ValueError, match="pattern"):
        Finding.model_validate(_finding("x.y", "Not An Area!"))


def test_an_old_transcript_replays_with_todays_areas() -> None:
    transcript = read_transcript(OLD_TRANSCRIPT)
    assert transcript.version == 1 and transcript.warnings == []
    known = set(area_names())
    finished = [e.area for e in transcript.events if isinstance(e, InvestigatorFinished)]
    assert set(finished) <= known and "kernel" in finished and "p2p" in finished
    findings = [e.finding for e in transcript.events if isinstance(e, FindingReported)]
    assert findings and all(f.area == f.check.split(".")[0] for f in findings)
    (start,) = [e for e in transcript.events if isinstance(e, SessionStarted)]
    assert set(start.options["areas"]) == known
    assert transcript.ended is not None


def test_old_area_names_select_their_successors() -> None:
    assert [inv.area for inv in select(["nccl_p2p", "kernel_version"])] == ["kernel", "p2p", "nccl"]


def test_audit_areas_takes_an_old_name_with_a_note(seed_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "audit.json"
    argv = ["audit", "--snapshot", str(seed_dir), "--areas", "kernel_params", "--no-live", "--no-transcript", "--json", str(out)]
    assert main(argv) == 0
    assert "note: area kernel_params is now called kernel" in capsys.readouterr().err
    data = json.loads(out.read_text())
    assert [r["area"] for r in data["investigators"]] == ["kernel"]
    assert {f["check"] for f in data["findings"]} >= {"kernel.iommu", "kernel.version"}


def test_audit_areas_rejects_an_unknown_name_in_one_line(seed_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--snapshot", str(seed_dir), "--areas", "kernel,warp", "--no-live", "--no-transcript"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unknown area(s) warp" in err and "kernel" in err


def test_new_transcripts_are_version_4() -> None:
    assert CURRENT_FORMAT == "rigaudit.transcript/4"
