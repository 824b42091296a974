"""Judge this machine (or a snapshot) as a scheduler's health check: the rules alone, within a deadline.

The first line printed is one short reason naming the check ids that decided (Slurm shows it in
`sinfo -R`, node-problem-detector as the condition's message); the problems and the checks that
could not be made follow, then a summary line. No transcript is recorded unless --transcript.

Examples:
  rigaudit check                                   this machine; exit 1 on a problem at or above high
  rigaudit check --only pcie,gpu.xid --fail-on critical
  rigaudit check --expect /etc/rigaudit/expect.conf --prometheus /var/lib/node_exporter/rigaudit.prom
  rigaudit check --snapshot DIR --json result.json  a recorded host (the fleet report reads such files)

Exit status: 0 healthy; 1 a problem of the node at or above --fail-on (a GPU the node should have is missing:
Slurm's GRES, --kube-node's nvidia.com/gpu capacity, the PCI bus, NVML); 2 usage error; 3 could not check (a check
did not finish within the deadline or its investigator failed, an --expect value or the node's promised
GPUs could not be read, or with --strict any unknown; or, healthy, an output could not be written); 4 rigaudit itself
failed. Wrappers must never drain on 3 or 4. A workload check's problem (runtime.*, container.*, nccl.*, the
processes on the GPUs: the image's or its container's, not the node's) is listed and never decides, unless its
finding places the cause on the node (a host /etc/nccl.conf, the device plugin's MPS daemon, GPU memory no job
owns); inside a
Slurm job step the GPUs the step was given are judged, not the node's others.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.commands._arguments import number
from rigaudit.orchestrator.commands._options import add_host_arguments, host_source
from rigaudit.orchestrator.commands._outputs import output
from rigaudit.orchestrator.gate import (
    DEFAULT_DEADLINE_S,
    INTERNAL,
    NOT_CHECKED,
    without_cyclic_collector,
    without_pydantic_plugins,
)
from rigaudit.orchestrator.hosts.choose import open_host
from rigaudit.tools.core.errors import RigauditError, UsageError

if TYPE_CHECKING:
    from rigaudit.orchestrator.gate.promised import Promises
    from rigaudit.tools.schema.check import CheckResult

SEVERITIES = ("critical", "high", "medium", "low")


def _add(parser: argparse.ArgumentParser) -> None:
    add_host_arguments(parser)
    judge = parser.add_argument_group("what to judge")
    judge.add_argument("--areas", metavar="A,B", help="only these areas, comma-separated (as in audit)")
    judge.add_argument("--only", metavar="IDS", help="only these check ids or areas, comma-separated (pcie,gpu.xid)")
    judge.add_argument("--skip", metavar="IDS", help="leave out these check ids or areas, comma-separated")
    judge.add_argument(
        "--fail-on", choices=SEVERITIES, default="high", help="exit 1 on a problem of this severity or worse (default: high)"
    )
    judge.add_argument(
        "--expect",
        type=Path,
        metavar="FILE",
        help="the fleet's expected values (driver, gpus, pcie_width...): docs/fleet.md",
    )
    judge.add_argument(
        "--kube-node",
        metavar="SOURCE",
        help="this node's Kubernetes object (a file of `kubectl get node N -o json`, or an http(s) URL of the API "
        "server's node): fewer usable GPUs than its nvidia.com/gpu capacity is a critical problem",
    )
    judge.add_argument("--strict", action="store_true", help="an unknown verdict on a selected check counts as could not check")
    judge.add_argument(
        "--deadline",
        type=number("the deadline", above=0),
        default=DEFAULT_DEADLINE_S,
        metavar="S",
        help=f"the verdict comes within S seconds; checks still running then are not checked (default {DEFAULT_DEADLINE_S:g})",
    )
    judge.add_argument(
        "--concurrency",
        type=int,
        metavar="N",
        help="host operations in flight at once (default: from the host's measured latency, 8 to 64)",
    )
    out = parser.add_argument_group("output")
    out.add_argument("-q", "--quiet", action="store_true", help="print the reason line alone")
    out.add_argument("-v", "--verbose", action="store_true", help="list every check, not only those that matter")
    output(
        out.add_argument("--json", type=Path, metavar="FILE", help="write the result (rigaudit.check/1); - for stdout"),
        stdout=True,
    )
    output(out.add_argument("--prometheus", type=Path, metavar="FILE", help="write node_exporter textfile metrics (atomically)"))
    output(out.add_argument("--transcript", type=Path, metavar="FILE", help="record this run as a transcript (default: none)"))


def _validate(args: argparse.Namespace) -> None:
    if not 0 < args.deadline <= 3600:
        raise UsageError("--deadline must be more than 0 and at most 3600 seconds")
    if args.concurrency is not None and args.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    if args.quiet and args.verbose:
        raise UsageError("--quiet and --verbose exclude each other")
    # --json, --prometheus and --transcript are output flags: cli.main checks them before this runs
    if args.prometheus is not None and not args.prometheus.name.endswith(".prom"):
        raise UsageError(f"--prometheus {args.prometheus}: node_exporter reads only files named *.prom")


def _run(args: argparse.Namespace) -> int:
    _validate(args)
    from rigaudit.orchestrator.gate.watchdog import Watchdog

    watchdog = Watchdog(args.deadline, f"could not check: no verdict {args.deadline:g} s past the deadline (stopped)")
    with watchdog, without_pydantic_plugins(), without_cyclic_collector():
        try:
            return _check(args)
        except RigauditError:
            raise
        except Exception as exc:  # the gate's answer to its own bug: could not check, never a traceback
            text = str(exc).strip().splitlines()
            from rigaudit.tools.core.printable import printable

            print(printable(f"could not check: rigaudit failed: {exc.__class__.__name__}" + (f": {text[0]}" if text else "")))
            print("rigaudit check: this is a bug of rigaudit; please report it with the line above", file=sys.stderr)
            return INTERNAL


def _check(args: argparse.Namespace) -> int:

    from rigaudit.orchestrator.gate.render import report_lines
    from rigaudit.orchestrator.gate.run import GateOptions, plan_gate, run_gate
    from rigaudit.tools.core.printable import printable
    from rigaudit.tools.schema.events.gate import GateReported

    expectations = None
    if args.expect is not None:
        from rigaudit.orchestrator.gate.expect import load_expectations

        expectations = load_expectations(args.expect)
    only = ",".join(filter(None, (args.areas, args.only))) or None  # --areas and --only together: either names it
    plan = plan_gate(only, args.skip, expectations)
    if "promised" in plan.selection.areas:  # the scheduler's settings are read only when their checks are asked for
        plan = plan_gate(only, args.skip, expectations, _promises(args))
    host = open_host(host_source(args))
    options = GateOptions(
        fail_on=args.fail_on,
        deadline_s=args.deadline,
        strict=args.strict,
        facts=args.json is not None,
        concurrency=args.concurrency,
    )

    def reported(result: CheckResult) -> GateReported:
        return GateReported(result=result, quiet=args.quiet, verbose=args.verbose)

    async def main() -> tuple[CheckResult, GateReported]:
        try:
            if args.transcript is None:
                result = await run_gate(host, plan, options)
                return result, reported(result)
            from rigaudit.orchestrator.session.core import open_session

            with open_session("check", consumers=[], transcript=args.transcript, host=host.name, source=host.source) as session:
                result = await run_gate(host, plan, options, emit=session.emit)
                report = reported(result)
                session.emit(report)  # what a replay draws: the lines printed below
                session.exit_code = result.exit_code
                return result, report
        finally:
            await host.aclose()

    from rigaudit.orchestrator.session.run_async import run_held

    result, report = run_held(main)
    to_stdout = args.json is not None and str(args.json) == "-"
    shown = "\n".join(printable(line) for line in report_lines(report))  # as a replay draws it: escapes shown
    print(shown, file=sys.stderr if to_stdout else sys.stdout, flush=True)
    failed = _write_outputs(args, result)
    return NOT_CHECKED if failed and result.exit_code == 0 else result.exit_code


def _promises(args: argparse.Namespace) -> Promises:
    """What the scheduler says this node holds: Slurm's GRES ($SLURM_CONF; /etc/slurm/slurm.conf on this machine
    itself), the Kubernetes node object ``--kube-node`` names."""
    from rigaudit.orchestrator.gate import kube_node, slurm_gres
    from rigaudit.orchestrator.gate.promised import Promises

    live = args.snapshot is None and args.demo is None
    node = kube_node.load(args.kube_node) if args.kube_node else None
    return Promises(slurm=slurm_gres.load(live=live), kubernetes=node)


def _write_outputs(args: argparse.Namespace, result: CheckResult) -> bool:
    """Write --json and --prometheus; a failure is one line on stderr. True when one failed."""
    failed = False
    if args.prometheus is not None:
        from rigaudit.orchestrator.gate.prometheus import write_textfile

        try:
            write_textfile(args.prometheus, result)
        except OSError as exc:
            print(f"rigaudit check: cannot write {args.prometheus}: {exc.strerror or exc}", file=sys.stderr)
            failed = True
    if args.json is not None:
        from rigaudit.orchestrator.report.output import write_json

        try:
            write_json(args.json, result.model_dump_json(by_alias=True, indent=2))
        except UsageError as exc:
            print(f"rigaudit check: {exc}", file=sys.stderr)
            failed = True
    return failed


COMMAND = Command(
    "check", "judge this machine as a scheduler's health check (exit 0/1/3, one reason line)", _add, _run, __doc__ or ""
)
