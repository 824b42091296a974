"""the approver: scripted answers, no TTY without --yes, every decision recorded."""

from __future__ import annotations

import pytest

from rigaudit.orchestrator.change.approval import ScriptedConsole, StepApprover, require_approval
from rigaudit.tools.actions.preview import StepView
from rigaudit.tools.core.errors import NotApprovedError
from rigaudit.tools.schema.events.apply import ApprovalDecided
from rigaudit.tools.schema.events.union import Event


def _view(step_id: str) -> StepView:
    return StepView(
        step_id=step_id,
        title="Disable NUMA balancing",
        where="host",
        changes=("kernel.numa_balancing: 1 -> 0",),
        verify="cat /proc/sys/kernel/numa_balancing",
        revert="sysctl -w kernel.numa_balancing=1",
        details=("why: page migrations stall pinned GPU workers",),
    )


def _gate(answers: list[str], events: list[Event] | None = None) -> tuple[StepApprover, ScriptedConsole]:
    console = ScriptedConsole(answers)
    sink = events if events is not None else []
    approver = StepApprover("hash1", assume_yes=False, interactive=True, console=console, emit=sink.append, who="ana@laptop")
    return approver, console


def test_each_step_is_shown_with_what_where_values_verify_and_revert() -> None:
    approver, console = _gate(["yes"])
    approval = approver.decide(_view("numa.balancing"))
    assert approval.approved and approval.decision == "yes"
    shown = console.shown[0]
    for needle in ("numa.balancing", "where: host", "1 -> 0", "verify:", "revert:", "risk low"):
        assert needle in shown
    console.assert_complete()


def test_details_then_no_is_a_recorded_refusal() -> None:
    events: list[Event] = []
    approver, console = _gate(["details", "n"], events)
    approval = approver.decide(_view("a"))
    assert approval.decision == "no" and not approval.approved
    assert "why: page migrations" in console.shown[1]
    assert len(console.asked) == 2
    decided = [e for e in events if isinstance(e, ApprovalDecided)]
    assert [(e.step_id, e.decision, e.who, e.plan_hash) for e in decided] == [("a", "no", "ana@laptop", "hash1")]


def test_all_approves_the_remaining_steps_without_asking() -> None:
    approver, console = _gate(["all"])
    decisions = [approver.decide(_view(s)).decision for s in ("a", "b", "c")]
    assert decisions == ["all", "all", "all"]
    assert len(console.asked) == 1
    assert [d.step_id for d in approver.decisions] == ["a", "b", "c"]


def test_quit_stops_and_is_recorded() -> None:
    approver, _ = _gate(["q"])
    approval = approver.decide(_view("a"))
    assert approval.decision == "quit" and not approval.approved
    assert approver.quit


def test_an_unknown_answer_is_asked_again() -> None:
    approver, console = _gate(["maybe", "y"])
    assert approver.decide(_view("a")).decision == "yes"
    assert any("answer one of" in text for text in console.shown)


def test_no_terminal_without_yes_refuses_and_never_asks() -> None:
    console = ScriptedConsole([])
    approver = StepApprover("h", assume_yes=False, interactive=False, console=console)
    with pytest.raises(NotApprovedError) as raised:
        approver.decide(_view("a"))
    assert raised.value.exit_code == 3
    assert "no terminal" in str(raised.value) and "\n" not in str(raised.value)
    assert console.asked == []


def test_yes_flag_approves_without_a_terminal_and_says_so() -> None:
    events: list[Event] = []
    approver = StepApprover("h", assume_yes=True, interactive=False, emit=events.append, who="ci@runner")
    approval = approver.decide(_view("a"))
    assert approval.decision == "auto" and approval.note == "--yes" and approval.approved
    assert isinstance(events[0], ApprovalDecided) and events[0].decision == "auto"


def test_require_approval_gates_a_benchmark() -> None:
    console = ScriptedConsole(["no"])
    with pytest.raises(NotApprovedError, match="not approved"):
        require_approval("load 8 GPUs for 60 s", ["nccl all_reduce_perf"], assume_yes=False, interactive=True, console=console)
    with pytest.raises(NotApprovedError, match="no terminal"):
        require_approval("load 8 GPUs", [], assume_yes=False, interactive=False)
    events: list[Event] = []
    approval = require_approval("load 8 GPUs", [], assume_yes=True, emit=events.append)
    assert approval.decision == "auto" and len(events) == 1


def test_require_approval_does_not_offer_yes_to_all() -> None:
    console = ScriptedConsole(["all", "yes"])
    approval = require_approval("bench", ["x"], assume_yes=False, interactive=True, console=console)
    assert approval.decision == "yes"
    assert console.asked[0] == "Go ahead: bench?"
    assert any("answer one of" in text for text in console.shown)
