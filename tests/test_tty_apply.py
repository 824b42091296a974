"""apply and rollback at a real (pseudo) terminal: short answers, Ctrl-D, Ctrl-C, the target named."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from rigaudit.tools.actions.journal import read_journal
from tests.support import paused_apply
from tests.support.apply import NUMA, mini_seed, read, seed_plan
from tests.support.tty import CTRL_C, CTRL_D, spawn

pytestmark = pytest.mark.slow


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    mini = mini_seed(tmp_path / "mini")
    plan = tmp_path / "plan.json"
    plan.write_text(seed_plan().model_dump_json())
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return mini, plan, env


def _apply(tmp_path: Path, mini: Path, plan: Path, env: dict[str, str], cols: int = 100):  # type: ignore[no-untyped-def]
    args = ["apply", "--snapshot", str(mini), "--into", str(tmp_path / "copy"), "--plan", str(plan)]
    args += ["--journal", str(tmp_path / "j.jsonl"), "--no-transcript", "--report", str(tmp_path / "r.md")]
    return spawn(args, env=env, cols=cols)


def test_short_answers_details_and_ctrl_d(tmp_path: Path, setup: tuple[Path, Path, dict[str, str]]) -> None:
    mini, plan, env = setup
    tty = _apply(tmp_path, mini, plan, env, cols=240)  # a long tmp path (pytest-xdist) stays on one line
    at = tty.expect("Apply numa.balancing?")
    screen = tty.text
    assert f"where: the snapshot copy {tmp_path / 'copy'}" in screen and "this host" not in screen
    tty.send("y\n")  # the short answer rich's choices used to refuse
    at = tty.expect("Apply power.cstates?", after=at)
    tty.send("d\n")
    at = tty.expect("Apply power.cstates?", after=at)
    assert "target: /sys/devices/system/cpu/cpu0/cpuidle/state2/disable" in tty.text
    tty.send("n\n")
    tty.expect("Apply pcie.mrrs?", after=at)
    tty.send(CTRL_D)
    code = tty.wait()
    out = tty.words
    assert code == 3, out
    assert "Traceback" not in out
    assert "[ok] numa.balancing: applied" in out
    assert "power.cstates: declined" in out
    assert "pcie.mrrs: declined (end of input)" in out
    assert "apply stopped: input ended (Ctrl-D)" in out
    assert read(tmp_path / "copy", NUMA) == b"0\n"
    assert "numa.balancing" in (tmp_path / "r.md").read_text()


def test_ctrl_c_at_a_prompt_ends_the_run_at_once_and_says_what_was_applied(
    tmp_path: Path, setup: tuple[Path, Path, dict[str, str]]
) -> None:
    mini, plan, env = setup
    tty = _apply(tmp_path, mini, plan, env)
    at = tty.expect("Apply numa.balancing?")
    tty.send("yes\n")
    tty.expect("Apply power.cstates?", after=at)
    tty.send(CTRL_C)  # the instant it shows: the guard is already in place (tests/test_approval_sigint.py)
    code = tty.wait()
    out = tty.words
    assert code == 130, out
    assert "Traceback" not in out
    assert "[ok] numa.balancing: applied" in out
    assert "not attempted (interrupted (Ctrl-C))" in out
    assert "apply stopped: interrupted (Ctrl-C); 1 step(s) changed before it" in out
    assert "Apply pcie.mrrs?" not in out  # the run did not go on to the next step
    entries, _ = read_journal(tmp_path / "j.jsonl")
    changes = [e for e in entries if e.kind == "change"]
    assert changes and all(e.step_id == "numa.balancing" for e in changes)
    assert {e.state for e in changes} >= {"planned"} and len({e.state for e in changes}) == 2  # each change concluded

    rollback = spawn(["rollback", str(tmp_path / "j.jsonl"), "--snapshot", str(tmp_path / "copy"), "--no-transcript"], env=env)
    rollback.expect("Go ahead: roll back 1 change(s) on the snapshot copy")
    rollback.send(CTRL_D)
    assert rollback.wait() == 3
    assert "not approved (end of input)" in rollback.text and "Traceback" not in rollback.text
    assert read(tmp_path / "copy", NUMA) == b"0\n"

    again = spawn(["rollback", str(tmp_path / "j.jsonl"), "--snapshot", str(tmp_path / "copy"), "--no-transcript"], env=env)
    again.expect("Go ahead: roll back")
    again.send("y\n")
    assert again.wait() == 0, again.text
    assert read(tmp_path / "copy", NUMA) == b"1\n"


def test_ctrl_c_at_the_rollback_prompt_restores_nothing(tmp_path: Path, setup: tuple[Path, Path, dict[str, str]]) -> None:
    mini, plan, env = setup
    tty = _apply(tmp_path, mini, plan, env)
    tty.expect("Apply numa.balancing?")
    tty.send("a\n")  # yes to every remaining runtime step
    assert tty.wait() == 0, tty.text
    rollback = spawn(["rollback", str(tmp_path / "j.jsonl"), "--snapshot", str(tmp_path / "copy"), "--no-transcript"], env=env)
    rollback.expect("Go ahead: roll back")
    rollback.send(CTRL_C)
    assert rollback.wait() == 130
    assert "Traceback" not in rollback.text and "interrupted" in rollback.text
    assert read(tmp_path / "copy", NUMA) == b"0\n"


def test_ctrl_c_while_working_still_says_what_was_applied(tmp_path: Path, setup: tuple[Path, Path, dict[str, str]]) -> None:
    mini, plan, env = setup
    fifo = tmp_path / "pause"
    os.mkfifo(fifo)
    args = ["apply", "--snapshot", str(mini), "--into", str(tmp_path / "copy"), "--plan", str(plan), "--yes"]
    args += ["--journal", str(tmp_path / "j.jsonl"), "--no-transcript", "--report", str(tmp_path / "r.md")]
    tty = spawn(args, env=env, program=paused_apply.program(fifo, 1))
    with open(fifo, encoding="utf-8") as handle:  # the apply stops after its first step, between two changes
        assert handle.read().startswith("paused after 1")
    # Ctrl-C as the terminal sends it, to the foreground process group, but generated before kill returns:
    # a ^C typed into the pty reaches the line discipline's worker later, and under load that was after the
    # paused step went on, so the run had applied every step before the interrupt came (nothing left "not
    # attempted"). Pending here, it is taken before the apply runs another line, whenever the step goes on.
    os.killpg(os.getpgid(tty.pid), signal.SIGINT)
    with open(fifo, "w", encoding="utf-8"):  # let the paused step go on
        pass
    code = tty.wait()
    out = tty.words
    assert code == 130, out
    assert "Traceback" not in out
    assert "[ok] numa.balancing: applied" in out and "apply stopped: interrupted (Ctrl-C)" in out
    assert "not attempted (interrupted (Ctrl-C))" in out
    assert "numa.balancing" in (tmp_path / "r.md").read_text()
    assert read(tmp_path / "copy", NUMA) == b"0\n"
