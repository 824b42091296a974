"""The query commands (diff, checks, policy, schema, transcripts, replay --rediagnose) as events: text from a
crafted transcript shows its control characters as escapes; ``--json`` is the event's document; errors stay one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigaudit.orchestrator.audit.diff import diff_event, diff_json
from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.report.output import warn
from rigaudit.tools.diffing import SideInfo, diff_document, diff_findings
from rigaudit.tools.schema.finding import Finding
from tests.support.query_events import query_events

H200X2 = Path(__file__).resolve().parent / "fixtures" / "transcripts" / "h200x2-audit.jsonl"
ESC = "\x1b]0;owned\x07\x1b[2J"
SHOWN = "\\x1b]0;owned\\x07\\x1b[2J"


@pytest.fixture(scope="module")
def crafted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The H200 recording with terminal control in its file name, its host and a finding's title and observation."""
    lines = []
    for line in H200X2.read_text().splitlines():
        data = json.loads(line)
        if data.get("type") == "session_started":
            data["host"] = f"vm{ESC}"
        findings = [data["finding"]] if data.get("type") == "finding" else data.get("result", {}).get("findings", [])
        for finding in findings:
            if isinstance(finding, dict) and finding.get("check") == "kernel.version":
                finding.update(title=f"Kernel {ESC}", observed=f"6.18{ESC}")
        lines.append(json.dumps(data))
    path = tmp_path_factory.mktemp("crafted") / f"evil{ESC}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _shown_escaped(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and SHOWN in text


@pytest.mark.parametrize(
    "argv",
    [
        ["transcripts", "show", "{crafted}", "--events"],
        ["transcripts", "list", "--dir", "{folder}"],
        ["diff", "{crafted}", str(H200X2)],
        ["replay", "{crafted}", "--rediagnose"],
        ["replay", "{crafted}", "--no-live"],
    ],
    ids=["show", "list", "diff", "rediagnose", "replay"],
)
def test_host_text_shows_control_characters_as_escapes(
    argv: list[str], crafted: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    code = main([a.format(crafted=crafted, folder=crafted.parent) for a in argv])
    out = capsys.readouterr().out
    assert code in (0, 1), out
    _shown_escaped(out)


def test_a_diff_table_row_shows_the_crafted_observation_escaped(crafted: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(H200X2), str(crafted)]) == 1
    out = capsys.readouterr().out
    assert "kernel.version" in out and "6.18\\x1b" in out and "\x1b" not in out


def test_warnings_quote_text_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    warn([f"line 3: {ESC}"])
    err = capsys.readouterr().err
    assert err == f"rigaudit: warning: line 3: {SHOWN}\n"


def test_the_diff_event_gives_its_document_back() -> None:
    def f(check: str, status: str, severity: str | None = None, observed: str = "") -> Finding:
        return Finding(check=check, area="numa", status=status, severity=severity, title=check, observed=observed)  # type: ignore[arg-type]

    findings = diff_findings(
        [f("a", "ok"), f("b", "problem", "high"), f("e", "ok", observed="1")],
        [f("a", "problem", "low"), f("e", "ok", observed="2")],
    )
    document = diff_document(
        SideInfo("x", "audit", "h1"), SideInfo("y", "audit", "h2"), findings, None, values_note="no values", warnings=["w"]
    )
    assert diff_json(diff_event(document, facts_compared=False, rows=5)) == document


def test_transcript_needs_rediagnose(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["replay", str(H200X2), "--transcript", str(tmp_path / "t.jsonl")]) == 2
    assert capsys.readouterr().err == "rigaudit: --transcript needs --rediagnose\n"
    assert not (tmp_path / "t.jsonl").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["checks", "--json"],
        ["schema"],
        ["policy", "list"],
        ["diff", str(H200X2), str(H200X2)],
        ["replay", str(H200X2), "--rediagnose"],
    ],
    ids=["checks", "schema", "policy", "diff", "rediagnose"],
)
def test_an_unwritable_transcript_is_one_line_before_any_output(
    argv: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("")
    assert main([*argv, "--transcript", str(tmp_path / "file" / "t.jsonl")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("rigaudit: --transcript ") and captured.err.count("\n") == 1


def test_every_query_event_draws_at_80_columns() -> None:
    from io import StringIO

    from rigaudit.orchestrator.ui.safe_console import SafeConsole
    from rigaudit.orchestrator.ui.terminal import TerminalUI

    out = StringIO()
    ui = TerminalUI(SafeConsole(file=out, width=80), live=False)
    for event in query_events(1_780_000_000.0):
        ui(event)
    text = out.getvalue()
    for shown in ("Findings that changed", "## numa", "deny changes GPU state [nvidia-smi-state]", '"title": "AuditResult"'):
        assert shown in text
    assert "b.jsonl (not a rigaudit transcript)" in text and "Snapshot kept in /kept" in text
