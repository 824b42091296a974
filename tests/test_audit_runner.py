"""The fan-out: every investigator at once; failures and timeouts are entries, not the end."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from rigaudit.agents.check import Check
from rigaudit.agents.findings import ok, problem
from rigaudit.agents.investigator import Investigator
from rigaudit.orchestrator.audit.run import AuditControl, AuditOptions, run_audit
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.events.audit import InvestigatorFinished, SnapshotReads, ToolCall
from rigaudit.tools.schema.events.union import Event
from rigaudit.tools.schema.finding import Fix, SysctlAction


def _check(check_id: str) -> Check:
    return Check(check_id, check_id, reads="a test double", problem="never", fix="none")


async def _read_numa(probe: Probe) -> str | None:
    return await probe.text("/proc/sys/kernel/numa_balancing")


def _judge_numa(value: str | None) -> list:  # type: ignore[type-arg]
    if value and value.strip() == "1":
        fix = Fix(kind="runtime", where="host", summary="off", actions=(SysctlAction(key="kernel.numa_balancing", value="0"),))
        return [
            problem(
                "numa.balancing", "numa", "on", "medium", "1", "0", "why", fix, evidence=["file:/proc/sys/kernel/numa_balancing"]
            )
        ]
    return [ok("numa.balancing", "numa", "off", "0")]


NUMA = Investigator("numa", "NUMA", (_check("numa.balancing"),), _read_numa, _judge_numa)


async def _boom(probe: Probe) -> None:
    raise RuntimeError("parser exploded\nsecond line")


async def _hang(probe: Probe) -> None:
    await anyio.sleep_forever()


BROKEN = Investigator("gpu", "GPU", (_check("gpu.thermals"),), _boom, lambda _: [])
HANGING = Investigator("power", "power", (_check("power.governor"),), _hang, lambda _: [])


def test_failures_and_timeouts_are_entries(seed_dir: Path) -> None:
    events: list[Event] = []
    options = AuditOptions(investigators=[NUMA, BROKEN, HANGING], timeout_s=1.0)  # NUMA done 100x sooner at any load
    result = anyio.run(lambda: run_audit(SnapshotHost(seed_dir), options=options, emit=events.append))
    runs = {r.area: r for r in result.investigators}
    assert runs["numa"].status == "done"
    assert runs["gpu"].status == "failed" and runs["gpu"].error == "RuntimeError: parser exploded"
    assert runs["power"].status == "timeout"
    assert [f.check for f in result.findings] == ["numa.balancing"]
    assert [s.id for s in result.plan.steps] == ["numa.balancing"]
    assert [e.ref for e in result.evidence] == ["file:/proc/sys/kernel/numa_balancing"]
    finished = [e for e in events if isinstance(e, InvestigatorFinished)]
    assert {e.area for e in finished} == {"numa", "gpu", "power"}
    reads = [read for e in events if isinstance(e, SnapshotReads) and e.area == "numa" for read in e.reads]
    assert reads and reads[0][:2] == ("read", "/proc/sys/kernel/numa_balancing")
    told = [type(e).__name__ for e in events if getattr(e, "area", None) == "numa"]
    assert told[-2:] == ["SnapshotReads", "InvestigatorFinished"]  # an area's reads, told as it ends


def test_cancel_keeps_finished_work(seed_dir: Path) -> None:
    control = AuditControl()
    options = AuditOptions(investigators=[NUMA, HANGING], timeout_s=30)

    async def main():  # type: ignore[no-untyped-def]
        events: list[Event] = []

        def emit(event: Event) -> None:
            events.append(event)
            if isinstance(event, InvestigatorFinished) and event.area == "numa":
                control.cancel()

        return await run_audit(SnapshotHost(seed_dir), options=options, emit=emit, control=control)

    result = anyio.run(main)
    runs = {r.area: r.status for r in result.investigators}
    assert runs == {"numa": "done", "power": "cancelled"}
    assert any("interrupted" in w for w in result.warnings)
    assert [f.check for f in result.findings] == ["numa.balancing"]


def test_tool_calls_are_made_only_for_a_listener(seed_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each read is told (a live host's a ToolCall event, redacted, digested; a sealed snapshot's kept by reference, an
    area's in one event) for the terminal or the transcript; with nobody listening (``rigaudit check`` without
    --transcript) nothing is made: that was a fifth of a seed check's work."""
    from rigaudit.orchestrator.audit import run as audit
    from rigaudit.transcripts.references import ReferencedReads

    made: list[str] = []

    def counting(real: Callable[[str, str, object], ToolCall]) -> Callable[[str, str, object], ToolCall]:
        def counted(area: str, ref: str, result: object) -> ToolCall:
            made.append(ref)
            return real(area, ref, result)

        return counted

    kept = ReferencedReads.observe

    def observed(self: ReferencedReads, ref: str, result: object) -> None:
        made.append(ref)
        kept(self, ref, result)  # type: ignore[arg-type]

    monkeypatch.setattr(audit, "tool_call_from_probe", counting(audit.tool_call_from_probe))  # a live host's reads
    monkeypatch.setattr(ReferencedReads, "observe", observed)  # a snapshot's, by reference
    options = AuditOptions(investigators=[NUMA])
    quiet = anyio.run(lambda: run_audit(SnapshotHost(seed_dir), options=options))
    assert made == [] and [e.ref for e in quiet.evidence] == ["file:/proc/sys/kernel/numa_balancing"]
    events: list[Event] = []
    heard = anyio.run(lambda: run_audit(SnapshotHost(seed_dir), options=options, emit=events.append))
    assert "file:/proc/sys/kernel/numa_balancing" in made  # with the baseline's reads (the host's facts)
    assert sum(len(e.reads) for e in events if isinstance(e, SnapshotReads)) == len(made)
    assert heard.findings == quiet.findings
