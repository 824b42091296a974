"""Audit a GPU inference host: every investigator at once, one prioritized plan.

Examples:
  rigaudit audit                         this machine (read-only; no GPU or root needed)
  rigaudit audit --demo                  a snapshot shipped with rigaudit
  rigaudit audit --snapshot DIR --report system-improve.md --json audit.json
  rigaudit audit --fail-on high --no-live    for scripts: exit 1 when a high problem is found
  rigaudit audit --snapshot DIR --explain firmware.cppc   one verdict: its premises, held or missing, and evidence

Exit status: 0 done; 1 a problem at or above --fail-on was found (a rule's: a model's suggestions
never count); 4 the audit is incomplete (an
investigator crashed or timed out: its checks were not judged; "status": "incomplete" in --json
and in the transcript) or, with --llm, degraded (an agent gave no answer or the endpoint cut
prompts: "llm": {"status": "degraded"} in --json; the rule findings stand); 1 the LLM endpoint
failed its check before the audit; 2 usage error; 130 interrupted (Ctrl-C). A problem (1) wins over 4, and 4 over 0.
The one table of exit statuses, every command: docs/exit-status.md.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from rigaudit.agents.registry import area_names
from rigaudit.orchestrator.audit.run import DEFAULT_CONCURRENCY, AuditControl, AuditOptions, run_audit
from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.commands._areas import areas as read_areas
from rigaudit.orchestrator.commands._arguments import positive_seconds
from rigaudit.orchestrator.commands._fleet import add_fleet_arguments, is_fleet, run_fleet_from_args
from rigaudit.orchestrator.commands._llm import add_llm_arguments, brain_from_args
from rigaudit.orchestrator.commands._options import add_host_arguments, add_session_arguments, host_source, screen
from rigaudit.orchestrator.commands._outputs import output
from rigaudit.orchestrator.hosts.choose import open_host
from rigaudit.orchestrator.hosts.identity import identify
from rigaudit.orchestrator.report.document import check_report, write_report
from rigaudit.orchestrator.report.output import write_json
from rigaudit.orchestrator.session.core import Session, open_session
from rigaudit.orchestrator.session.run_async import run_held
from rigaudit.orchestrator.ui.explain_check import explain_lines
from rigaudit.orchestrator.ui.terminal import terminal_for
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.events.audit import TopologyReported
from rigaudit.tools.schema.events.catalog import CheckEntry
from rigaudit.tools.schema.events.session import ReportWritten
from rigaudit.tools.schema.events.sink import EventSink
from rigaudit.tools.schema.finding import SEVERITY_ORDER

if TYPE_CHECKING:
    from rigaudit.agents.llm.brain import LLMBrain


def _add(parser: argparse.ArgumentParser) -> None:
    add_host_arguments(parser)
    output(
        parser.add_argument("--json", type=Path, metavar="FILE", help="write the audit result (rigaudit.audit/1); - for stdout"),
        stdout=True,
    )
    report = parser.add_argument(
        "--report",
        type=Path,
        metavar="FILE",
        help="write system-improve.md (baseline, findings, plan); an earlier one of this machine is kept beside it, "
        "named by when it was audited; one of another machine is refused",
    )
    output(report)
    parser.add_argument("--areas", metavar="A,B", help=f"only these areas ({', '.join(area_names())})")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=DEFAULT_CONCURRENCY,
        metavar="N",
        help="host operations in flight at once (default: from the host's measured latency, 8 to 64)",
    )
    parser.add_argument(
        "--timeout", type=positive_seconds, default=60.0, metavar="S", help="time limit per investigator, > 0 s (default 60)"
    )
    parser.add_argument(
        "--fail-on",
        choices=("critical", "high", "medium", "low"),
        help="exit 1 (as in check) if a rule finds a problem at or above this (a model's suggestions never count)",
    )
    parser.add_argument("--all", action="store_true", help="list every check (default: problems and unknowns, the rest counted)")
    parser.add_argument("--hide-ok", action="store_true", help=argparse.SUPPRESS)  # the default since 0.2
    parser.add_argument(
        "--explain",
        metavar="CHECK",
        help="after the audit, show CHECK's verdict, each premise it rests on (held or missing) and its evidence "
        "(audits only CHECK's area unless --areas is given)",
    )
    add_session_arguments(parser)
    add_llm_arguments(parser)
    add_fleet_arguments(parser)


def _explained(check_id: str | None, areas: list[str] | None, json_to_stdout: bool) -> CheckEntry | None:
    """The catalog entry ``--explain`` names, refused when no check has that id or the audit would not judge it."""
    if check_id is None:
        return None
    from rigaudit.agents.catalog import catalog

    entry = next((CheckEntry.model_validate(c.as_dict()) for c in catalog() if c.id == check_id), None)
    if entry is None:
        raise UsageError(f"--explain: no check {check_id!r} (rigaudit checks lists them)")
    if areas is not None and entry.area not in areas:
        raise UsageError(f"--explain {check_id}: its area {entry.area} is not among --areas {','.join(areas)}")
    if json_to_stdout:
        raise UsageError("--explain prints to stdout: write --json to a file")
    return entry


EXIT_PROBLEM = 1
"""A problem at or above ``--fail-on``: the same status as ``rigaudit check`` gives."""

EXIT_INCOMPLETE = 4
"""An investigator crashed or timed out: the audit is not a clean one."""


def exit_status(result: AuditResult, threshold: str | None) -> int:
    """1 a problem at or above ``threshold`` (as ``check``); 130 interrupted; 4 incomplete or LLM degraded; 0 clean."""
    if failing(result, threshold):
        return EXIT_PROBLEM
    code = {"interrupted": 130, "incomplete": EXIT_INCOMPLETE}.get(result.status, 0)
    if code == 0 and result.llm is not None and result.llm.status != "ok":
        return EXIT_INCOMPLETE
    return code


def failing(result: AuditResult, threshold: str | None) -> bool:
    """A problem of the rules at or above ``threshold`` (a model's suggestions are never problems)."""
    if threshold is None:
        return False
    limit = SEVERITY_ORDER[threshold]
    return any(
        f.status == "problem" and SEVERITY_ORDER.get(f.severity or "low", 9) <= limit and f.source == "rules"
        for f in result.findings
    )


def _run(args: argparse.Namespace) -> int:
    if is_fleet(args):
        return run_fleet_from_args(args)
    if args.concurrency is not None and args.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    areas = read_areas(args.areas)
    explained = _explained(args.explain, areas, args.json is not None and str(args.json) == "-")
    if explained is not None and areas is None:
        areas = [explained.area]
    host = open_host(host_source(args))
    if args.report is not None:  # before any work: a report of another machine is refused now, not after the audit
        check_report(args.report, anyio.run(identify, host))
    json_to_stdout = args.json is not None and str(args.json) == "-"
    ui = terminal_for(screen(args), show_all=args.all)
    brain = brain_from_args(args, pause=ui.paused)
    options = AuditOptions(concurrency=args.concurrency, areas=areas, timeout_s=args.timeout, brain=brain)
    control = AuditControl()
    shown_areas = areas or list(area_names())
    with open_session(
        "audit",
        consumers=[ui],
        transcript=args.transcript,
        record=not args.no_transcript,
        host=host.name,
        source=host.source,
        options={"areas": shown_areas, "concurrency": args.concurrency},
    ) as session:
        if brain is not None:
            brain.emit = session.emit
        result = run_held(lambda: _audit(host, options, brain, session.emit, control))
        if brain is not None:
            brain.report_usage()
        if args.report:
            _write_report(args.report, result, session)
        if args.json:
            write_json(args.json, result.model_dump_json(by_alias=True, indent=2))
        session.exit_code = exit_status(result, args.fail_on)
        if explained is not None:
            finding = next((f for f in result.findings if f.check == explained.check and f.source == "rules"), None)
            ui.console.print("\n".join(explain_lines(explained, finding)), markup=False, highlight=False)
        if session.transcript_path is not None and not json_to_stdout:
            ui.console.print(f"[dim]transcript: {session.transcript_path}[/dim]")
    return session.exit_code


async def _audit(
    host: Host, options: AuditOptions, brain: LLMBrain | None, emit: EventSink, control: AuditControl
) -> AuditResult:
    """The audit, stopped by the first Ctrl-C; the LLM endpoint (``brain``) is checked first and closed after."""
    if brain is not None:
        try:
            await brain.preflight()  # a bad endpoint is one line now, not thirteen agents' retries
        except BaseException:
            await brain.aclose()
            raise
    async with anyio.create_task_group() as group:
        group.start_soon(_cancel_on_sigint, control, group.cancel_scope)
        result = await run_audit(host, options=options, emit=emit, control=control)
        group.cancel_scope.cancel()
    await host.aclose()
    if brain is not None:
        await brain.aclose()
    return result


def _write_report(path: Path, result: AuditResult, session: Session) -> None:
    """system-improve.md with the PCIe drawing the audit reported; an earlier one of this machine is kept beside it."""
    topology = next((e.devices for e in reversed(session.events) if isinstance(e, TopologyReported)), [])
    archived = write_report(path, result, topology=topology)
    kept = f"the earlier report is kept as {archived}" if archived is not None else ""
    session.emit(ReportWritten(path=str(path), section=kept))


async def _cancel_on_sigint(control: AuditControl, scope: anyio.CancelScope) -> None:
    """First Ctrl-C: stop the audit, keep what finished. The audit's partial result is still written."""
    if sys.platform == "win32":
        return
    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        async for _ in signals:
            control.cancel()
            return


COMMAND = Command("audit", "audit this machine, a snapshot or the demo, and plan the fixes", _add, _run, __doc__ or "")
