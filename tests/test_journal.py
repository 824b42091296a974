"""The journal: append-only JSONL, durable per entry, readable after a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigaudit.tools.actions.journal import (
    JOURNAL_SCHEMA,
    Approval,
    Journal,
    JournalError,
    JournalReadError,
    default_journal_path,
    read_journal,
)
from rigaudit.tools.actions.targets import PciRegisterTarget, ValueFileTarget

NUMA = ValueFileTarget(path="/proc/sys/kernel/numa_balancing", value="0", label="kernel.numa_balancing")


def test_entries_round_trip_with_schema_and_sequence(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with Journal.create(path) as journal:
        journal.append(kind="session", host="h", source="local", plan_hash="abc")
        journal.append(kind="approval", step_id="s", approval=Approval(step_id="s", decision="yes", who="u@m", plan_hash="abc"))
        planned = journal.append(kind="change", state="planned", step_id="s", target=NUMA, before="1\n", after="0\n")
        journal.append(kind="change", state="verified", ref=planned.seq, step_id="s", target=NUMA, after="0\n")
    lines = path.read_text().splitlines()
    assert len(lines) == 4
    assert all(json.loads(line)["schema"] == JOURNAL_SCHEMA for line in lines)
    entries, warnings = read_journal(path)
    assert warnings == []
    assert [e.seq for e in entries] == [1, 2, 3, 4]
    assert entries[2].target == NUMA and entries[2].before == "1\n"
    assert entries[3].ref == 3
    assert entries[1].approval is not None and entries[1].approval.approved


def test_register_targets_survive_the_round_trip(tmp_path: Path) -> None:
    target = PciRegisterTarget(device="0000:03:00.0", capability="exp", offset=8, width=2, value=0x5000, mask=0x7000)
    with Journal.create(tmp_path / "j.jsonl") as journal:
        journal.append(kind="change", state="planned", target=target, before="0x283f")
    entries, _ = read_journal(tmp_path / "j.jsonl")
    assert entries[0].target == target


def test_a_torn_last_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with Journal.create(path) as journal:
        journal.append(kind="change", state="planned", target=NUMA, before="1\n")
    with path.open("a") as handle:
        handle.write('{"schema": "rigaudit.journal/1", "seq": 2, "ki')  # the process died mid-write
    entries, warnings = read_journal(path)
    assert len(entries) == 1
    assert warnings == ["j.jsonl:2: damaged line ignored"]


def test_reopen_continues_the_sequence(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with Journal.create(path) as journal:
        journal.append(kind="session")
        journal.append(kind="session")
    with Journal.reopen(path) as journal:
        entry = journal.append(kind="session")
    assert entry.seq == 3


def test_create_refuses_to_overwrite_a_journal(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with Journal.create(path) as journal:
        journal.append(kind="session")
    with pytest.raises(JournalError, match="already exists"):
        Journal.create(path)


def test_unsynced_entries_reach_disk_on_sync(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    journal = Journal.create(path)
    journal.append(kind="session", sync=False)
    journal.append(kind="session", sync=False)
    journal.sync()
    assert len(path.read_text().splitlines()) == 2
    journal.close()


@pytest.mark.parametrize(
    ("content", "message"),
    [("", "empty"), ("not json\n", "not a rigaudit journal"), ('{"schema": "other/1"}\n', "not a rigaudit journal")],
)
def test_bad_journals_are_one_clear_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text(content)
    with pytest.raises(JournalReadError, match=message):
        read_journal(path)
    with pytest.raises(JournalReadError, match="no such journal"):
        read_journal(tmp_path / "missing.jsonl")


def test_default_path_is_in_the_xdg_state_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    path = default_journal_path()
    assert path.parent == tmp_path / "rigaudit" / "journals"
    assert path.suffix == ".jsonl"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_journal_path().is_relative_to(tmp_path / "home" / ".local" / "state" / "rigaudit" / "journals")
