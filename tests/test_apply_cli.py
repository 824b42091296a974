"""`rigaudit apply` / `rollback` on a copy of (a small part of) the seed: the whole path a person takes."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.actions.journal import read_journal
from tests.support.apply import CPUIDLE, GPUS, NUMA, devctl, fast_tmp, mini_seed, read, seed_plan, tree_digest


@pytest.fixture
def ram(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for folder in fast_tmp(tmp_path):
        monkeypatch.setenv("XDG_STATE_HOME", str(folder / "state"))
        monkeypatch.chdir(folder)
        monkeypatch.setattr("rigaudit.orchestrator.change.approval.is_interactive", lambda: False)
        yield folder


@pytest.fixture
def mini(ram: Path) -> Path:
    return mini_seed(ram / "mini")


@pytest.fixture
def plan_file(ram: Path) -> Path:
    path = ram / "plan.json"
    path.write_text(seed_plan().model_dump_json())
    return path


def _apply(mini: Path, dst: Path, plan: Path, *extra: str) -> int:
    return main(["apply", "--snapshot", str(mini), "--into", str(dst), "--plan", str(plan), "--no-transcript", *extra])


def test_no_terminal_and_no_yes_changes_nothing_and_exits_3(
    ram: Path, mini: Path, plan_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _apply(mini, ram / "copy", plan_file, "--journal", str(ram / "j.jsonl"))
    assert code == 3
    err = capsys.readouterr().err.strip()
    assert err.startswith("rigaudit: no terminal to ask for approval and no --yes") and "\n" not in err
    assert not (ram / "copy").exists() and not (ram / "j.jsonl").exists()


def test_apply_into_a_copy_then_rollback_restores_it_byte_for_byte(
    ram: Path, mini: Path, plan_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pristine = tree_digest(mini)
    (ram / "system-improve.md").write_text("# System improvement plan: pve-gpu01\n\n## Applied changes\n\n_Not yet done._\n")
    journal = ram / "j.jsonl"
    assert _apply(mini, ram / "copy", plan_file, "--yes", "--journal", str(journal)) == 0
    out = capsys.readouterr().out
    assert "kernel.numa_balancing: 1 -> 0 [verified]" in out
    assert "128 files /sys/devices/system/cpu/cpu*/cpuidle/state2/disable: 0 -> 1 [verified]" in out
    assert "power.scaling_driver: deferred (needs a reboot" in out
    assert "pcie.acs: elsewhere (runs on the hypervisor)" in out
    copy = ram / "copy"
    assert read(copy, NUMA) == b"0\n" and {read(copy, p) for p in CPUIDLE} == {b"1\n"}
    assert {devctl(copy, g) for g in GPUS} == {0x583F}
    assert tree_digest(mini) == pristine  # the source is never touched
    report = (ram / "system-improve.md").read_text()
    assert "_Not yet done._" not in report
    assert "| numa.balancing | kernel.numa_balancing | 1 | 0 | verified |" in report
    assert "| power.cstates | 128 files /sys/devices/system/cpu/cpu*/cpuidle/state2/disable | 0 | 1 | verified |" in report
    assert f"`rigaudit rollback {journal} --snapshot {copy}`" in report

    assert main(["rollback", str(journal), "--snapshot", str(copy), "--yes", "--no-transcript"]) == 0
    out = capsys.readouterr().out
    assert "rollback: 137 restored and verified, 0 failed" in out
    assert tree_digest(copy) == pristine
    assert "### rollback" in (ram / "system-improve.md").read_text()
    # A second rollback finds nothing left to do.
    assert main(["rollback", str(journal), "--snapshot", str(copy), "--yes", "--no-transcript"]) == 0
    assert "nothing to restore" in capsys.readouterr().out


def test_rollback_needs_approval_and_the_right_host(
    ram: Path, mini: Path, plan_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = ram / "j.jsonl"
    assert _apply(mini, ram / "copy", plan_file, "--yes", "--journal", str(journal), "--only", "numa.balancing") == 0
    capsys.readouterr()
    assert main(["rollback", str(journal), "--snapshot", str(ram / "copy"), "--no-transcript"]) == 3
    assert read(ram / "copy", NUMA) == b"0\n"
    assert main(["rollback", str(journal), "--yes", "--no-transcript"]) == 2
    assert "roll it back with --snapshot" in capsys.readouterr().err
    other = ram / "other"
    shutil.copytree(ram / "copy", other)
    manifest = json.loads((other / "snapshot.json").read_text())
    (other / "snapshot.json").write_text(json.dumps({**manifest, "hostname": "someone-else"}))
    assert main(["rollback", str(journal), "--snapshot", str(other), "--yes", "--no-transcript"]) == 2
    assert "written on pve-gpu01, not someone-else" in capsys.readouterr().err
    assert read(ram / "copy", NUMA) == b"0\n"


def test_emitted_script_holds_what_was_not_run_here(ram: Path, mini: Path, plan_file: Path) -> None:
    script = ram / "elsewhere.sh"
    assert _apply(mini, ram / "copy", plan_file, "--yes", "--journal", str(ram / "j.jsonl"), "--emit-script", str(script)) == 0
    text = script.read_text()
    assert text.startswith("#!/usr/bin/env bash\n") and "\nset -euo pipefail\n" in text
    acs = text[text.index("# ---- [P0] pcie.acs") :]
    acs = acs[: acs.index("\n\n")] if "\n\n" in acs else acs
    assert "on the hypervisor" in acs
    assert "# Before: setpci -s 0000:02:00.0 ECAP_ACS+0x6.w" in acs
    # runtime work for the hypervisor, but the address is this machine's view: never live there
    assert "\n# $ setpci -s 0000:02:00.0 ECAP_ACS+0x6.w=0000:001c\n" in acs + "\n"
    assert "not the hypervisor's: find each device's address there" in acs
    assert "# Verify: setpci -s 0000:02:00.0 ECAP_ACS+6.w" in acs and "# Revert: " in acs
    deferred = text[text.index("# ---- [P1] power.scaling_driver") :]
    assert "\n# add amd_pstate=active to the boot line\n# $ proxmox-boot-tool refresh\n" in deferred  # commented out
    assert "numa.balancing" not in text  # applied here: not in the script
    assert script.stat().st_mode & 0o100
    if shutil.which("bash"):
        assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0


def test_usage_errors_are_one_line_and_exit_2(ram: Path, mini: Path, plan_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (ram / "full").mkdir()
    (ram / "full" / "x").write_text("x")
    assert _apply(mini, ram / "full", plan_file, "--yes") == 2
    assert "not empty" in capsys.readouterr().err
    assert main(["apply", "--snapshot", str(mini), "--plan", str(plan_file), "--yes", "--no-transcript"]) == 2
    assert "go together" in capsys.readouterr().err
    assert _apply(mini, ram / "copy", plan_file, "--yes", "--only", "no.such") == 2
    assert "no such step: no.such" in capsys.readouterr().err
    (ram / "bad.json").write_text("{}")
    assert _apply(mini, ram / "copy", ram / "bad.json", "--yes") == 2
    assert "not an `audit --json` result" in capsys.readouterr().err
    assert main(["rollback", str(ram / "missing.jsonl"), "--no-transcript"]) == 2
    assert not (ram / "copy").exists()


def test_persist_through_the_cli_is_journaled_and_rolled_back(ram: Path, mini: Path, plan_file: Path) -> None:
    pristine = tree_digest(mini)
    journal = ram / "j.jsonl"
    assert _apply(mini, ram / "copy", plan_file, "--yes", "--persist", "--journal", str(journal)) == 0
    assert not (ram / "copy" / "files" / "etc" / "modules-load.d").exists()  # no module step in this plan
    assert b"kernel.numa_balancing = 0" in read(ram / "copy", "/etc/sysctl.d/90-rigaudit.conf")
    persisted = [e for e in read_journal(journal)[0] if e.step_id == "persist" and e.state == "planned"]
    assert len(persisted) == 3 and all(e.before is None for e in persisted)
    assert main(["rollback", str(journal), "--snapshot", str(ram / "copy"), "--yes", "--no-transcript"]) == 0
    assert tree_digest(ram / "copy") == pristine


def test_apply_takes_the_demo_as_audit_does(ram: Path, plan_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--demo`` names the same source in apply as in audit: a copy of it is what changes (``--into``)."""
    assert main(["apply", "--demo", "seed", "--plan", str(plan_file), "--no-transcript"]) == 2
    assert "--demo and --into DST go together" in capsys.readouterr().err
    argv = ["apply", "--demo", "seed", "--into", str(ram / "copy"), "--plan", str(plan_file), "--no-transcript"]
    assert main([*argv, "--journal", str(ram / "j.jsonl")]) == 3
    err = capsys.readouterr().err.strip()
    assert err.startswith("rigaudit: no terminal to ask for approval and no --yes") and "\n" not in err
    assert not (ram / "copy").exists()
