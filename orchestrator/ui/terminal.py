"""TerminalUI: draws a session's events: the live board, findings, plan, approvals and results.

The same consumer shows a session live and replays it from a transcript.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from rigaudit.orchestrator.gate.render import report_lines
from rigaudit.orchestrator.options.screen import Screen
from rigaudit.orchestrator.ui.audit_view import audit_view
from rigaudit.orchestrator.ui.diff_view import diff_view
from rigaudit.orchestrator.ui.fleet import FLEET_EVENTS, FleetProgress
from rigaudit.orchestrator.ui.lines import apply_lines, rollback_lines
from rigaudit.orchestrator.ui.pictures import nccl_plot, p2p_heatmap, roofline_bar
from rigaudit.orchestrator.ui.queries import (
    checks_text,
    policy_rules_lines,
    policy_verdict_lines,
    rediagnose_lines,
    schema_text,
    transcript_lines,
    transcripts_lines,
)
from rigaudit.orchestrator.ui.safe_console import SafeConsole
from rigaudit.orchestrator.ui.tables import BoardRow, board_table
from rigaudit.orchestrator.ui.wrap import wrap
from rigaudit.tools.core.printable import printable
from rigaudit.tools.schema.events.apply import ApplyFinished, ApprovalDecided, RollbackFinished
from rigaudit.tools.schema.events.audit import (
    AuditFinished,
    InvestigatorActivity,
    InvestigatorFinished,
    InvestigatorStarted,
    PcieDevice,
    SnapshotReads,
    ToolCall,
    TopologyReported,
)
from rigaudit.tools.schema.events.bench import BenchResultReported
from rigaudit.tools.schema.events.catalog import ChecksListed, PolicyListed, PolicyVerdict, SchemaShown
from rigaudit.tools.schema.events.chat import Message, ReplyStreamed
from rigaudit.tools.schema.events.diff import DiffReported, RediagnoseFinished
from rigaudit.tools.schema.events.gate import GateReported
from rigaudit.tools.schema.events.session import (
    Output,
    Progress,
    ReportWritten,
    SessionEnded,
    SessionStarted,
    SnapshotWritten,
    Warning_,
)
from rigaudit.tools.schema.events.transcripts import TranscriptsFolder, TranscriptShown, TranscriptsListed
from rigaudit.tools.schema.events.union import Event


def terminal_for(screen: Screen, *, live: bool = True, show_all: bool = False) -> TerminalUI:
    """The UI ``screen`` asks for: on stderr when ``--json -`` takes stdout; plain with ``--no-live``
    (or ``live=False``). Not on a terminal, lines are 200 columns wide, the same live and in a replay."""
    console: Console = SafeConsole(stderr=screen.json_to_stdout, highlight=False)
    if not console.is_terminal:
        console = SafeConsole(stderr=screen.json_to_stdout, highlight=False, width=200)
    return TerminalUI(console, live=live and not screen.no_live and not screen.json_to_stdout, show_all=show_all)


_READS = (InvestigatorActivity, ToolCall)
"""The events of one read (in flight, done): most of an audit's events, told apart first."""

QUERY_LINES = (PolicyVerdict, PolicyListed, TranscriptsListed, TranscriptsFolder, TranscriptShown, RediagnoseFinished)
"""The query commands' events that are plain lines."""

_MESSAGE_STYLE = {"user": "bold cyan", "assistant": "", "system": "dim"}
"""A chat message's style by its role."""


def _query_lines(event: Event) -> list[str]:
    if isinstance(event, PolicyVerdict):
        return policy_verdict_lines(event)
    if isinstance(event, PolicyListed):
        return policy_rules_lines(event)
    if isinstance(event, TranscriptsListed):
        return transcripts_lines(event)
    if isinstance(event, TranscriptsFolder):
        return [event.path]
    if isinstance(event, TranscriptShown):
        return transcript_lines(event)
    if isinstance(event, RediagnoseFinished):
        return rediagnose_lines(event)
    return []


