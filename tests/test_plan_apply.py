"""apply honours the plan's edges: a step whose prerequisite was declined, failed, deferred or not selected is not
run and says why (report, journal); a conflicting step runs only if the other did not; a bad order is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from rigaudit.orchestrator.change.apply import AfterStep, ApplyOptions, ApplyReport, StepReport, apply_plan, go_on, load_plan_file
from rigaudit.orchestrator.change.approval import ScriptedConsole, StepApprover
from rigaudit.tools.actions.journal import read_journal
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.schema.finding import CommandAction, SysctlAction, SysfsWriteAction
from rigaudit.tools.schema.plan import Plan, PlanStep, StepEdge
from tests.support.apply import CPUIDLE, NUMA, MemoryHost, fast_tmp

SWAP = "/proc/sys/vm/swappiness"


@pytest.fixture
def ram(tmp_path: Path) -> Iterator[Path]:
    yield from fast_tmp(tmp_path)


def _step(step_id: str, *, kind: str = "runtime", edges: tuple[StepEdge, ...] = (), **actions: object) -> PlanStep:
    found = {
        "cstates": (SysfsWriteAction(paths=CPUIDLE[:2], value="1"),),
        "numa": (SysctlAction(key="kernel.numa_balancing", value="0"),),
        "swap": (SysctlAction(key="vm.swappiness", value="10"),),
        "reboot": (CommandAction(description="reboot", argv=("systemctl", "reboot")),),
    }[str(actions.get("what", "numa"))]
    return PlanStep(
        id=step_id,
        check=step_id,
        priority="P0",
        kind=kind,
        where="host",
        title=step_id,
        actions=found,
        edges=edges,  # type: ignore[arg-type]
    )


def _host() -> MemoryHost:
    return MemoryHost({NUMA: b"1\n", SWAP: b"60\n", **{p: b"0\n" for p in CPUIDLE[:2]}})


def _run(
    host: MemoryHost,
    plan: Plan,
    journal: Path,
    answers: list[str] | None = None,
    after_step: AfterStep = go_on,
    **options: object,
) -> ApplyReport:
    if answers is None:
        approver = StepApprover(plan.digest(), assume_yes=True, interactive=False, who="t@h")
    else:
        approver = StepApprover(plan.digest(), assume_yes=False, interactive=True, console=ScriptedConsole(answers), who="t@h")

    async def main() -> ApplyReport:
        settings = ApplyOptions(**options)  # type: ignore[arg-type]
        return await apply_plan(host, plan, approver=approver, journal_path=journal, options=settings, after_step=after_step)

    return anyio.run(main)


def _by_id(report: ApplyReport) -> dict[str, tuple[str, str]]:
    return {s.step.id: (s.status, s.reason) for s in report.steps}


def test_a_step_whose_prerequisite_was_declined_is_not_run_and_says_why(ram: Path) -> None:
    plan = Plan(
        steps=(
            _step("a.first", what="cstates"),
            _step("a.second", edges=(StepEdge(kind="requires", step="a.first", why="needs it"),)),
            _step("a.free", what="swap"),
        )
    )
    host = _host()
    report = _run(host, plan, ram / "j.jsonl", ["no", "yes"])  # asked twice only: a.second is never asked
    status = _by_id(report)
    assert status["a.first"][0] == "declined"
    assert status["a.second"] == ("blocked", "not run: waits for a.first, which was declined (needs it)")
    assert status["a.free"][0] == "applied"
    assert host.files[NUMA] == b"1\n" and host.files[SWAP] == b"10\n"
    skips = [e for e in read_journal(ram / "j.jsonl")[0] if e.kind == "skip"]
    assert [(e.step_id, e.message) for e in skips] == [("a.second", status["a.second"][1])]


def test_a_step_unsafe_before_a_deferred_reboot_is_not_run(ram: Path) -> None:
    plan = Plan(
        steps=(
            _step("k.boot", kind="reboot", what="reboot"),
            _step("p.clear", edges=(StepEdge(kind="not_before", step="k.boot"),)),
        )
    )
    host = _host()
    report = _run(host, plan, ram / "j.jsonl")
    status = _by_id(report)
    assert status["k.boot"][0] == "deferred"
    assert status["p.clear"][0] == "blocked"
    assert "unsafe before k.boot, which needs a reboot that has not happened" in status["p.clear"][1]
    assert host.writes == []


def test_a_prerequisite_that_failed_blocks_its_dependents(ram: Path) -> None:
    plan = Plan(steps=(_step("a.first"), _step("a.second", what="swap", edges=(StepEdge(kind="requires", step="a.first"),))))
    host = MemoryHost({NUMA: b"1\n", SWAP: b"60\n"}, refuse=[NUMA])
    status = _by_id(_run(host, plan, ram / "j.jsonl"))
    assert status["a.first"][0] == "failed"
    assert status["a.second"] == ("blocked", "not run: waits for a.first, which failed")
    assert host.files[SWAP] == b"60\n"


def test_only_a_dependent_runs_when_its_prerequisite_is_already_in_place(ram: Path) -> None:
    plan = Plan(steps=(_step("a.first"), _step("a.second", what="swap", edges=(StepEdge(kind="requires", step="a.first"),))))
    host = _host()
    status = _by_id(_run(host, plan, ram / "j1.jsonl", only=["a.second"]))
    assert status["a.second"][0] == "blocked" and "not part of this apply (--only)" in status["a.second"][1]
    host.files[NUMA] = b"0\n"
    assert _by_id(_run(host, plan, ram / "j2.jsonl", only=["a.second"]))["a.second"][0] == "applied"


def test_a_conflicting_step_runs_only_when_the_other_did_not(ram: Path) -> None:
    plan = Plan(
        steps=(
            _step("a.good"),
            _step("a.other", what="swap", edges=(StepEdge(kind="conflicts", step="a.good", why="one or the other"),)),
        )
    )
    status = _by_id(_run(_host(), plan, ram / "j1.jsonl"))
    assert status["a.other"] == ("blocked", "not run: conflicts with a.good, applied in this run (one or the other)")
    status = _by_id(_run(_host(), plan, ram / "j2.jsonl", ["no", "yes"]))
    assert status["a.good"][0] == "declined" and status["a.other"][0] == "applied"


def test_a_step_the_planner_refused_never_runs(ram: Path) -> None:
    plan = Plan(steps=(_step("a.one").model_copy(update={"blocked": "refused: a cycle"}),))
    host = _host()
    assert _by_id(_run(host, plan, ram / "j.jsonl")) == {"a.one": ("blocked", "refused: a cycle")}
    assert host.writes == []


def test_a_measurement_is_shown_with_its_command_never_run(ram: Path) -> None:
    measure = PlanStep(
        id="measure.p2p",
        check="measure.p2p",
        priority="P0",
        kind="measure",
        where="host",
        title="measure",
        actions=(CommandAction(description="idle GPUs", argv=("rigaudit", "bench", "p2p", "--yes")),),
    )
    status = _by_id(_run(_host(), Plan(steps=(measure, _step("a.one"))), ram / "j.jsonl"))
    assert status["measure.p2p"] == ("manual", "a measurement to take first (apply runs no commands): rigaudit bench p2p --yes")
    assert status["a.one"][0] == "applied"


def test_a_plan_file_whose_order_breaks_its_edges_is_refused(tmp_path: Path) -> None:
    bad = Plan(steps=(_step("b", edges=(StepEdge(kind="not_before", step="a"),)), _step("a", what="swap")))
    path = tmp_path / "plan.json"
    path.write_text(bad.model_dump_json())
    with pytest.raises(UsageError, match="refusing a plan whose order breaks its own edges: b is placed before a"):
        load_plan_file(path)
    path.write_text(Plan(steps=tuple(reversed(bad.steps))).model_dump_json())
    assert [s.id for s in load_plan_file(path)[0].steps] == ["a", "b"]


def test_the_emitted_script_keeps_the_graph_order_and_holds_back_what_waits(ram: Path) -> None:
    from rigaudit.tools.actions.script import render_script

    boot = _step("k.boot", kind="reboot", what="reboot")
    clear = _step("h.clear", edges=(StepEdge(kind="not_before", step="k.boot", why="misrouted before"),)).model_copy(
        update={"where": "hypervisor"}
    )
    free = _step("h.free", what="swap").model_copy(update={"where": "hypervisor"})
    report = _run(_host(), Plan(steps=(boot, clear, free)), ram / "j.jsonl")
    items = report.script_steps()
    assert [(i.step.id, i.live) for i in items] == [("k.boot", False), ("h.clear", False), ("h.free", True)]
    assert "commented out until k.boot has run" in items[1].reason
    script = render_script(items, host="memory", plan_hash="x", generated_at="now")
    assert script.index("k.boot") < script.index("h.clear") < script.index("h.free")
    assert "# Order: unsafe before k.boot (misrouted before)" in script
    assert "\nsysctl -w vm.swappiness=10\n" in script and "\n# $ sysctl -w kernel.numa_balancing=0\n" in script


def test_a_blocked_step_says_why_on_the_terminal_and_in_the_report(ram: Path) -> None:
    from rigaudit.orchestrator.change.apply_run import finished
    from rigaudit.orchestrator.change.sections import apply_section
    from rigaudit.orchestrator.ui.lines import apply_lines

    plan = Plan(steps=(_step("a.first"), _step("a.second", what="swap", edges=(StepEdge(kind="requires", step="a.first"),))))
    report = _run(_host(), plan, ram / "j.jsonl", ["no"])
    why = "waits for a.first, which was declined"
    assert any(line.startswith("  [--] a.second: blocked (") and why in line for line in apply_lines(finished(report)))
    assert f"- `a.second` (runtime, on the host): blocked; not run: {why}" in apply_section(report, "now", {})
    # nothing was changed: the person is told there is nothing to undo, not handed a rollback of nothing
    lines = apply_lines(finished(report))
    assert "nothing was changed, so there is nothing to undo" in lines[-1] and not any("undo: rigaudit" in ln for ln in lines)


def test_after_step_is_awaited_once_for_each_step_whose_changes_were_made(ram: Path) -> None:
    plan = Plan(steps=(_step("a.numa"), _step("b.swap", what="swap"), _step("c.cstates", what="cstates")))
    host = _host()
    host.files[SWAP] = b"10\n"  # b.swap is already in place: nothing is changed, nothing awaited
    seen: list[tuple[str, str, list[str]]] = []

    async def after(done: StepReport) -> None:
        seen.append((done.step.id, done.status, list(host.writes)))

    report = _run(host, plan, ram / "j.jsonl", ["yes", "no"], after_step=after)  # c.cstates declined
    assert [(s.step.id, s.status) for s in report.steps] == [
        ("a.numa", "applied"),
        ("b.swap", "unchanged"),
        ("c.cstates", "declined"),
    ]
    assert seen == [("a.numa", "applied", [NUMA])]  # after its write, with its outcome known


def test_a_persisted_setting_alone_still_gets_its_undo_line() -> None:
    from rigaudit.orchestrator.ui.lines import apply_lines
    from rigaudit.tools.schema.events.apply import ApplyFinished

    event = ApplyFinished(
        host="h",
        source="local",
        plan_hash="p",
        steps=[],
        persist=[("/etc/sysctl.d/90-rigaudit.conf: written", True)],
        journal="/j.jsonl",
        undo="rigaudit rollback /j.jsonl",
    )
    lines = apply_lines(event)
    assert "journal: /j.jsonl  (undo: rigaudit rollback /j.jsonl)" in lines and not any("nothing to undo" in ln for ln in lines)


def test_a_declined_step_says_declined_once_in_the_report_and_on_the_terminal(ram: Path) -> None:
    from rigaudit.orchestrator.change.apply_run import finished
    from rigaudit.orchestrator.change.sections import apply_section
    from rigaudit.orchestrator.ui.lines import apply_lines

    report = _run(_host(), Plan(steps=(_step("a.first"),)), ram / "j.jsonl", ["no"])
    section = apply_section(report, "now", {})
    assert "- `a.first` (runtime, on the host): declined\n" in section + "\n", section
    assert section.count("declined") == 1, section
    assert "  [--] a.first: declined" in apply_lines(finished(report))
