"""Attacks on the approval deadline (apply's and the chat's ``--approval-timeout``): a limit no timer can hold is a
usage error, and a question asked with one never leaves a dead timer thread (a traceback) behind."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from rigaudit.orchestrator.change.timed_prompt import read_line
from rigaudit.orchestrator.cli import main

H200 = Path(__file__).parent / "fixtures" / "h200x2-vm"


@pytest.mark.parametrize("command", ["apply", "chat"])
@pytest.mark.parametrize("value", ["1e300", "1e10", "nan", "-1", "inf"])
def test_a_deadline_no_timer_can_hold_is_a_usage_error(
    command: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [command, "--snapshot", str(H200), "--into", str(tmp_path / "copy"), "--approval-timeout", value]
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "--approval-timeout" in err and "Traceback" not in err
    assert not (tmp_path / "copy").exists()


def test_a_huge_deadline_reads_the_answer_without_a_dying_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    died: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: died.append(args.exc_value))
    read, write = os.pipe()
    try:
        os.write(write, b"yes\n")
        assert read_line(read, 1e300) == "yes"
    finally:
        os.close(read)
        os.close(write)
    assert died == []
