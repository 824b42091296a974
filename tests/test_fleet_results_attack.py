"""Crafted ``check --json`` results in a ``rigaudit audit --results`` folder (attack review, 2026-12-02): a host
name of any length or with control characters, a reason line of megabytes, case-folded duplicates, and a folder
of more entries than are read. Each is one failure line or a bounded warning; the rest of the fleet is judged."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.fleet import gathered
from rigaudit.orchestrator.fleet.runner import SLUG_CHARS, host_names, slug

H200 = Path(__file__).parent / "fixtures" / "h200x2-vm"


@pytest.fixture(scope="module")
def one_result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    target = tmp_path_factory.mktemp("one") / "one.json"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["check", "--snapshot", str(H200), "--json", str(target), "-q"]) == 0
    return dict(json.loads(target.read_text()))


def _named(doc: dict[str, Any], name: str, edit: Callable[[dict[str, Any]], None] | None = None) -> str:
    copy = json.loads(json.dumps(doc))
    copy["host"] = copy["audit"]["host"]["name"] = name
    if edit is not None:
        edit(copy)
    return json.dumps(copy)


def _audit(folder: Path, out: Path) -> tuple[int, dict[str, Any], str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["audit", "--results", str(folder), "--out", str(out), "--no-live"])
    return code, json.loads((out / "fleet.json").read_text()), err.getvalue()


def test_crafted_host_names_are_failures_and_the_fleet_is_judged(one_result: dict[str, Any], tmp_path: Path) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    crafted = {"long": "g" * 5000, "control": "gpu-01\n# injected", "escape": "\x1b]0;pwned\x07gpu"}
    for label, name in crafted.items():
        (folder / f"{label}.json").write_text(_named(one_result, name))

    def loud(doc: dict[str, Any]) -> None:
        doc["verdict"], doc["reason"] = "could_not_check", "could not check: " + "x" * 2_000_000

    (folder / "loud.json").write_text(_named(one_result, "gpu-02", loud))
    (folder / "fine.json").write_text(_named(one_result, "gpu-01"))
    (folder / "FINE.json").write_text(_named(one_result, "GPU-01"))
    code, fleet, err = _audit(folder, tmp_path / "out")
    assert code == 0 and "Traceback" not in err
    failures = {f["target"]: f["error"] for f in fleet["failures"]}
    assert failures == {
        "long.json": "names a host of 5000 characters (a host name has at most 253)",
        "control.json": "names a host with control characters in its name",
        "escape.json": "names a host with control characters in its name",
    }
    assert sorted(a["target"] for a in fleet["hosts"]) == ["GPU-01", "gpu-01", "gpu-02"]
    assert max(len(w) for w in fleet["warnings"]) < 400  # the reason line cut, not two megabytes
    folders = sorted(p.name for p in (tmp_path / "out" / "hosts").iterdir())
    assert len({f.lower() for f in folders}) == 3  # apart on a file system that folds case too


def test_a_long_target_is_a_short_distinct_folder() -> None:
    long_a, long_b = "a" * 300 + "1", "a" * 300 + "2"
    assert len(slug(long_a)) <= SLUG_CHARS and slug(long_a) != slug(long_b)
    assert slug("root@gpu-7") == "root@gpu-7" and slug("../../etc") == "etc"
    assert host_names(["gpu-01", "GPU-01"]) == {"gpu-01": "gpu-01", "GPU-01": "GPU-01-2"}


def test_a_folder_of_too_many_entries_is_refused_before_it_is_all_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gathered, "MAX_FILES", 5)
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(7):
        (folder / f"n{i}.json").write_text("{}")
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        assert main(["audit", "--results", str(folder), "--no-live"]) == 2
    assert "more than 5 result files" in err.getvalue() and "Traceback" not in err.getvalue()
