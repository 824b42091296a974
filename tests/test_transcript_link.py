"""A transcript path that is a link is replaced, never followed (third attack pass: a link planted in a shared
folder made ``--transcript`` overwrite the file it led to)."""

from __future__ import annotations

from pathlib import Path

from rigaudit.transcripts.writer import TranscriptWriter


def test_a_link_at_the_transcript_path_is_replaced_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("unchanged\n")
    path = tmp_path / "t.jsonl"
    path.symlink_to(victim)
    with TranscriptWriter(path):
        pass
    assert victim.read_text() == "unchanged\n"
    assert not path.is_symlink() and path.read_text().startswith('{"transcript"')
