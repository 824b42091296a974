"""`replay last` means the newest session of the kind the subcommand needs."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.schema.events.session import SessionEnded, SessionStarted, Warning_
from rigaudit.transcripts.store import AUDIT_COMMANDS, AUDIT_MARK, default_transcript_path, find_transcript
from rigaudit.transcripts.writer import TranscriptWriter
from tests.conftest import SEED


def test_rediagnose_last_passes_over_a_newer_bench_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    audited = default_transcript_path("audit", now=datetime(2026, 1, 1, 10, 0, 0))
    assert main(["audit", "--snapshot", str(SEED), "--no-live", "--transcript", str(audited), "--areas", "numa"]) == 0
    bench = default_transcript_path("bench", now=datetime(2099, 1, 1, 10, 0, 0))
    apply_without_audit = default_transcript_path("apply", now=datetime(2098, 1, 1, 10, 0, 0))
    for path, command in ((bench, "bench"), (apply_without_audit, "apply")):
        with TranscriptWriter(path) as writer:
            writer(SessionStarted(t=4e9, command=command, host="gpu-node"))
            writer(Warning_(t=4e9 + 1, text="audit_finished is only a word here"))
            writer(SessionEnded(t=4e9 + 2))
    assert find_transcript("last") == bench
    assert find_transcript("last", commands=AUDIT_COMMANDS, holding=AUDIT_MARK) == audited
    capsys.readouterr()
    assert main(["replay", "last", "--rediagnose"]) == 0
    assert f"Re-diagnosing {audited}" in capsys.readouterr().out


def test_no_session_of_the_kind_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    with TranscriptWriter(default_transcript_path("bench")) as writer:
        writer(SessionStarted(command="bench"))
    assert main(["replay", "last", "--rediagnose"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "an audit" in err and "the newest is a bench session" in err
