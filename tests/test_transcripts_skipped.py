"""``transcripts list`` says what it skipped: an entry named like a transcript that is not a regular file (a FIFO,
a socket, a folder, a symbolic link) is one line saying what it is, and is never opened, nor followed."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.schema.events.session import SessionEnded, SessionStarted
from rigaudit.transcripts.errors import TranscriptError
from rigaudit.transcripts.store import default_transcript_path, find_transcript, list_transcripts
from rigaudit.transcripts.writer import TranscriptWriter


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    real = default_transcript_path("audit")
    with TranscriptWriter(real) as writer:
        writer(SessionStarted(t=1000.0, command="audit", host="gpu-node"))
        writer(SessionEnded(t=1002.0, exit_code=0))
    folder = real.parent
    os.mkfifo(folder / "pipe.jsonl")
    here = os.getcwd()
    with socket.socket(socket.AF_UNIX) as sock:
        os.chdir(folder)  # bound by a relative name: a socket's path has room for 107 bytes, a test's folder may not
        try:
            sock.bind("sock.jsonl")
        finally:
            os.chdir(here)
    (folder / "folder.jsonl").mkdir()
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes(real.read_bytes())
    (folder / "link.jsonl").symlink_to(outside)
    (folder / "dangling.jsonl").symlink_to(tmp_path / "gone.jsonl")
    (folder / "notes.txt").write_text("not named like a transcript")
    return folder


def test_every_entry_that_is_not_a_file_is_said_and_never_opened(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    real_open = os.open

    def recording_open(path: str | os.PathLike[str], *args: object, **kwargs: object) -> int:
        opened.append(os.fspath(path))
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", recording_open)
    infos = {i.path.name: i.error for i in list_transcripts()}
    [audit] = [name for name in infos if "-audit-" in name]
    assert infos.pop(audit) is None
    assert infos == {
        "pipe.jsonl": "a FIFO: skipped, never opened",
        "sock.jsonl": "a socket: skipped, never opened",
        "folder.jsonl": "a directory: skipped, never opened",
        "link.jsonl": "a symbolic link: skipped, never opened",
        "dangling.jsonl": "a symbolic link: skipped, never opened",
    }
    assert not [p for p in opened if Path(p).name in infos]
    assert not [p for p in opened if "elsewhere" in p or "gone" in p]


def test_the_list_says_each_one_and_counts_them(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["transcripts", "list"]) == 0
    out = capsys.readouterr().out
    for name, kind in (("pipe", "a FIFO"), ("sock", "a socket"), ("folder", "a directory"), ("link", "a symbolic link")):
        [line] = [line for line in out.splitlines() if f"{name}.jsonl" in line]
        assert f"{name}.jsonl ({kind}: skipped, never opened)" in line
    assert "notes.txt" not in out
    assert f"(1 in {store}, 5 skipped: not a regular file;" in out


def test_a_name_finds_only_a_transcript(store: Path) -> None:
    assert find_transcript("last").name.endswith(".jsonl") and "-audit-" in find_transcript("last").name
    assert "-audit-" in find_transcript("audit").name
    with pytest.raises(TranscriptError, match=r"no transcript .* matches"):
        find_transcript("pipe")