class TerminalUI:
    """A callable event consumer. ``live=False`` prints plain lines (pipes, CI, ``--no-live``).

    Each changed value (``ChangeApplied``) is kept in the transcript, not drawn: the apply's and the
    rollback's summaries fold them into a line per step.
    """

    def __init__(self, console: Console, *, live: bool, show_all: bool = False) -> None:
        self.console = console
        self.live_enabled = live and console.is_terminal
        self.show_all = show_all
        self.topology: list[PcieDevice] = []
        self.rows: dict[str, BoardRow] = {}
        self._live: Live | None = None
        self._bars: Any = None
        self._tasks: dict[str, Any] = {}
        self._fleet: FleetProgress | None = None
        self._paused = 0
        self._wanted = False
        self._finished = False
        self._gate = False
        """A ``rigaudit check`` session: only its report is drawn (the gate shows no board, no audit screen)."""
        self._streaming: Live | None = None
        """The model's answer as it streams (a terminal only; it gives way to what comes next)."""

    # -- board ----------------------------------------------------------------------------

    def _row(self, area: str) -> BoardRow:
        if area not in self.rows:
            self.rows[area] = BoardRow(area)
        return self.rows[area]

    def _render(self) -> Group:
        done = sum(1 for r in self.rows.values() if r.state not in ("waiting", "running"))
        header = Text(f"{done}/{len(self.rows)} investigators finished", style="bold")
        return Group(board_table(list(self.rows.values()), self.console.width), header)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """The live board stops (and is erased) while a person is asked, and comes back afterwards, so a
        question is never drawn under it."""
        wanted = self._live is not None
        self._stop_live()
        self._stop_streaming()
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1
            if (wanted or self._wanted) and not self._finished:
                self._start_live()
            self._wanted = False

    def _start_live(self) -> None:
        if self._paused:
            self._wanted = True
            return
        if self.live_enabled and self._live is None:
            self._live = Live(get_renderable=self._render, console=self.console, refresh_per_second=8, transient=True)
            self._live.start()

    def _stop_live(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
        self._stop_bars()

    # -- the model's answer as it streams (a terminal only; it vanishes for the whole answer) --

    def _stream(self, text: str) -> None:
        """Show ``text`` in place of the answer so far, as written (never markup), its last lines when it is taller
        than the screen; ``""`` takes it away."""
        if not text or not self.live_enabled or self._live is not None or self._paused:
            self._stop_streaming()
            return
        shown = Text(printable(text))
        lines = shown.wrap(self.console, self.console.width)
        room = max(1, self.console.height - 1)
        if len(lines) > room:
            shown = Text("\n").join(lines[-room:])
        if self._streaming is None:
            self._streaming = Live(shown, console=self.console, refresh_per_second=8, transient=True)
            self._streaming.start(refresh=True)
        else:
            self._streaming.update(shown, refresh=True)

    def _stop_streaming(self) -> None:
        if self._streaming is not None:
            self._streaming.stop()
            self._streaming = None

    # -- progress bars (a terminal only; they vanish when done) ----------------------------

    def _progress(self, event: Progress) -> None:
        if not self.live_enabled or self._live is not None:
            return
        if self._bars is None:
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as Bars

            self._bars = Bars(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self._bars.start()
        if event.label not in self._tasks:
            self._tasks[event.label] = self._bars.add_task(event.label, total=event.total)
        self._bars.update(self._tasks[event.label], completed=event.done, total=event.total)

    def _stop_bars(self) -> None:
        if self._bars is not None:
            self._bars.stop()
            self._bars = None
            self._tasks = {}

    def _lines(self, lines: list[str]) -> None:
        """Plain lines as they are (at a terminal wrapped at spaces to its width, a continuation indented; elsewhere
        one line each); a control character in them (BEL and CR too, which rich would drop) shows as its escape."""
        for line in lines:
            if self.console.is_terminal:
                self.console.print(wrap(Text(printable(line)), self.console.width), highlight=False, soft_wrap=True)
            else:
                self.console.print(printable(line), markup=False, highlight=False, emoji=False, soft_wrap=True)

    def _document(self, text: str) -> None:
        """A document shown as it is (JSON, Markdown): never wrapped, cropped or styled."""
        self.console.out(text, end="", highlight=False)

    def _bench(self, event: BenchResultReported) -> None:
        self._stop_bars()
        if event.kind == "roofline":  # its lines, then the bar of measured against the bound
            self._lines(event.notes)
            data = event.data
            measured = data.get("measured_tok_s")
            bound = data.get("bound_tok_s")
            self.console.print(
                roofline_bar(
                    float(bound) if isinstance(bound, int | float) else 0.0,
                    float(measured) if isinstance(measured, int | float) else None,
                    str(data.get("plan_note") or ""),
                )
            )
            return
        if not event.tables and not event.notes:
            self.console.print(Text(f"{event.kind}: {event.summary}", style="bold"))
            return
        for shown in event.tables:
            table = Table(title=shown.title, title_justify="left")
            for header in shown.headers:
                table.add_column(header)
            for row in shown.rows:
                table.add_row(*row)
            self.console.print(table)
        picture = p2p_heatmap(event.data) if event.kind == "p2p" else nccl_plot(event.data) if event.kind == "nccl" else None
        if picture is not None:
            self.console.print(picture)
        self._lines(event.notes)

    # -- events ---------------------------------------------------------------------------

    def _fleet_event(self, event: Event) -> None:
        self._stop_bars()  # the fleet draws its own bar: one live display at a time
        if self._fleet is None:
            self._fleet = FleetProgress(self.console, live=self.live_enabled)
        self._fleet(event)

    def _session_started(self, event: SessionStarted) -> None:
        """The session's title line, and a board row for each area it will audit."""
        if event.host:
            self.console.print(Text(printable(f"rigaudit {event.command}: {event.host} ({event.source})"), style="bold"))
        for area in event.options.get("areas", []) or []:
            self._row(str(area))

    def _investigator_finished(self, event: InvestigatorFinished) -> None:
        """The area's row done; without a live board, its one line (status, time, counts) printed."""
        row = self._row(event.area)
        row.state, row.duration_s, row.error, row.counts = event.status, event.duration_s, event.error, event.counts
        if not self.live_enabled:
            summary = ", ".join(f"{n} {s}" for s, n in sorted(event.counts.items())) or "no findings"
            tail = f": {event.error}" if event.error else ""
            line = f"  {event.area:<15} {event.status:<8} {event.duration_s:6.2f}s  {summary}{tail}"
            self.console.print(Text(printable(line)))  # an agent's error may quote the model: never markup

    def _audit_finished(self, event: AuditFinished) -> None:
        """The board stopped, the audit's view drawn, and its one-line tally."""
        self._finished = True
        self._stop_live()
        result = event.result
        view = audit_view(result, width=self.console.width, show_all=self.show_all, topology=self.topology)
        for renderable in view:
            self.console.print(renderable)
        problems = sum(1 for f in result.findings if f.status == "problem")
        self.console.print(
            f"{len(result.findings)} checks, {problems} problem(s), {len(result.plan.steps)} plan step(s) "
            f"in {result.duration_s:.2f} s"
        )

    def _read(self, event: InvestigatorActivity | ToolCall) -> None:
        if isinstance(event, InvestigatorActivity):  # a read in flight (live only: transcripts do not keep these)
            self._row(event.area).reading = event.ref
        elif event.area in self.rows:  # a read done (live, and in a replay)
            row = self.rows[event.area]
            row.reading, row.reads = f"{event.op} {event.target}", row.reads + 1

    def _snapshot_reads(self, event: SnapshotReads) -> None:
        """An area's reads of a sealed snapshot, all at once (live, and in a replay)."""
        if event.area in self.rows and event.reads:
            row = self.rows[event.area]
            op, target = event.reads[-1][:2]
            row.reading, row.reads = f"{op} {target}", row.reads + len(event.reads)

    def __call__(self, event: Event) -> None:
        if type(event) in _READS and self._streaming is None and not self._gate:  # most of an audit's events: first
            self._read(event)  # type: ignore[arg-type]
            return
        if isinstance(event, ReplyStreamed):
            self._stream(event.text)
            return
        self._stop_streaming()  # whatever comes next takes the streamed text's place
        if isinstance(event, SessionStarted) and event.command == "check":
            self._gate = True
        if self._gate:
            if isinstance(event, GateReported):
                self._lines(report_lines(event))
            return
        if isinstance(event, FLEET_EVENTS):
            self._fleet_event(event)
        elif isinstance(event, SessionStarted):
            self._session_started(event)
        elif isinstance(event, InvestigatorStarted):
            self._row(event.area).state = "running"
            self._start_live()
        elif isinstance(event, (InvestigatorActivity, ToolCall)):
            self._read(event)
        elif isinstance(event, SnapshotReads):
            self._snapshot_reads(event)
        elif isinstance(event, InvestigatorFinished):
            self._investigator_finished(event)
        elif isinstance(event, AuditFinished):
            self._audit_finished(event)
        elif isinstance(event, ApprovalDecided):
            self.console.print(f"approval: {event.step_id}: {event.decision} (by {event.who})")
        elif isinstance(event, TopologyReported):
            self.topology = list(event.devices)
        elif isinstance(event, Progress):
            self._progress(event)
        elif isinstance(event, Output):
            self._lines([event.text])
        elif isinstance(event, BenchResultReported):
            self._bench(event)
        elif isinstance(event, ApplyFinished):
            self._lines(apply_lines(event))
        elif isinstance(event, RollbackFinished):
            self._lines(rollback_lines(event))
        elif isinstance(event, QUERY_LINES):
            self._lines(_query_lines(event))
        elif isinstance(event, SessionEnded):
            self._stop_live()
        else:
            self._print(event)

    def _print(self, event: Event) -> None:
        """The events a command prints as they come: documents, a diff, what was written, messages, warnings."""
        if isinstance(event, ChecksListed):
            self._document(checks_text(event))
        elif isinstance(event, SchemaShown):
            self._document(schema_text(event))
        elif isinstance(event, DiffReported):
            for renderable in diff_view(event, self.console.width):
                self.console.print(renderable)
        elif isinstance(event, SnapshotWritten):
            self._lines([*event.details, f"{event.kind}: {event.summary}"])
        elif isinstance(event, ReportWritten):
            self.console.print(f"report written: {event.path}" + (f" ({event.section})" if event.section else ""))
        elif isinstance(event, Message):
            self.console.print(Text(printable(event.text), style=_MESSAGE_STYLE[event.role]))
        elif isinstance(event, Warning_):
            self.console.print(Text(printable(f"warning: {event.text}"), style="yellow"))

    def close(self) -> None:
        self._stop_streaming()
        self._stop_live()
        if self._fleet is not None:
            self._fleet.close()
