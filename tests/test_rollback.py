"""rollback: newest first, verified, and correct for an apply that was killed half-way."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.actions.journal import Journal, read_journal
from rigaudit.tools.actions.rollback import pending_changes, rollback
from rigaudit.tools.actions.targets import ValueFileTarget, refusal
from tests.support import paused_apply
from tests.support.apply import CPUIDLE, GPUS, NUMA, MemoryHost, devctl, fast_tmp, mini_seed, read, seed_plan, tree_digest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def ram(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for folder in fast_tmp(tmp_path):
        monkeypatch.setenv("XDG_STATE_HOME", str(folder / "state"))
        monkeypatch.chdir(folder)
        yield folder


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_an_apply_killed_between_steps_rolls_back_byte_for_byte(ram: Path) -> None:
    mini = mini_seed(ram / "mini")
    pristine = tree_digest(mini)
    plan = ram / "plan.json"
    plan.write_text(seed_plan().model_dump_json())
    fifo = ram / "pause"
    os.mkfifo(fifo)
    journal = ram / "j.jsonl"
    argv = [sys.executable, *paused_apply.program(fifo, 2), "apply", "--snapshot", str(mini), "--into", str(ram / "copy")]
    argv += ["--plan", str(plan), "--yes", "--journal", str(journal), "--no-transcript"]
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    paused = threading.Event()

    def unblock_if_it_dies() -> None:  # if apply exits before pausing, do not leave the test blocked on the FIFO
        proc.wait()
        if not paused.is_set():
            with open(fifo, "w"):
                pass

    threading.Thread(target=unblock_if_it_dies, daemon=True).start()
    with open(fifo) as handle:
        said = handle.read()
    paused.set()
    try:
        assert said == "paused after 2\n", proc.communicate(timeout=30)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    copy = ram / "copy"
    # Killed after numa.balancing and power.cstates, before pcie.mrrs.
    assert read(copy, NUMA) == b"0\n" and read(copy, CPUIDLE[5]) == b"1\n"
    assert devctl(copy, GPUS[0]) == 0x283F
    entries, _ = read_journal(journal)
    assert {e.step_id for e in entries if e.state == "planned"} == {"numa.balancing", "power.cstates"}

    assert main(["rollback", str(journal), "--snapshot", str(copy), "--yes", "--no-transcript"]) == 0
    assert tree_digest(copy) == pristine


def test_a_planned_change_without_an_outcome_is_restored(ram: Path) -> None:
    """The apply died after journaling and writing, before recording the outcome."""
    host = MemoryHost({NUMA: b"1\n", CPUIDLE[0]: b"0\n"})
    numa = ValueFileTarget(path=NUMA, value="0", label="kernel.numa_balancing")
    idle = ValueFileTarget(path=CPUIDLE[0], value="1")
    with Journal.create(ram / "j.jsonl") as journal:
        journal.append(kind="session", host="memory", source="memory")
        first = journal.append(kind="change", state="planned", step_id="numa", target=numa, before="1\n", after="0\n")
        journal.append(kind="change", state="verified", ref=first.seq, step_id="numa", target=numa, after="0\n")
        journal.append(kind="change", state="planned", step_id="idle", target=idle, before="0\n", after="1\n")
    host.files[NUMA] = b"0\n"
    host.files[CPUIDLE[0]] = b"1\n"  # written, but the outcome never reached the journal
    entries, _ = read_journal(ram / "j.jsonl")
    assert [o is None for _, o in pending_changes(entries)] == [False, True]

    async def undo() -> list[str]:
        with Journal.reopen(ram / "j.jsonl") as journal:
            return [r.outcome for r in await rollback(host, entries, journal)]

    assert anyio.run(undo) == ["restored", "restored"]
    assert host.files == {NUMA: b"1\n", CPUIDLE[0]: b"0\n"}
    assert host.writes == [CPUIDLE[0], NUMA]  # newest first
    after, _ = read_journal(ram / "j.jsonl")
    assert [e.state for e in after[-2:]] == ["reverted", "reverted"]


def test_a_planned_change_that_never_happened_is_harmless_to_restore(ram: Path) -> None:
    host = MemoryHost({NUMA: b"1\n"})
    numa = ValueFileTarget(path=NUMA, value="0", label="kernel.numa_balancing")
    with Journal.create(ram / "j.jsonl") as journal:
        journal.append(kind="change", state="planned", step_id="numa", target=numa, before="1\n", after="0\n")
    results = anyio.run(rollback, host, read_journal(ram / "j.jsonl")[0], None)
    assert [(r.outcome, r.message) for r in results] == [("restored", "already at the value before")]
    assert host.writes == [] and host.files[NUMA] == b"1\n"


def test_same_target_changed_twice_comes_back_to_the_first_value(ram: Path) -> None:
    host = MemoryHost({NUMA: b"2\n"})
    numa = ValueFileTarget(path=NUMA, value="0", label="kernel.numa_balancing")
    with Journal.create(ram / "j.jsonl") as journal:
        journal.append(kind="change", state="planned", step_id="a", target=numa, before="1\n", after="2\n")
        journal.append(kind="change", state="planned", step_id="b", target=numa, before="2\n", after="0\n")
    host.files[NUMA] = b"0\n"
    anyio.run(rollback, host, read_journal(ram / "j.jsonl")[0], None)
    assert host.files[NUMA] == b"1\n"


def test_a_restore_that_does_not_verify_is_reported(ram: Path) -> None:
    host = MemoryHost({NUMA: b"0\n"}, mangle={NUMA: b"7\n"})
    numa = ValueFileTarget(path=NUMA, value="0", label="kernel.numa_balancing")
    with Journal.create(ram / "j.jsonl") as journal:
        journal.append(kind="change", state="planned", step_id="numa", target=numa, before="1\n", after="0\n")
    results = anyio.run(rollback, host, read_journal(ram / "j.jsonl")[0], None)
    assert results[0].outcome == "failed" and "read 7, wanted 1" in results[0].message


@pytest.mark.parametrize("value", ["99999999", "-1", "0x10", "1e9"])
def test_a_sysctl_value_outside_the_rule_s_range_is_refused(value: str) -> None:
    """#35 item 2: a plan or journal's value is checked against the range the rule declares."""
    why = refusal(ValueFileTarget(path="/proc/sys/vm/nr_hugepages", value=value, label="vm.nr_hugepages"))
    assert why is not None and "outside the range" in why and "\n" not in why
    assert refusal(ValueFileTarget(path="/proc/sys/vm/nr_hugepages", value="1024", label="vm.nr_hugepages")) is None
