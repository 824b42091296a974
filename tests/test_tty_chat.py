"""The chat at a real (pseudo) terminal: an approval answered with Ctrl-D or Ctrl-C, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.apply import CPUIDLE, NUMA, read
from tests.support.tty import CTRL_C, CTRL_D, spawn

pytestmark = pytest.mark.slow


def _chat(tmp_path: Path, seed_dir: Path):  # type: ignore[no-untyped-def]
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    args = ["chat", "--snapshot", str(seed_dir), "--into", str(tmp_path / "copy"), "--no-transcript", "--no-live"]
    return spawn(args, env=env, cols=240)  # wide enough that a long tmp path (pytest-xdist) stays on one line


def test_ctrl_d_declines_and_the_conversation_goes_on_then_ctrl_c_ends_it(tmp_path: Path, seed_dir: Path) -> None:
    tty = _chat(tmp_path, seed_dir)
    at = tty.expect("you> ")
    tty.send("/apply runtime\n")
    at = tty.expect("Apply numa.balancing?", after=at)  # the plan's first runtime step: it buys the most
    assert f"where: the snapshot copy {tmp_path / 'copy'}" in tty.words
    tty.send("y\n")
    at = tty.expect("Apply ", after=at)
    tty.send(CTRL_D)  # no to this step, nothing more asked in this apply
    at = tty.expect("you> ", after=at)
    assert "refused" in tty.text[:at] and "declined" in tty.text[:at]
    assert read(tmp_path / "copy", NUMA) == b"0\n" and read(tmp_path / "copy", CPUIDLE[0]) == b"0\n"
    tty.send("/apply runtime\n")
    tty.expect("Apply ", after=at)
    tty.send(CTRL_C)  # ends the whole conversation, once what was done is said
    code = tty.wait()
    out = tty.words  # a long journal path (pytest-xdist, a deep checkout) wraps the last line
    assert code == 130, out
    assert "EOFError" not in out and "Traceback" not in out
    assert "Interrupted (Ctrl-C)" in out
