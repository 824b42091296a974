"""A fleet audit as the audit command runs it: in a session, writing its files, saying how it ended.

The command reads ``--hosts``, ``--slurm`` or ``--results`` into a :class:`FleetRun`
(``commands/_fleet.py``); :func:`run_fleet_command` runs it. ``--results DIR`` collects nothing: it
judges the result files the nodes wrote (fleet/gathered.py).

Exit status: 0 done (hosts that failed are listed, the rest completes); 1 a problem at or above
``--fail-on`` on some host, or no host could be audited (then a ``rigaudit:`` line says so).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal

from rigaudit.orchestrator.fleet.report import write_fleet_report
from rigaudit.orchestrator.fleet.result import FleetResult
from rigaudit.orchestrator.fleet.runner import FleetOptions, run_fleet, run_slurm_fleet
from rigaudit.orchestrator.options.screen import Screen
from rigaudit.orchestrator.report.output import write_json
from rigaudit.orchestrator.session.core import open_session
from rigaudit.orchestrator.session.run_async import run_held
from rigaudit.orchestrator.ui.terminal import terminal_for
from rigaudit.tools.core.errors import OperationError
from rigaudit.tools.core.record import Record
from rigaudit.tools.remote.slurm import SlurmJob
from rigaudit.tools.remote.transport import SshTransport
from rigaudit.tools.schema.events.session import ReportWritten
from rigaudit.tools.schema.events.sink import EventSink
from rigaudit.tools.schema.finding import SEVERITY_ORDER

FleetKind = Literal["gathered", "slurm", "ssh"]


class FleetOutputs(Record):
    """How the fleet's session is shown and recorded, and the files its result goes to."""

    screen: Screen = Screen()
    transcript: Path | None = None
    record: bool = True
    report: Path | None = None
    json: Path | None = None
    fail_on: str | None = None
    """Exit 1 when a rule finds a problem at or above this severity on some host."""


class FleetRun(Record):
    """One fleet audit: the nodes' result files (``gathered``), Slurm nodes, or SSH destinations."""

    options: FleetOptions = FleetOptions()
    """The nodes' result files read only ``out`` of them."""
    outputs: FleetOutputs = FleetOutputs()
    results: Path | None = None
    """The folder of the nodes' result files (``--results``)."""
    job: SlurmJob | None = None
    """Where the srun step runs (``--slurm``)."""
    targets: tuple[str, ...] = ()
    transport: SshTransport = SshTransport()
    """The SSH destinations and how to reach them (``--hosts``)."""

    @property
    def kind(self) -> FleetKind:
        return "gathered" if self.results is not None else "slurm" if self.job is not None else "ssh"


def slurm_job(
    partition: str | None, nodes: int | None, nodelist: str | None, options: FleetOptions, gres: str | None = None
) -> SlurmJob:
    """The srun step: its time limit is the host timeout, in whole minutes, plus one; ``gres``: srun's ``--gres``."""
    minutes = math.ceil(options.host_timeout_s / 60) + 1
    return SlurmJob(partition=partition, nodes=nodes, nodelist=nodelist, time_limit_min=minutes, gres=gres)


def _failing(result: FleetResult, threshold: str | None) -> bool:
    if threshold is None:
        return False
    limit = SEVERITY_ORDER[threshold]
    return any(
        f.status == "problem" and SEVERITY_ORDER.get(f.severity or "low", 9) <= limit and f.source != "llm"
        for a in result.audits
        for f in a.result.findings
    )


def _work(run: FleetRun) -> Callable[[EventSink], Awaitable[FleetResult]]:
    """What the session runs: read the gathered files, or collect the nodes and audit them."""
    options = run.options
    if run.results is not None:
        from rigaudit.orchestrator.fleet.gathered import read_gathered

        folder = run.results

        async def gathered(emit: EventSink) -> FleetResult:
            return read_gathered(folder, options.out, emit)

        return gathered
    if run.job is not None:
        job = run.job

        async def slurm(emit: EventSink) -> FleetResult:
            return await run_slurm_fleet(job, options, emit)

        return slurm
    targets, transport = list(run.targets), run.transport

    async def ssh(emit: EventSink) -> FleetResult:
        return await run_fleet(targets, transport, options, emit)

    return ssh


def run_fleet_command(run: FleetRun) -> int:
    """Run the fleet in a session, write its files and say how it ended."""
    main, out, shown = _work(run), run.options.out, run.outputs
    areas = list(run.options.areas or []) if run.kind != "gathered" else []
    with open_session(
        "audit",
        consumers=[terminal_for(shown.screen)],
        transcript=shown.transcript,
        record=shown.record,
        options={"fleet": run.kind, "areas": areas},
    ) as session:
        result = run_held(lambda: main(session.emit))  # not anyio.run: see run_async.py
        if out is not None:
            write_json(out / "fleet.json", result.to_json())
            write_fleet_report(out / "system-improve.md", result)
            session.emit(ReportWritten(path=str(out / "system-improve.md"), section="fleet"))
        if shown.report:
            write_fleet_report(shown.report, result)
            session.emit(ReportWritten(path=str(shown.report), section="fleet"))
        if shown.json:
            write_json(shown.json, result.to_json())
        if not result.audits:
            raise OperationError(f"no host could be audited ({len(result.failures)} failed)")
        session.exit_code = 1 if _failing(result, shown.fail_on) else 0
    return session.exit_code


__all__ = ["FleetKind", "FleetOutputs", "FleetRun", "run_fleet_command", "slurm_job"]
