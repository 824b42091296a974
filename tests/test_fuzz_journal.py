"""Fuzz: damaged and crafted journals through `rollback`: into the snapshot copy the apply changed, and, for a
journal claiming this machine, through the live path with an in-memory host in place of this machine (so no
case can touch a real kernel setting). A rollback may only ever restore targets of the journal's own apply."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.actions.persist import HEADER
from rigaudit.tools.actions.targets import PERSIST_FILES
from tests.support.apply import MemoryHost, fast_tmp, mini_seed, seed_plan
from tests.support.fuzz import Mutator, cases, check, run_cli

CASES = cases("journal", 40)
MARKER = "FUZZ-CANARY-journal-c41a"


def _digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, bytes, set[str]]]:
    """An apply (with --persist) into a copy of the mini seed: the copy, its journal, the paths it may restore."""
    for folder in fast_tmp(tmp_path_factory.mktemp("fuzz-journal")):
        mini = mini_seed(folder / "mini")
        plan = folder / "plan.json"
        plan.write_text(seed_plan().model_dump_json())
        journal = folder / "j.jsonl"
        argv = ["apply", "--snapshot", str(mini), "--into", str(folder / "copy"), "--plan", str(plan), "--yes", "--persist"]
        assert main([*argv, "--journal", str(journal), "--no-transcript"]) == 0
        entries = [json.loads(line) for line in journal.read_text().splitlines()]
        paths = {e["target"].get("path") or e["target"].get("device", "") for e in entries if e.get("target")}
        yield folder / "copy", journal.read_bytes(), paths


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Path]:
    for folder in fast_tmp(tmp_path):
        outside = folder / "outside"
        outside.mkdir()
        (outside / "secret").write_text(MARKER + "\n")
        yield folder


def _live(data: bytes) -> bytes:
    """The journal made to claim the in-memory host (as a journal of this machine would)."""
    lines = data.splitlines()
    session = json.loads(lines[0])
    session.update(host="memory", source="local", host_id="")
    return b"\n".join([json.dumps(session).encode(), *lines[1:]]) + b"\n"


@pytest.mark.parametrize("case", CASES)
def test_a_crafted_journal(case: str, work: Path, applied: tuple[Path, bytes, set[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    copy, original, allowed_paths = applied
    number = int(case.split("#")[1])
    live = number % 3 == 0
    mutator = Mutator(case)
    what, data = mutator.jsonl(_live(original) if live else original)
    what = f"{case} {'live ' if live else ''}{what}"
    journal = work / "j.jsonl"
    journal.write_bytes(data)
    outside = _digest(work / "outside")
    if live:
        host = MemoryHost({p: b"0\n" for p in allowed_paths if p.startswith("/")} | {p: HEADER.encode() for p in PERSIST_FILES})
        monkeypatch.setattr("rigaudit.tools.hosts.local.LocalHost", lambda: host)
        check(run_cli(["rollback", str(journal), "--yes", "--no-transcript"]), what, canary=MARKER)
        assert set(host.writes) <= allowed_paths | {f"/sys/bus/pci/devices/{d}/config" for d in allowed_paths}, what
        assert all(c[:1] in (("systemctl",), ("modprobe",), ("rm",), ("install",)) for c in host.commands), what
    else:
        target = work / "copy"
        shutil.copytree(copy, target)
        check(run_cli(["rollback", str(journal), "--snapshot", str(target), "--yes", "--no-transcript"]), what, canary=MARKER)
        before, after = _digest(copy), _digest(target)
        changed = {p for p, d in after.items() if before.get(p) != d} | (set(before) - set(after))
        assert all(p.startswith("files/") for p in changed), what
    assert _digest(work / "outside") == outside, what
