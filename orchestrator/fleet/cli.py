"""``rigaudit audit --hosts FILE|h1,h2``, ``--slurm`` and ``--results DIR``: the fleet's arguments and run.

``--results DIR`` collects nothing: it judges the result files the nodes wrote (fleet/gathered.py).

Wired into the audit command by two calls: :func:`add_fleet_arguments` in its ``add_arguments``
and, first thing in its ``run``, ``if is_fleet(args): return run_fleet_from_args(args)``. The
audit's own ``--areas``, ``--concurrency``, ``--timeout``, ``--json``, ``--report``, ``--fail-on``
and ``--no-live`` apply to the fleet (``--json``/``--report`` then hold the fleet's result).

Exit status: 0 done (hosts that failed are listed, the rest completes); 1 a problem at or above
``--fail-on`` on some host, or no host could be audited (then a ``rigaudit:`` line says so); 2 usage error.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from rigaudit.agents.registry import area_names, resolve_areas
from rigaudit.orchestrator.commands._outputs import output
from rigaudit.orchestrator.fleet.report import write_fleet_report
from rigaudit.orchestrator.fleet.result import FleetResult
from rigaudit.orchestrator.fleet.runner import (
    DEFAULT_HOST_TIMEOUT_S,
    DEFAULT_MAX_CONNECTIONS,
    FleetOptions,
    run_fleet,
    run_slurm_fleet,
)
from rigaudit.orchestrator.fleet.targets import parse_hosts
from rigaudit.orchestrator.options.arguments import positive_seconds
from rigaudit.orchestrator.options.screen import Screen
from rigaudit.orchestrator.report.output import write_json
from rigaudit.orchestrator.session.core import open_session
from rigaudit.orchestrator.session.run_async import run_held
from rigaudit.orchestrator.ui.terminal import terminal_for
from rigaudit.tools.core.errors import OperationError, UsageError
from rigaudit.tools.files.outputs import Kind
from rigaudit.tools.model.events.session import ReportWritten
from rigaudit.tools.model.events.sink import EventSink
from rigaudit.tools.model.finding import SEVERITY_ORDER
from rigaudit.tools.remote.slurm import SlurmJob
from rigaudit.tools.remote.transport import COLLECTORS, SshTransport, check_words


def add_fleet_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("fleet: many hosts at once (evidence collected on each host, audited here)")
    which = group.add_mutually_exclusive_group()
    which.add_argument(
        "--hosts", metavar="FILE|H1,H2", help="audit these SSH destinations (a file with one a line, or a comma list)"
    )
    which.add_argument("--slurm", action="store_true", help="audit Slurm nodes: one srun task per node")
    which.add_argument(
        "--results",
        type=Path,
        metavar="DIR",
        help="judge a fleet from the result files its nodes wrote (rigaudit check --json, audit --json) in DIR",
    )
    group.add_argument("--partition", metavar="P", help="Slurm partition (with --slurm)")
    count = group.add_mutually_exclusive_group()
    count.add_argument("--nodes", type=int, metavar="N", help="number of Slurm nodes (with --slurm; default: Slurm's)")
    count.add_argument("--nodelist", metavar="LIST", help="these Slurm nodes, e.g. gpu[01-16] (with --slurm)")
    group.add_argument(
        "--max-connections", type=int, default=DEFAULT_MAX_CONNECTIONS, metavar="N", help="SSH connections at once (default 16)"
    )
    group.add_argument(
        "--host-timeout",
        type=positive_seconds,
        default=DEFAULT_HOST_TIMEOUT_S,
        metavar="S",
        help="time limit for one host's connection and collection (Slurm: the whole step; default 120)",
    )
    output(
        group.add_argument("--out", type=Path, metavar="DIR", help="write fleet.json, system-improve.md and hosts/NAME/ here"),
        Kind.FOLDER,
    )
    group.add_argument(
        "--collector",
        choices=COLLECTORS,
        default="auto",
        help="how nodes collect: their rigaudit, the node server sent over SSH, or auto (rigaudit when installed)",
    )
    group.add_argument("--node-rigaudit", default="rigaudit", metavar="CMD", help="the rigaudit command on the nodes")
    group.add_argument("--ssh-command", default="ssh", metavar="CMD", help="the SSH client command (default: ssh)")
    group.add_argument("--ssh-config", type=Path, metavar="FILE", help="an ssh_config to use instead of ~/.ssh/config (ssh -F)")
    group.add_argument("--ssh-option", action="append", default=[], metavar="OPT", help="an ssh -o option (repeatable)")
    group.add_argument("--workers", type=int, metavar="N", help="local processes auditing snapshots (default: one per CPU)")


def is_fleet(args: argparse.Namespace) -> bool:
    """``--hosts`` or ``--slurm`` given; ``--hosts ''`` is a usage error, not an audit of this machine."""
    hosts = getattr(args, "hosts", None)
    if hosts is not None and not str(hosts).strip():
        raise UsageError("--hosts needs a file or host1,host2,...")
    return bool(hosts) or bool(getattr(args, "slurm", False)) or getattr(args, "results", None) is not None


def _areas(text: str | None) -> tuple[str, ...] | None:
    if not text:
        return None
    areas, notes, unknown = resolve_areas(text)
    if unknown:
        raise UsageError(f"unknown area(s) {', '.join(unknown)}; choose from {', '.join(area_names())}")
    for note in notes:
        print(f"rigaudit: note: {note}", file=sys.stderr)
    return tuple(areas) or None


def _check(args: argparse.Namespace) -> None:
    if getattr(args, "snapshot", None) is not None or getattr(args, "demo", None) is not None:
        raise UsageError("--hosts/--slurm/--results audit other machines: leave out --snapshot and --demo")
    if not args.slurm and (args.partition or args.nodes is not None or args.nodelist):
        raise UsageError("--partition, --nodes and --nodelist go with --slurm")
    if args.nodes is not None and args.nodes < 1:
        raise UsageError("--nodes must be at least 1")
    if args.max_connections < 1:
        raise UsageError("--max-connections must be at least 1")
    if not args.host_timeout > 0:
        raise UsageError("--host-timeout must be more than 0 seconds")
    if args.workers is not None and args.workers < 0:
        raise UsageError("--workers must be 0 (audit in this process) or more")
    if (getattr(args, "concurrency", None) or 1) < 1:
        raise UsageError("--concurrency must be at least 1")
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out}: exists and is not a directory")


def options_from_args(args: argparse.Namespace) -> FleetOptions:
    check_words(args.node_rigaudit, "--node-rigaudit")
    return FleetOptions(
        max_connections=args.max_connections,
        host_timeout_s=args.host_timeout,
        collector=args.collector,
        node_rigaudit=args.node_rigaudit,
        areas=_areas(getattr(args, "areas", None)),
        concurrency=getattr(args, "concurrency", None),
        timeout_s=getattr(args, "timeout", 60.0),
        workers=args.workers,
        out=args.out,
    )


def _failing(result: FleetResult, threshold: str | None) -> bool:
    if threshold is None:
        return False
    limit = SEVERITY_ORDER[threshold]
    return any(
        f.status == "problem" and SEVERITY_ORDER.get(f.severity or "low", 9) <= limit and f.source != "llm"
        for a in result.audits
        for f in a.result.findings
    )


def run_fleet_from_args(args: argparse.Namespace) -> int:
    _check(args)
    if args.results is not None:
        from rigaudit.orchestrator.fleet.gathered import read_gathered

        folder, out = args.results, args.out

        async def gathered(emit: EventSink) -> FleetResult:
            return read_gathered(folder, out, emit)

        return _finish(args, gathered, "gathered", out, [])
    options = options_from_args(args)
    if args.slurm:
        minutes = math.ceil(options.host_timeout_s / 60) + 1
        job = SlurmJob(partition=args.partition, nodes=args.nodes, nodelist=args.nodelist, time_limit_min=minutes)

        async def main(emit: EventSink) -> FleetResult:
            return await run_slurm_fleet(job, options, emit)
    else:
        targets = parse_hosts(args.hosts)
        command = check_words(args.ssh_command, "--ssh-command")
        transport = SshTransport(
            command=tuple(command),
            config=args.ssh_config,
            options=tuple(args.ssh_option),
            connect_timeout_s=max(1, min(30, int(options.host_timeout_s))),
        )

        async def main(emit: EventSink) -> FleetResult:
            return await run_fleet(targets, transport, options, emit)

    return _finish(args, main, "slurm" if args.slurm else "ssh", options.out, list(options.areas or []))


def _finish(
    args: argparse.Namespace, main: Callable[[EventSink], Awaitable[FleetResult]], kind: str, out: Path | None, areas: list[str]
) -> int:
    """Run the fleet in a session, write its files and say how it ended."""
    with open_session(
        "audit",
        consumers=[terminal_for(Screen(json_to_stdout=str(args.json or "") == "-", no_live=args.no_live))],
        transcript=getattr(args, "transcript", None),
        record=not getattr(args, "no_transcript", False),
        options={"fleet": kind, "areas": areas},
    ) as session:
        result = run_held(lambda: main(session.emit))  # not anyio.run: see run_async.py
        if out is not None:
            write_json(out / "fleet.json", result.to_json())
            write_fleet_report(out / "system-improve.md", result)
            session.emit(ReportWritten(path=str(out / "system-improve.md"), section="fleet"))
        if getattr(args, "report", None):
            write_fleet_report(args.report, result)
            session.emit(ReportWritten(path=str(args.report), section="fleet"))
        if getattr(args, "json", None):
            write_json(args.json, result.to_json())
        if not result.audits:
            raise OperationError(f"no host could be audited ({len(result.failures)} failed)")
        session.exit_code = 1 if _failing(result, getattr(args, "fail_on", None)) else 0
    return session.exit_code


__all__ = ["add_fleet_arguments", "is_fleet", "run_fleet_from_args"]
