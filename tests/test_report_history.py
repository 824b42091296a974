"""system-improve.md is a history of one machine: earlier audits kept, other machines' plans and reports refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.hosts.identity import HostIdentity, machine_digest, product_digest
from rigaudit.orchestrator.report.document import ReportRefused, append_section, archive_name, choose_report, report_host
from tests.conftest import SEED
from tests.support.apply import mini_seed, seed_plan


def _audit(*args: str) -> int:
    return main(["audit", "--snapshot", str(SEED), "--no-transcript", "--no-live", *args])


def test_identity_prefers_machine_id_then_product_uuid_then_name() -> None:
    a = HostIdentity("gpu01", machine="1" * 16)
    assert a.same_machine(HostIdentity("renamed", machine="1" * 16))
    assert not a.same_machine(HostIdentity("gpu01", machine="2" * 16))
    assert a.same_machine(HostIdentity("GPU01"))  # the other knows no id: names decide
    assert not HostIdentity("x", product="3" * 16).same_machine(HostIdentity("x", product="4" * 16))
    assert HostIdentity.parse("gpu01", a.token()) == a
    assert machine_digest(b"0123456789abcdef0123456789abcdef\n") and not machine_digest(b"uninitialized\n")
    assert not product_digest(b"00000000-0000-0000-0000-000000000000")
    assert "0123456789abcdef" not in HostIdentity("n", machine=machine_digest(b"0123456789abcdef0123456789abcdef")).token()


def test_a_new_audit_keeps_the_earlier_report_and_its_applied_changes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "system-improve.md"
    assert _audit("--report", str(report)) == 0
    first = report.read_text()
    assert report_host(report) == HostIdentity("pve-gpu01")
    append_section(
        report, "Applied changes", "### apply now (`snapshot:x`)\n\nkernel.numa_balancing: 1 -> 0", host=HostIdentity("pve-gpu01")
    )
    applied = report.read_text()
    assert "### apply now (`snapshot:x`) on pve-gpu01" in applied  # the section names its host
    capsys.readouterr()
    assert _audit("--report", str(report)) == 0
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("system-improve.") and p.name != "system-improve.md"]
    assert len(kept) == 1 and kept[0].read_text() == applied
    assert kept[0].name.startswith("system-improve.2") and kept[0].name.endswith("Z.md")
    new = report.read_text()
    assert f"[{kept[0].name}]({kept[0].name})" in new and "kernel.numa_balancing: 1 -> 0" not in new
    assert first.splitlines()[0] == new.splitlines()[0]
    assert "earlier report is kept as" in capsys.readouterr().out


def test_a_report_of_another_machine_is_refused_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "system-improve.md"
    report.write_text("# System improvement plan: gpu-node-7\n\n## Applied changes\n\n- precious\n")
    assert _audit("--report", str(report)) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "\n" not in err and "gpu-node-7" in err and "pve-gpu01" in err
    assert "Problems and unknowns" not in captured.out  # nothing was audited
    assert report.read_text().endswith("- precious\n")
    with pytest.raises(ReportRefused, match=r"gpu-node-7.*pve-gpu01"):
        append_section(report, "Validation", "x", host=HostIdentity("pve-gpu01"))


def test_a_file_that_is_not_a_report_is_never_replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("my own notes\n")
    assert _audit("--report", str(notes)) == 2
    assert "not a rigaudit report" in capsys.readouterr().err and notes.read_text() == "my own notes\n"


def test_a_directory_or_unwritable_place_is_refused_before_the_audit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _audit("--report", str(tmp_path)) == 2
    assert _audit("--json", str(tmp_path)) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all("is a directory" in line for line in err)


def test_apply_refuses_a_plan_made_on_another_machine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    audit = tmp_path / "audit.json"
    assert _audit("--json", str(audit)) == 0
    data = json.loads(audit.read_text())
    data["host"]["name"] = "gpu-node-7"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(data))
    capsys.readouterr()
    copy = tmp_path / "copy"
    args = ["apply", "--snapshot", str(SEED), "--into", str(copy), "--yes", "--no-transcript", "--journal", str(tmp_path / "j")]
    assert main([*args, "--plan", str(other)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "gpu-node-7" in err and "pve-gpu01" in err
    assert not copy.exists() and not (tmp_path / "j").exists()


def test_apply_does_not_append_to_another_machines_report_in_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    mini = mini_seed(tmp_path / "mini")
    plan = tmp_path / "plan.json"
    plan.write_text(seed_plan().model_dump_json())
    theirs = "# System improvement plan: gpu-node-7\n\n## Applied changes\n\n_Not yet done._\n"
    (tmp_path / "system-improve.md").write_text(theirs)
    args = ["apply", "--snapshot", str(mini), "--into", str(tmp_path / "copy"), "--plan", str(plan), "--yes"]
    assert main([*args, "--no-transcript", "--no-live", "--journal", str(tmp_path / "j"), "--only", "numa.balancing"]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "system-improve.md").read_text() == theirs
    assert "gpu-node-7" in out and "nothing appended" in out
    with pytest.raises(ReportRefused, match="gpu-node-7"):
        choose_report(tmp_path / "system-improve.md", HostIdentity("pve-gpu01"))


def test_archive_names_say_when_and_never_collide(tmp_path: Path) -> None:
    report = tmp_path / "system-improve.md"
    first = archive_name(report, "2026-11-27T09:14:03Z")
    assert first.name == "system-improve.20261127T091403Z.md"
    first.write_text("x")
    assert archive_name(report, "2026-11-27T09:14:03Z").name == "system-improve.20261127T091403Z-2.md"


def test_a_report_a_server_benchmark_started_takes_any_machines_sections(tmp_path: Path) -> None:
    report = tmp_path / "system-improve.md"
    append_section(report, "Benchmark comparison", "### inference at http://127.0.0.1:30000")  # no machine of its own
    assert report_host(report) is not None and report_host(report).unnamed  # type: ignore[union-attr]
    append_section(report, "Validation", "### P2P", host=HostIdentity("gpu01"))
    assert "### P2P on gpu01" in report.read_text()
    legacy = tmp_path / "old.md"
    legacy.write_text("## Benchmark comparison\n\n- before\n")  # what an older rigaudit's bench --report began
    assert choose_report(legacy, HostIdentity("gpu01")) == (legacy, "")
