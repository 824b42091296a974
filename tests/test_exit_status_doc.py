"""One flag, one meaning: ``--fail-on`` exits the same in ``audit`` and ``check``, as docs/exit-status.md says."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.orchestrator import cli
from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.gate import PROBLEM

DOC = Path(__file__).resolve().parents[1] / "docs" / "exit-status.md"


def test_fail_on_exits_the_same_in_audit_and_check(seed_dir: Path, tmp_path: Path) -> None:
    audit = main(
        [
            "audit",
            "--snapshot",
            str(seed_dir),
            "--no-live",
            "--no-transcript",
            "--json",
            str(tmp_path / "a.json"),
            "--fail-on",
            "low",
        ]
    )
    check = main(["check", "--snapshot", str(seed_dir), "-q", "--fail-on", "low"])
    assert audit == check == PROBLEM


def test_the_table_says_what_the_commands_do() -> None:
    rows = [line for line in DOC.read_text(encoding="utf-8").splitlines() if "`--fail-on` was found" in line]
    assert len(rows) == 1 and rows[0].startswith(f"| {PROBLEM} |") and "`audit`" in rows[0] and "`check`" in rows[0]


def test_every_command_exits_130_on_ctrl_c_as_the_table_says(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "check_outputs", interrupted)  # Ctrl-C as the command starts its work
    for argv in (["checks"], ["chat", "--demo"], ["diff", "a", "b"], ["check", "--demo"], ["schema"]):
        assert main(argv) == 130, argv
    rows = [line for line in DOC.read_text(encoding="utf-8").splitlines() if line.startswith("| 130 |")]
    assert len(rows) == 1 and rows[0].rstrip(" |").rsplit("| ", 1)[1].startswith("all"), rows
