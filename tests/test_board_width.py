"""The boards at 80 and 120 columns: no number, state, check id or path cut; problems first, the rest counted."""

from __future__ import annotations

import io
import re
from pathlib import Path

import anyio
import pytest
from rich.console import Console, RenderableType

from rigaudit.orchestrator.audit.run import AuditOptions, run_audit
from rigaudit.orchestrator.ui.audit_view import audit_view
from rigaudit.orchestrator.ui.tables import BoardRow, board_table, plan_table
from rigaudit.orchestrator.ui.terminal import TerminalUI
from rigaudit.tools.actions.text import describe
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.audit import AuditResult, HostSummary, InvestigatorRun
from rigaudit.tools.schema.events.audit import InvestigatorActivity, SnapshotReads, ToolCall
from rigaudit.tools.schema.finding import Finding
from rigaudit.transcripts.reader import read_transcript
from rigaudit.transcripts.writer import TranscriptWriter
from tests.conftest import SEED
from tests.support.audits import audited

WIDTHS = (80, 120)


def seed_result() -> AuditResult:
    """The session's audit of the seed (tests/support/audits.py): read only."""
    return audited(SEED)


def render(renderables: list[RenderableType] | RenderableType, width: int) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None, highlight=False, force_terminal=False)
    for renderable in renderables if isinstance(renderables, list) else [renderables]:
        console.print(renderable)
    return out.getvalue()


def cells(text: str, column: int) -> list[str]:
    """The content of one column of a boxed table, row by row, its wrapped lines joined without spaces."""
    rows: list[str] = []
    current: list[str] = []
    for line in text.splitlines():
        if line.startswith(("├", "└", "┡")):
            if current:
                rows.append("".join(current))
            current = []
            continue
        parts = line.split("│")
        if len(parts) > column + 1:
            current.append(parts[column + 1].strip().replace(" ", ""))
    if current:
        rows.append("".join(current))
    return rows


@pytest.mark.parametrize("width", WIDTHS)
def test_seed_audit_fits_and_cuts_nothing(width: int) -> None:
    result = seed_result()
    text = render(audit_view(result, width=width), width)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    shown = [f for f in result.findings if f.status in ("problem", "unknown")]
    observed_column = 3 if width >= 110 else 2
    observed = "\n".join(cells(text, observed_column))
    for finding in shown:
        assert finding.observed.replace(" ", "") in observed, finding.check
        assert re.search(rf"│ {re.escape(finding.check)}\s", text), finding.check


@pytest.mark.parametrize("width", WIDTHS)
def test_problems_come_first_and_the_rest_is_one_line(width: int) -> None:
    result = seed_result()
    text = render(audit_view(result, width=width), width)
    problems = [f.check for f in result.findings if f.status == "problem"]
    oks = [f.check for f in result.findings if f.status == "ok"]
    assert all(f"│ {c} " not in text for c in oks)  # ok checks are counted, not listed
    positions = [text.index(f"│ {c} ") for c in problems]
    first_unknown = min(text.index(f"│ {f.check} ") for f in result.findings if f.status == "unknown")
    assert max(positions) < first_unknown
    rest = len(result.findings) - len(problems) - sum(1 for f in result.findings if f.status == "unknown")
    assert f"{rest} more check(s): {len(oks)} ok" in text and "--all lists them" in text
    assert "What to expect:" in text
    everything = render(audit_view(result, width=width, show_all=True), width)
    assert all(f"│ {c} " in everything for c in oks)


@pytest.mark.parametrize("width", WIDTHS)
def test_plan_actions_are_wrapped_never_cut(width: int) -> None:
    plan = seed_result().plan
    text = render(plan_table(plan), width)
    assert "…" not in text
    column = "\n".join(cells(text, 2))
    for step in plan.steps:
        for action in step.actions:
            assert describe(action).replace(" ", "") in column, describe(action)
    assert "/sys/devices/system/cpu/cpu*/cpuidle/state2/disable" in column


