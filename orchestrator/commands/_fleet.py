"""``rigaudit audit --hosts FILE|h1,h2``, ``--slurm`` and ``--results DIR``: the fleet's arguments, read into a run.

Wired into the audit command by two calls: :func:`add_fleet_arguments` in its ``add_arguments``
and, first thing in its ``run``, ``if is_fleet(args): return run_fleet_from_args(args)``. The
audit's own ``--areas``, ``--concurrency``, ``--timeout``, ``--json``, ``--report``, ``--fail-on``
and ``--no-live`` apply to the fleet (``--json``/``--report`` then hold the fleet's result).
A helper of the command modules: :func:`fleet_run` hands a typed
:class:`~rigaudit.orchestrator.fleet.run.FleetRun` down, never the Namespace.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import TYPE_CHECKING

from rigaudit.orchestrator.commands._areas import areas
from rigaudit.orchestrator.commands._arguments import positive_seconds
from rigaudit.orchestrator.commands._options import screen
from rigaudit.orchestrator.commands._outputs import output
from rigaudit.orchestrator.fleet.defaults import DEFAULT_HOST_TIMEOUT_S, DEFAULT_MAX_CONNECTIONS
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.files.outputs import Kind
from rigaudit.tools.remote.transport import COLLECTORS, SshTransport, check_words

GRES = r"[a-z][a-z0-9_]{0,31}(:[A-Za-z0-9_.-]{1,40})?:[0-9]{1,4}(,[a-z][a-z0-9_]{0,31}(:[A-Za-z0-9_.-]{1,40})?:[0-9]{1,4}){0,7}"
"""``--slurm-gres``: what srun's ``--gres`` takes, ``NAME[:TYPE]:COUNT`` (comma-separated), in ASCII."""

if TYPE_CHECKING:
    from rigaudit.orchestrator.fleet.run import FleetOutputs, FleetRun
    from rigaudit.orchestrator.fleet.runner import FleetOptions


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
        "--slurm-gres",
        metavar="SPEC",
        help="srun --gres for each node, e.g. gpu:8 (with --slurm): under ConstrainDevices=yes a step sees only the GPUs "
        "it was given, none without this, and the node's other GPUs go unjudged; with it the step waits until they "
        "are free (docs/fleet.md)",
    )
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
    given = vars(args)
    hosts = given.get("hosts")
    if hosts is not None and not str(hosts).strip():
        raise UsageError("--hosts needs a file or host1,host2,...")
    return bool(hosts) or bool(given.get("slurm", False)) or given.get("results") is not None


def _check(args: argparse.Namespace) -> None:
    given = vars(args)
    if given.get("snapshot") is not None or given.get("demo") is not None:
        raise UsageError("--hosts/--slurm/--results audit other machines: leave out --snapshot and --demo")
    if given.get("llm"):
        raise UsageError("--llm audits one host: a fleet (--hosts/--slurm/--results) is judged by the rules alone")
    if not args.slurm and (args.partition or args.nodes is not None or args.nodelist or args.slurm_gres):
        raise UsageError("--partition, --nodes, --nodelist and --slurm-gres go with --slurm")
    if args.slurm_gres is not None and not re.fullmatch(GRES, args.slurm_gres):
        raise UsageError(f"--slurm-gres {args.slurm_gres!r}: give Slurm's NAME[:TYPE]:COUNT, e.g. gpu:8 or gpu:h100:8")
    if args.nodes is not None and args.nodes < 1:
        raise UsageError("--nodes must be at least 1")
    if args.max_connections < 1:
        raise UsageError("--max-connections must be at least 1")
    if not args.host_timeout > 0:
        raise UsageError("--host-timeout must be more than 0 seconds")
    if args.workers is not None and args.workers < 0:
        raise UsageError("--workers must be 0 (audit in this process) or more")
    if (given.get("concurrency") or 1) < 1:
        raise UsageError("--concurrency must be at least 1")
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out}: exists and is not a directory")


def _options(args: argparse.Namespace) -> FleetOptions:
    from rigaudit.orchestrator.fleet.runner import FleetOptions

    given = vars(args)
    check_words(args.node_rigaudit, "--node-rigaudit")
    chosen = areas(given.get("areas"))
    return FleetOptions(
        max_connections=args.max_connections,
        host_timeout_s=args.host_timeout,
        collector=args.collector,
        node_rigaudit=args.node_rigaudit,
        areas=tuple(chosen) if chosen else None,
        concurrency=given.get("concurrency"),
        timeout_s=given.get("timeout", 60.0),
        workers=args.workers,
        out=args.out,
    )


def _outputs(args: argparse.Namespace) -> FleetOutputs:
    from rigaudit.orchestrator.fleet.run import FleetOutputs

    given = vars(args)
    return FleetOutputs(
        screen=screen(args),
        transcript=given.get("transcript"),
        record=not given.get("no_transcript", False),
        report=given.get("report"),
        json=given.get("json"),
        fail_on=given.get("fail_on"),
    )


def fleet_run(args: argparse.Namespace) -> FleetRun:
    """The fleet the options ask for, checked (one clear line when they do not make one). The fleet's code is
    imported here: an audit of one host never needs it."""
    from rigaudit.orchestrator.fleet.run import FleetRun, slurm_job
    from rigaudit.orchestrator.fleet.runner import FleetOptions
    from rigaudit.orchestrator.fleet.targets import parse_hosts

    _check(args)
    if args.results is not None:
        return FleetRun(options=FleetOptions(out=args.out), outputs=_outputs(args), results=args.results)
    options = _options(args)
    if args.slurm:
        job = slurm_job(args.partition, args.nodes, args.nodelist, options, args.slurm_gres)
        return FleetRun(options=options, outputs=_outputs(args), job=job)
    targets = parse_hosts(args.hosts)
    command = check_words(args.ssh_command, "--ssh-command")
    transport = SshTransport(
        command=tuple(command),
        config=args.ssh_config,
        options=tuple(args.ssh_option),
        connect_timeout_s=max(1, min(30, int(options.host_timeout_s))),
    )
    return FleetRun(options=options, outputs=_outputs(args), targets=tuple(targets), transport=transport)


def run_fleet_from_args(args: argparse.Namespace) -> int:
    """``rigaudit audit --hosts/--slurm/--results``: read the options, run the fleet."""
    from rigaudit.orchestrator.fleet.run import run_fleet_command

    return run_fleet_command(fleet_run(args))


__all__ = ["add_fleet_arguments", "fleet_run", "is_fleet", "run_fleet_from_args"]
