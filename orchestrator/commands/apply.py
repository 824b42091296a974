"""Apply the plan's runtime fixes, each approved, journaled, verified, and reversible.

Examples:
  rigaudit apply                                   audit this machine, then ask about each runtime step
  rigaudit apply --plan audit.json --only numa.balancing
  rigaudit apply --snapshot SEED --into COPY --yes      prove the plan on a copy of a snapshot
  rigaudit apply --demo --into COPY                     the same on a copy of the shipped demo
  rigaudit apply --emit-script hypervisor.sh       steps for another machine, as a reviewed script

Only runtime steps run (--scope runtime); restart, reboot, firmware and hardware steps are listed
as deferred. Steps for the hypervisor are never attempted here. Without a terminal nothing is
applied unless --yes is given. Every change is journaled before it is made:
`rigaudit rollback JOURNAL` undoes it.

A plan file (--plan) is data: on this machine it is applied only when a machine id it recorded
(machine-id or product uuid; a name is not enough) is this machine's, and each step it would run
is the one rigaudit's own rule gives on this machine's facts (audited again), action for action and
value for value; else nothing is changed and one line names what is missing or the step (exit 2).
Into a new snapshot copy (--into) a plan is applied as given: it writes only inside the copy.

At each step: y(es), n(o), a(ll remaining runtime steps), d(etails), q(uit). End of input
(Ctrl-D), or no answer within --approval-timeout seconds (default 300), is "no" to that step and
stops there; Ctrl-C ends the run at once. Either way the steps
done so far are listed, journaled and written to the report.

Exit status: 0 done; 1 a change failed (and was reverted where it could be); 2 usage error;
3 not approved (no terminal and no --yes, quit, end of input or no answer in time at a prompt);
130 interrupted.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import anyio

from rigaudit.orchestrator.change.apply import SCOPES, load_plan_file
from rigaudit.orchestrator.change.apply_run import ApplyRequest, run_apply
from rigaudit.orchestrator.change.approval import TerminalConsole
from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.commands._approval import add_approval_timeout
from rigaudit.orchestrator.commands._options import add_session_arguments, screen
from rigaudit.orchestrator.commands._outputs import output
from rigaudit.orchestrator.hosts.choose import DEMO_HELP, demo_path
from rigaudit.orchestrator.hosts.identity import identify
from rigaudit.orchestrator.report.document import choose_report
from rigaudit.orchestrator.report.output import check_writable
from rigaudit.orchestrator.session.core import open_session
from rigaudit.orchestrator.ui.terminal import terminal_for
from rigaudit.tools.actions.journal import default_journal_path
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.files.outputs import Kind
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.events.session import Warning_


def _add(parser: argparse.ArgumentParser) -> None:
    where = parser.add_argument_group("where (default: this machine)")
    source = where.add_mutually_exclusive_group()
    source.add_argument("--snapshot", type=Path, metavar="SRC", help="a snapshot to copy and apply to (needs --into)")
    source.add_argument(
        "--demo", nargs="?", const="default", metavar="NAME", help=f"copy and apply to {DEMO_HELP} (needs --into)"
    )
    output(
        where.add_argument("--into", type=Path, metavar="DST", help="the new copy of --snapshot or --demo that is changed"),
        Kind.NEW_FOLDER,
    )
    parser.add_argument("--plan", type=Path, metavar="FILE", help="the plan from `audit --json FILE` (default: audit now)")
    parser.add_argument("--scope", choices=SCOPES, default="runtime", help="which steps may run (default: runtime)")
    parser.add_argument("--only", metavar="STEP,...", help="only these step ids")
    parser.add_argument("--yes", action="store_true", help="approve every runtime step without asking (scripts)")
    add_approval_timeout(parser)
    parser.add_argument(
        "--persist",
        action="store_true",
        help="also write sysctl.d/modules-load.d/tmpfiles.d/udev files (not on Talos or Bottlerocket: their own config)",
    )
    output(parser.add_argument("--journal", type=Path, metavar="FILE", help="where to journal the changes (default: state dir)"))
    output(parser.add_argument("--emit-script", type=Path, metavar="FILE", help="write the steps not run here as a bash script"))
    output(
        parser.add_argument(
            "--report", type=Path, metavar="FILE", help="append to this report (default: ./system-improve.md if it exists)"
        )
    )
    add_session_arguments(parser)


def _source_host(args: argparse.Namespace) -> Host:
    if args.demo is not None and args.into is None:
        raise UsageError("--demo and --into DST go together (the demo is changed only as a new copy)")
    if args.demo is not None:
        args.snapshot = demo_path(args.demo)
    if (args.snapshot is None) != (args.into is None):
        raise UsageError("--snapshot SRC and --into DST go together (a snapshot is changed only as a new copy)")
    if args.snapshot is not None:
        return SnapshotHost(args.snapshot)
    from rigaudit.tools.hosts.local import LocalHost

    return LocalHost()


def _run(args: argparse.Namespace) -> int:
    only = [s.strip() for s in args.only.split(",") if s.strip()] if args.only else None
    source = _source_host(args)
    for path, what in ((args.journal, "--journal"), (args.emit_script, "--emit-script")):
        if path is not None:
            check_writable(path, what)
    if args.journal is not None and args.journal.is_file() and args.journal.stat().st_size > 0:
        raise UsageError(f"--journal {args.journal}: a journal already exists there (choose another --journal)")
    plan, plan_host = load_plan_file(args.plan) if args.plan is not None else (None, None)
    report, note = choose_report(args.report, anyio.run(identify, source))
    request = ApplyRequest(
        journal=args.journal or default_journal_path(),
        plan=plan,
        plan_host=plan_host,
        snapshot=args.snapshot,
        into=args.into.absolute() if args.into is not None else None,
        scope=args.scope,
        only=only,
        persist=args.persist,
        assume_yes=args.yes,
        emit_script=args.emit_script,
        report=report,
    )
    with open_session(
        "apply",
        consumers=[terminal_for(screen(args))],
        transcript=args.transcript,
        record=not args.no_transcript,
        host=source.name,
        source=source.source,
        options={"scope": args.scope, "only": only, "persist": args.persist, "yes": args.yes},
    ) as session:
        if note:
            session.emit(Warning_(text=note))
        console = TerminalConsole(timeout_s=args.approval_timeout)
        applied = anyio.run(lambda: run_apply(source, request, emit=session.emit, console=console))
        session.exit_code = 1 if applied.problems else 3 if applied.quit else 0
    return session.exit_code


COMMAND = Command(
    "apply", "apply the plan's runtime fixes (approved, journaled, verified, reversible)", _add, _run, __doc__ or ""
)
