"""An audit does only the work it needs: facts every investigator derives are derived once, a read that ends at once
sends no "now reading" ping, one host's audit imports no model nor fleet code, and the process's imports are left
out of the cycle collector's walks. What each costs is measured by benchmarks/audit_speed.py, not here."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest

from rigaudit.agents.facts.gpus import collect_gpus
from rigaudit.agents.facts.platform import detect_platform
from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.events.audit import InvestigatorActivity
from rigaudit.tools.schema.events.union import Event

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SMALL = FIXTURES / "h200x1-vm"


def _asked(probe: Probe, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The refs every later read of ``probe``'s family asks for, cached or not."""
    asked: list[str] = []
    original = Probe._once

    async def once(self: Probe, ref: str, fetch: Callable[[], Awaitable[object]], record: object) -> object:
        asked.append(ref)
        return await original(self, ref, fetch, record)  # type: ignore[arg-type]

    monkeypatch.setattr(Probe, "_once", once)
    return asked


@pytest.mark.parametrize("derive", [collect_gpus, detect_platform])
def test_a_fact_every_investigator_asks_for_is_derived_once(
    derive: Callable[[Probe], Awaitable[object]], monkeypatch: pytest.MonkeyPatch
) -> None:
    probe = Probe(SnapshotHost(SMALL))
    first, second = probe.scoped(), probe.scoped()
    derived = anyio.run(derive, first)
    asked = _asked(probe, monkeypatch)
    assert anyio.run(derive, second) == derived
    assert asked == []  # not one read asked again
    assert second.refs == first.refs and second.refs  # the evidence it rests on, for each caller


def test_a_derivation_that_fails_is_derived_again() -> None:
    probe = Probe(SnapshotHost(SMALL))
    tries: list[int] = []

    async def flaky(p: Probe) -> int:
        tries.append(1)
        if len(tries) == 1:
            raise RuntimeError("boom")
        return len(tries)

    with pytest.raises(RuntimeError):
        anyio.run(probe.derived, "x", flaky)
    assert anyio.run(probe.derived, "x", flaky) == 2 and anyio.run(probe.derived, "x", flaky) == 2


def test_reads_that_end_at_once_send_no_now_reading_pings() -> None:
    """A snapshot without latency answers within the same step: its "now reading" pings would never be seen."""
    at_once: list[Event] = []
    anyio.run(lambda: run_audit(SnapshotHost(SMALL), emit=at_once.append))
    waited: list[Event] = []
    anyio.run(lambda: run_audit(SnapshotHost(SMALL, latency_s=1e-6), emit=waited.append))
    assert not any(isinstance(e, InvestigatorActivity) for e in at_once)
    assert any(isinstance(e, InvestigatorActivity) for e in waited)


_PROGRAM = """
import gc, json, os, sys
from rigaudit.orchestrator.cli import main
sys.argv = ["rigaudit", *sys.argv[1:]]
code = main()
with open(os.environ["REPORT"], "w") as out:
    json.dump({"code": code, "modules": sorted(sys.modules), "frozen": gc.get_freeze_count()}, out)
"""


def _process(tmp_path: Path, *argv: str) -> dict[str, object]:
    """``rigaudit ARGV`` as a process of its own: its code, the modules it loaded, the objects it froze."""
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM, *argv],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "REPORT": str(report)},
    )
    assert report.is_file(), done.stderr
    result: dict[str, object] = json.loads(report.read_text())
    return result


def test_one_hosts_audit_imports_no_model_nor_fleet_code(tmp_path: Path) -> None:
    run = _process(tmp_path, "audit", "--snapshot", str(SMALL), "--no-live", "--no-transcript", "--json", "a.json")
    assert run["code"] == 0
    modules = run["modules"]
    assert isinstance(modules, list)
    heavy = ("rigaudit.agents.llm.brain", "rigaudit.agents.llm.client", "rigaudit.orchestrator.fleet.run")
    assert [m for m in modules if m.startswith(heavy)] == []
    assert [m for m in modules if m.startswith("rigaudit.tools.share")] == []
    assert isinstance(run["frozen"], int) and run["frozen"] > 10_000  # the process's imports, kept out of the walks


def test_a_command_run_in_process_freezes_nothing(tmp_path: Path) -> None:
    """Only a process that runs one command freezes its imports (a test calling main() many times never does)."""
    from rigaudit.orchestrator.cli import main

    before = gc.get_freeze_count()
    assert main(["audit", "--snapshot", str(SMALL), "--no-live", "--no-transcript", "--json", str(tmp_path / "a.json")]) == 0
    assert gc.get_freeze_count() == before
