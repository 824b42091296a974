"""The copy a chat's apply changes on a snapshot: one made ``--into`` a folder is kept, a temporary one is removed
when the chat ends and the last line says so (issue 34: the chat left its copy in a temporary folder)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from rigaudit.orchestrator.change.approval import ScriptedConsole
from rigaudit.orchestrator.cli import build_parser
from rigaudit.orchestrator.commands.chat import run_chat
from rigaudit.tools.schema.events.chat import Message
from rigaudit.tools.schema.events.union import Event

NUMA = Path("files/proc/sys/kernel/numa_balancing")


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary folder the chat makes its copy in, and a working folder and journals of the test's own."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return folder


def _apply(seed: Path, *extra: str) -> list[str]:
    args = build_parser().parse_args(["chat", "--snapshot", str(seed), "--no-live", "--no-transcript", "--yes", *extra])
    events: list[Event] = []
    code = run_chat(args, lines=["/apply runtime"], console=ScriptedConsole([]), interactive=False, consumers=[events.append])
    assert code == 0
    return [e.text for e in events if isinstance(e, Message) and e.role == "system"]


def test_a_temporary_copy_is_removed_when_the_chat_ends(seed_dir: Path, scratch: Path) -> None:
    said = _apply(seed_dir)
    assert list(scratch.iterdir()) == []
    assert any("temporary copy" in line and "is removed" in line and "--into" in line for line in said), said
    assert (seed_dir / NUMA).read_text().strip() == "1"


def test_a_copy_made_into_a_folder_is_kept(seed_dir: Path, scratch: Path, tmp_path: Path) -> None:
    said = _apply(seed_dir, "--into", str(tmp_path / "copy"))
    assert (tmp_path / "copy" / NUMA).read_text().strip() == "0"
    assert f"the changed copy of the snapshot: {tmp_path / 'copy'}" in said and list(scratch.iterdir()) == []
