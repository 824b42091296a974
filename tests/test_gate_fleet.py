"""The fleet report from gathered results: ``rigaudit audit --results DIR`` over what ``rigaudit check --json``
wrote on each node (a prolog, the health check or the DaemonSet), with hostile and stale files among them."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from tests.support.fleet import degrade_link, set_hostname
from tests.support.mutate import light_copy

H200 = Path(__file__).parent / "fixtures" / "h200x2-vm"


def node(tmp_path: Path, name: str, *, degraded: bool = False, machine: str | None = None) -> Path:
    """A node named ``name`` whose /etc/machine-id is made from ``machine`` (default: its name)."""
    root = light_copy(H200, tmp_path / "snapshots" / name)
    set_hostname(root, name)
    (root / "files" / "etc").mkdir(parents=True, exist_ok=True)
    (root / "files" / "etc" / "machine-id").write_text(hashlib.md5((machine or name).encode()).hexdigest() + "\n")
    if degraded:
        degrade_link(root, "0000:00:06.0", 0)
    return root


def gather(snapshot: Path, target: Path, *extra: str) -> int:
    """``rigaudit check --json`` on a node; a narrow PCIe link is medium on these NVLink hosts."""
    return main(["check", "--snapshot", str(snapshot), "--json", str(target), "-q", "--fail-on", "medium", *extra])


@pytest.fixture(scope="module")
def gathered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five nodes' ``check --json`` results (gpu-03 twice, degraded the second time), gathered once."""
    tmp_path = tmp_path_factory.mktemp("gathered")
    folder = tmp_path / "results"
    folder.mkdir()
    for name in ("gpu-01", "gpu-02", "gpu-04"):
        assert gather(node(tmp_path, name), folder / f"{name}.json") == 0
    bad = node(tmp_path, "gpu-03", degraded=True)
    assert gather(node(tmp_path, "gpu-03-old", machine="gpu-03"), folder / "gpu-03-before.json") == 0
    before = json.loads((folder / "gpu-03-before.json").read_text())
    before["audit"]["host"]["name"] = "gpu-03"  # the same node, an older run
    before["finished_at"] -= 3600
    (folder / "gpu-03-before.json").write_text(json.dumps(before))
    assert gather(bad, folder / "gpu-03.json") == 1
    return folder


@pytest.fixture
def results(gathered: Path, tmp_path: Path) -> Path:
    """A private copy of the gathered results (a test may add files to it)."""
    return Path(shutil.copytree(gathered, tmp_path / "results"))


def test_the_node_with_a_problem_is_the_outlier(results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fleet"
    assert main(["audit", "--results", str(results), "--out", str(out)]) == 0
    data = json.loads((out / "fleet.json").read_text())
    assert data["kind"] == "gathered" and data["failures"] == []
    assert [h["target"] for h in data["hosts"]] == ["gpu-01", "gpu-02", "gpu-03", "gpu-04"]
    assert data["matrix"]["pcie.link"] == {"gpu-01": "ok", "gpu-02": "ok", "gpu-03": "problem", "gpu-04": "ok"}
    named = {(o["host"], o["key"]) for o in data["outliers"]}
    assert ("gpu-03", "pcie.link") in named and ("gpu-03", "GPU0 PCIe link") in named
    assert {o["host"] for o in data["outliers"]} == {"gpu-03"}
    assert data["warnings"] == ["gpu-03: 2 results, the newest (gpu-03.json) is used"]
    assert (out / "hosts" / "gpu-03" / "system-improve.md").is_file()
    assert json.loads((out / "hosts" / "gpu-03" / "audit.json").read_text())["schema"] == "rigaudit.audit/1"
    assert "outlier" in capsys.readouterr().out
    assert main(["audit", "--results", str(results), "--fail-on", "high", "--no-live"]) == 0
    assert main(["audit", "--results", str(results), "--fail-on", "medium", "--no-live"]) == 1


def test_bad_files_are_listed_never_followed(results: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text((results / "gpu-01.json").read_text())
    (results / "link.json").symlink_to(outside)
    (results / "garbage.json").write_bytes(b"\x00\xff not json")
    (results / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (results / "other.json").write_text(json.dumps({"schema": "rigaudit.fleet/1"}))
    broken = json.loads((results / "gpu-02.json").read_text())
    broken["checks"][0]["status"] = "sideways"
    (results / "invalid.json").write_text(json.dumps(broken))
    (results / "notes.txt").write_text("ignored: not *.json")
    out = tmp_path / "fleet.json"
    assert main(["audit", "--results", str(results), "--json", str(out)]) == 0
    failures = {f["target"]: f["error"] for f in json.loads(out.read_text())["failures"]}
    assert failures["link.json"] == "not a regular file (links are not followed)"
    assert failures["garbage.json"].startswith("not JSON")
    assert failures["deep.json"].startswith("not JSON")
    assert failures["other.json"] == "not a rigaudit.check/1 or rigaudit.audit/1 result"
    assert failures["invalid.json"].startswith("not a valid rigaudit.check/1 result (checks.0.status:")
    assert set(failures) == {"link.json", "garbage.json", "deep.json", "other.json", "invalid.json"}


def test_audit_results_and_partial_checks_are_read_too(tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    audit = ["audit", "--snapshot", str(node(tmp_path, "a1")), "--json", str(folder / "a1.json"), "--no-transcript", "--no-live"]
    assert main(audit) == 0
    late = node(tmp_path, "late")
    assert gather(late, folder / "late.json", "--replay-latency-ms", "300", "--deadline", "0.2", "--only", "pcie") == 3
    out = tmp_path / "fleet.json"
    assert main(["audit", "--results", str(folder), "--json", str(out), "--no-live"]) == 0
    data = json.loads(out.read_text())
    assert sorted(h["target"] for h in data["hosts"]) == ["a1", "late"]
    assert any(w.startswith("late could not be fully checked: could not check: pcie") for w in data["warnings"])


def test_an_empty_or_missing_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--results", str(tmp_path / "nope")]) == 2
    assert "not a directory" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["audit", "--results", str(empty)]) == 1
    assert "no host could be audited" in capsys.readouterr().err
    assert main(["audit", "--results", str(empty), "--snapshot", str(H200)]) == 2
    assert os.listdir(empty) == []
