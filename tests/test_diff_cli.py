"""`rigaudit diff A B`: snapshots, audit JSONs and transcripts; table, rigaudit.diff/1, exit status."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.diffing import DIFF_SCHEMA
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.events.session import SessionStarted
from rigaudit.transcripts.writer import TranscriptWriter
from tests.support.diff import SEED, after_update, audited, scratch


@pytest.fixture(scope="module")
def sides() -> dict[str, Path]:
    """The seed and the same host after a driver update, as audit JSONs and transcripts."""
    folder = scratch("cli")
    out: dict[str, Path] = {"after": after_update()}
    for name, root in (("a", SEED), ("b", out["after"])):
        result, transcript = audited(root)
        (folder / f"{name}.json").write_text(result.model_dump_json(by_alias=True, indent=2))
        out[f"{name}.json"], out[f"{name}.jsonl"] = folder / f"{name}.json", transcript
    return out


def _expected(doc: dict[str, Any]) -> bool:
    """NUMA balancing resolved, GPU0's MaxReadReq observed, a problem naming the 580.95.06 libraries appeared."""
    kinds = {c["check"]: c["kind"] for c in doc["findings"]["changes"]}
    appeared = [c for c in doc["findings"]["changes"] if c["kind"] == "appeared"]
    mismatch = any("580.95.06" in c["b"]["observed"] and c["b"]["status"] == "problem" for c in appeared)
    return kinds.get("numa.balancing") == "resolved" and kinds.get("pcie.mrrs") == "observed" and mismatch


def test_two_audit_results(sides: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "diff.json"
    assert main(["diff", str(sides["a.json"]), str(sides["b.json"]), "--json", str(out)]) == 1
    doc = json.loads(out.read_text())
    assert doc["schema"] == DIFF_SCHEMA and doc["different"] is True
    assert _expected(doc)
    assert doc["a"] == {"path": str(sides["a.json"]), "kind": "audit", "host": "pve-gpu01"}
    assert doc["values"]["compared"] is False and "is an audit" in doc["values"]["note"]
    text = capsys.readouterr().out
    assert "Findings that changed" in text and "appeared" in text and "different:" in text


def test_the_same_result_twice_exits_0(sides: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(sides["a.json"]), str(sides["a.json"])]) == 0
    assert "same:" in capsys.readouterr().out


def test_transcripts_with_values_rebuild_their_snapshots(
    sides: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(scratch("rebuild")))  # rebuilt snapshots go to RAM
    assert main(["diff", str(sides["a.jsonl"]), str(sides["b.jsonl"]), "--values", "--json", "-"]) == 1
    captured = capsys.readouterr()
    doc = json.loads(captured.out)  # the JSON alone on stdout; the table went to stderr
    assert doc["a"]["kind"] == "transcript" and _expected(doc)
    values = {c["ref"]: c for c in doc["values"]["changes"]}
    assert doc["values"]["compared"] is True
    assert values["file:/proc/sys/kernel/numa_balancing"]["detail"] == "1 -> 0"
    assert values["nvml:nvmlSystemGetDriverVersion()"]["detail"] == '"580.95.05" -> "580.95.06"'
    assert "Values read that differ" in captured.err


def test_a_transcript_against_its_audit_result_is_the_same(sides: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(sides["a.jsonl"]), str(sides["a.json"])]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "values not compared" in text and "add --values" in text


def test_two_snapshots_compare_findings_and_values(
    sides: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def cached(host: SnapshotHost, **_: object) -> AuditResult:  # audited once already (the share tests audit bundles)
        return audited(host.root)[0]

    monkeypatch.setattr("rigaudit.orchestrator.audit.diff.run_audit", cached)
    out = tmp_path / "d.json"
    assert main(["diff", str(SEED), str(sides["after"]), "--json", str(out), "--rows", "2"]) == 1
    doc = json.loads(out.read_text())
    assert _expected(doc)
    values = {c["ref"]: c for c in doc["values"]["changes"]}
    assert values["file:/sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0/0000:03:00.0/config"]["detail"] == (
        "MaxReadReq 512 -> 4096"
    )
    assert values["cmd:dmesg (any args)"]["detail"].endswith("+[ 4242.000001] nvidia-modeset: reloaded")
    assert values["nvml:nvmlDeviceGetPowerUsage(0)"]["volatile"] is True
    assert doc["values"]["counts"] == {"changed": 4, "only_a": 0, "only_b": 0, "volatile": 1}
    text = capsys.readouterr().out
    assert "... 2 more (see --json)" in text and "1 volatile values moved (not counted)" in " ".join(text.split())


def _bad(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema": "rigaudit.bench/1"}))
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"schema": "rigaudit.audit/1", "host": 3}))
    folder = tmp_path / "folder"
    folder.mkdir()
    idle = tmp_path / "idle.jsonl"
    with TranscriptWriter(idle) as writer:
        writer(SessionStarted(command="bench"))
    return {
        "missing": (tmp_path / "nope", "no such file or directory"),
        "text": (text, "not a snapshot, an audit JSON"),
        "other schema": (other, "not an audit JSON (schema 'rigaudit.bench/1'"),
        "invalid audit": (broken, "invalid audit JSON"),
        "folder": (folder, "without snapshot.json is not a snapshot"),
        "no audit": (idle, "recorded no audit"),
    }


def test_bad_input_is_one_line_and_exit_2(sides: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, (path, message) in _bad(tmp_path).items():
        assert main(["diff", str(path), str(sides["a.json"])]) == 2, name
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err, (name, err)
