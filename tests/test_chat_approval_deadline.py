"""Every approval question has a deadline (``--approval-timeout``): at a real (pseudo) terminal nobody
answering is "no", said in one line, recorded as declined (apply's journal, the chat's transcript), and
nothing more of that run or request is asked; the chat goes on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigaudit.tools.actions.journal import read_journal
from tests.support.apply import NUMA, mini_seed, read, seed_plan
from tests.support.tty import CTRL_D, spawn

pytestmark = pytest.mark.slow

TOLD = "no answer within 2 s: no"


def _env(tmp_path: Path) -> dict[str, str]:
    return {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache")}


def test_an_unanswered_apply_step_is_no_said_once_and_journaled(tmp_path: Path) -> None:
    mini = mini_seed(tmp_path / "mini")
    plan = tmp_path / "plan.json"
    plan.write_text(seed_plan().model_dump_json())
    args = ["apply", "--snapshot", str(mini), "--into", str(tmp_path / "copy"), "--plan", str(plan), "--approval-timeout", "2"]
    args += ["--journal", str(tmp_path / "j.jsonl"), "--no-transcript", "--report", str(tmp_path / "r.md")]
    tty = spawn(args, env=_env(tmp_path), cols=120)
    at = tty.expect("Apply numa.balancing?")
    at = tty.expect("(no; no answer within 2 s: no)", after=at)  # the question says its deadline
    tty.expect(TOLD, after=at)
    code = tty.wait()
    out = tty.words
    assert code == 3 and "Traceback" not in out, out  # not approved
    assert out.count(TOLD) == 2 and "Apply power.cstates?" not in out  # said once (the question states it); nothing more asked
    assert "numa.balancing: declined (no answer in time)" in out
    assert "apply stopped: no answer in time" in out
    assert read(tmp_path / "copy", NUMA) == b"1\n"  # unchanged
    entries, _ = read_journal(tmp_path / "j.jsonl")
    (approval,) = [e.approval for e in entries if e.kind == "approval"]
    assert approval is not None and approval.step_id == "numa.balancing" and approval.decision == "no"
    assert "no answer in time" in approval.note


def test_an_unanswered_chat_step_is_no_and_the_conversation_goes_on(tmp_path: Path, seed_dir: Path) -> None:
    transcript = tmp_path / "chat.jsonl"
    args = ["chat", "--snapshot", str(seed_dir), "--into", str(tmp_path / "copy"), "--no-live"]
    args += ["--transcript", str(transcript), "--approval-timeout", "2"]
    tty = spawn(args, env=_env(tmp_path), cols=120)
    at = tty.expect("you> ")
    tty.send("/apply runtime\n")
    at = tty.expect("Apply numa.balancing?", after=at)
    at = tty.expect(TOLD, after=at)
    at = tty.expect("you> ", after=at)  # the conversation goes on
    tty.send(CTRL_D)
    code = tty.wait()
    out = tty.words
    assert code == 0 and "Traceback" not in out, out
    assert out.count(TOLD) == 2  # the question and its one line; that apply asked nothing more
    assert read(tmp_path / "copy", NUMA) == b"1\n"  # nothing applied
    events = [json.loads(line) for line in transcript.read_text().splitlines() if line.strip()]
    decided = [e for e in events if e.get("type") == "approval"]
    assert decided and decided[0]["decision"] == "no" and "no answer in time" in decided[0]["note"], decided
