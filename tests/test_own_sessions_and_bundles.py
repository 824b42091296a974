"""Two small mistakes of issue 34: a share bundle given as a snapshot, and `last` on an account people share."""

from __future__ import annotations

import gzip
import os
from datetime import datetime
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.schema.events.session import SessionEnded, SessionStarted
from rigaudit.transcripts.errors import TranscriptError
from rigaudit.transcripts.store import default_transcript_path, find_transcript
from rigaudit.transcripts.writer import TranscriptWriter


def test_a_share_bundle_given_as_a_snapshot_says_how_to_unpack_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bundle = tmp_path / "gpu-07.tar.gz"
    bundle.write_bytes(gzip.compress(b"a tar stream"))
    assert main(["audit", "--snapshot", str(bundle), "--no-live", "--no-transcript"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert "a share bundle" in line and "tar -xzf gpu-07.tar.gz" in line and "no such" not in line


def _session(when: datetime, owner: int | None = None) -> Path:
    path = default_transcript_path("audit", now=when)
    with TranscriptWriter(path) as writer:
        writer(SessionStarted(t=1.0, command="audit", host="gpu-node"))
        writer(SessionEnded(t=2.0))
    if owner is not None:
        os.lchown(path, owner, owner)
    return path


@pytest.mark.skipif(os.geteuid() != 0, reason="gives a file to another user (root only)")
def test_last_is_the_running_users_own_newest_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "shared-state"))  # one state folder for several people
    mine = _session(datetime(2026, 1, 1, 10, 0, 0))
    _session(datetime(2026, 1, 1, 11, 0, 0), owner=65534)  # another person's, newer
    assert find_transcript("last") == mine


@pytest.mark.skipif(os.geteuid() != 0, reason="gives a file to another user (root only)")
def test_last_with_only_others_sessions_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "shared-state"))
    theirs = _session(datetime(2026, 1, 1, 11, 0, 0), owner=65534)
    with pytest.raises(TranscriptError, match=f"no transcript of yours .*{theirs.name}, is uid 65534's"):
        find_transcript("last")
    assert find_transcript(theirs.name) == theirs  # by name, another person's session still replays
