"""Attacks on ``rigaudit audit --results DIR`` (the fleet judged from gathered ``check --json`` files): crafted
results are one failure line each, never a traceback, a hang or a write outside ``--out``; a skewed clock cannot
make a stale result win."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from rigaudit.orchestrator.cli import main
from tests.support.fleet import set_hostname
from tests.support.mutate import light_copy

H200 = Path(__file__).parent / "fixtures" / "h200x2-vm"


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One node's ``rigaudit check --json`` result, as parsed JSON."""
    folder = tmp_path_factory.mktemp("one")
    root = light_copy(H200, folder / "snap")
    set_hostname(root, "gpu-01")
    out = folder / "gpu-01.json"
    assert main(["check", "--snapshot", str(root), "--json", str(out), "-q"]) == 0
    value: dict[str, Any] = json.loads(out.read_text())
    return value


def _named(result: dict[str, Any], name: str, **top: Any) -> dict[str, Any]:
    copy: dict[str, Any] = json.loads(json.dumps(result))
    copy["audit"]["host"]["name"] = name
    copy["audit"]["host"]["facts"]["host_id"] = (
        f"machine-id:{hashlib.sha256(name.encode(errors='replace')).hexdigest()[:16]}"  # one machine a name
    )
    copy["host"] = name
    copy.update(top)
    return copy


def _fleet(folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any], str]:
    out = tmp_path / "fleet"
    code = main(["audit", "--results", str(folder), "--out", str(out), "--no-live"])
    err = capsys.readouterr()
    data: dict[str, Any] = json.loads((out / "fleet.json").read_text()) if (out / "fleet.json").exists() else {}
    return code, data, err.out + err.err


def test_crafted_results_are_failures_not_tracebacks(
    result: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "good.json").write_text(json.dumps(result))
    # half a UTF-16 pair in the host name: no file name or report could be written with it
    (folder / "surrogate.json").write_text(json.dumps(_named(result, "\ud800gpu")))
    (folder / "nan.json").write_text(json.dumps(_named(result, "gpu-nan", finished_at=float("nan"))))
    (folder / "inf.json").write_text(json.dumps(_named(result, "gpu-inf", duration_s=float("inf"))))
    (folder / "nameless.json").write_text(json.dumps(_named(result, "")))
    (folder / "blank.json").write_text(json.dumps(_named(result, " \t")))
    (folder / "future.json").write_text(json.dumps({**result, "schema": "rigaudit.check/2"}))
    (folder / "truncated.json").write_text(json.dumps(result)[:700])
    (folder / "number.json").write_text("12")
    os.mkfifo(folder / "fifo.json")
    (folder / "zero.json").symlink_to("/dev/zero")
    code, data, text = _fleet(folder, tmp_path, capsys)
    assert code == 0, text
    assert "Traceback" not in text
    failures = {f["target"]: f["error"] for f in data["failures"]}
    assert [h["target"] for h in data["hosts"]] == ["gpu-01"]
    assert "surrogate" in failures["surrogate.json"]
    for name in ("nan.json", "inf.json"):
        assert "NaN" in failures[name] or "Infinity" in failures[name], failures[name]
    assert failures["nameless.json"] == failures["blank.json"] == "names no host"
    assert "newer rigaudit" in failures["future.json"] and "rigaudit.check/2" in failures["future.json"]
    assert failures["truncated.json"].startswith("not JSON")
    assert failures["number.json"] == "not a rigaudit.check/1 or rigaudit.audit/1 result"
    assert failures["fifo.json"] == "is a FIFO, not a regular file"
    assert failures["zero.json"] == "not a regular file (links are not followed)"
    assert sorted(os.listdir(tmp_path / "fleet" / "hosts")) == ["gpu-01"]


def test_a_node_clock_in_the_future_does_not_keep_a_stale_result(
    result: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A node whose clock ran a year ahead once wrote a result; its clock fixed, its newer results must win."""
    folder = tmp_path / "results"
    folder.mkdir()
    now = time.time()
    skewed = _named(result, "gpu-01", finished_at=now + 365 * 86400, reason="stale")
    (folder / "gpu-01-skewed.json").write_text(json.dumps(skewed))
    (folder / "gpu-01.json").write_text(json.dumps(_named(result, "gpu-01", finished_at=now - 60)))
    code, data, text = _fleet(folder, tmp_path, capsys)
    assert code == 0, text
    assert any("gpu-01.json) is used" in w for w in data["warnings"]), data["warnings"]
    assert any("gpu-01-skewed.json" in w and "in the future" in w for w in data["warnings"]), data["warnings"]


def test_gathered_progress_names_what_is_read(result: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "gpu-01.json").write_text(json.dumps(result))
    _, _, text = _fleet(folder, tmp_path, capsys)
    assert "Slurm" not in text