@pytest.mark.parametrize("width", WIDTHS)
def test_live_board_keeps_numbers_and_states_whole(width: int) -> None:
    rows = [
        BoardRow("firmware", "running", "/sys/bus/pci/devices/0000:c3:00.0/resource_resize/with/a/very/long/path", 12345),
        BoardRow("power", "cancelled", "", 873, {"problem": 12, "ok": 345, "unknown": 678}, 123.45),
        BoardRow("container", "timeout", "", 7, {"ok": 1}, 60.0, error="no answer within 60 s"),
        BoardRow("runtime", "done", "", 99, {"problem": 1, "ok": 5}, 1.51),
    ]
    text = render(board_table(rows, width), width)
    for token in ("12345", "873", "345", "678", "123.45s", "60.00s", "1.51s", "running", "cancelled", "timeout", "container"):
        assert re.search(rf"(?<![\w.]){re.escape(token)}(?![\w.])", text), (token, text)
    assert max(len(line) for line in text.splitlines()) <= width
    table = [line for line in text.splitlines() if line[:1] in "┏┃┡│└"]
    assert table and all(line.rstrip()[-1] in "┓┃┩│┘" for line in table)  # the right border is there: nothing crushed


@pytest.mark.parametrize("width", WIDTHS)
def test_live_board_of_busy_investigators_keeps_its_right_border(width: int) -> None:
    rows = [
        BoardRow(area, "running", "nvml:nvmlDeviceGetP2PStatus(0, 1, 0) and a long tail", 12) for area in ("container", "nccl")
    ]
    text = render(board_table(rows, width), width)
    table = [line for line in text.splitlines() if line[:1] in "┏┃┡│└"]
    assert table and all(line.rstrip()[-1] in "┓┃┩│┘" for line in table), text


def _finding(check: str, status: str, observed: str) -> Finding:
    return Finding(check=check, area=check.split(".", maxsplit=1)[0], status=status, title=check, observed=observed)  # type: ignore[arg-type]


def test_a_machine_without_a_gpu_says_so_first_and_folds_the_gpu_rows() -> None:
    findings = (
        _finding("gpu.clocks", "unknown", "NVML unavailable: LIBRARY_NOT_FOUND"),
        _finding("pcie.link", "not_applicable", "no NVIDIA GPU found in /sys/bus/pci/devices or through NVML"),
        _finding("power.epp", "unknown", "no cpufreq in this guest; check on the hypervisor"),
        _finding("kernel.thp", "ok", "enabled=madvise"),
    )
    facts = {"kernel": "6.8", "nvml": "unavailable (LIBRARY_NOT_FOUND)"}
    host = HostSummary(name="cpu01", source="local", facts=facts)
    result = AuditResult(host=host, started_at="x", duration_s=1, findings=findings)
    text = render(audit_view(result, width=80), 80)
    assert text.splitlines()[0].startswith("No NVIDIA GPU on cpu01")
    assert "│ gpu.clocks" not in text and "│ power.epp" in text
    flat = " ".join(text.split())
    assert "3 more check(s)" in flat and "2 of them for want of a GPU" in flat
    gpu = result.model_copy(update={"host": HostSummary(name="g", source="local", facts={**facts, "gpus": "1 x H200"})})
    assert "No NVIDIA GPU" not in render(audit_view(gpu, width=80), 80)


def test_an_incomplete_audit_is_shouted_not_passed() -> None:
    runs = (
        InvestigatorRun(area="gpu", status="timeout", duration_s=60, error="no answer within 60 s"),
        InvestigatorRun(area="kernel", status="done", duration_s=1),
    )
    result = AuditResult(
        status="incomplete", host=HostSummary(name="h", source="local"), started_at="x", duration_s=60, investigators=runs
    )
    text = " ".join(render(audit_view(result, width=80), 80).split())
    assert "AUDIT INCOMPLETE" in text and "1 of 2 investigator(s) did not finish" in text and "gpu timeout" in text
    assert "not a pass" in text


def test_a_replayed_board_counts_the_reads_its_transcript_holds(tmp_path: Path) -> None:
    """Transcripts leave out the "now reading" pings: the board counts each area's reads from its tool calls, or a
    sealed snapshot's from the area's reads by reference, at once (live, and in a replay)."""
    path = tmp_path / "t.jsonl"
    with TranscriptWriter(path) as writer:
        anyio.run(lambda: run_audit(SnapshotHost(SEED), options=AuditOptions(areas=("numa",)), emit=writer))
    events = read_transcript(path).events
    assert not any(isinstance(e, InvestigatorActivity) for e in events)
    reads = sum(1 for e in events if isinstance(e, ToolCall) and e.area == "numa")
    reads += sum(len(e.reads) for e in events if isinstance(e, SnapshotReads) and e.area == "numa")
    ui = TerminalUI(Console(file=io.StringIO(), width=80), live=False)
    for event in events:
        ui(event)
    assert reads > 0 and ui.rows["numa"].reads == reads
