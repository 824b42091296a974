"""Undo an apply: restore every value its journal recorded, newest first, verifying each.

Examples:
  rigaudit rollback ~/.local/state/rigaudit/journals/20261127T091403.123456Z.jsonl
  rigaudit rollback JOURNAL --snapshot COPY --yes       the copy an `apply --into COPY` changed

A journal of an apply that was killed half-way rolls back too: a change journaled but never
concluded is restored to its value before (writing it again is harmless). Each restore is
appended to the journal, so running rollback twice restores nothing twice.

A journal only undoes what its apply wrote: it is checked first against the plan it records (and
that plan's hash), the kinds of change an apply makes, and the machine it was written on (on this
machine: by a machine id the journal recorded, never by the name alone), and it must be one
rigaudit wrote for you: every entry sealed (a keyed MAC, chained) under your journal key
($XDG_STATE_HOME/rigaudit/keys/journal.key, mode 0600), the file and its folder yours or root's, writable
by no one else, and no link. A journal that fails any check is refused with one line (exit 2) and
nothing is touched. The approval lists
every path, value and command the rollback will touch.

Exit status: 0 done; 1 a value could not be restored; 2 usage error or a journal refused;
3 not approved.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import anyio

from rigaudit.orchestrator.change.rollback import prepare_rollback, run_rollback
from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.commands._options import add_session_arguments, screen
from rigaudit.orchestrator.commands._outputs import output
from rigaudit.orchestrator.hosts.identity import identify
from rigaudit.orchestrator.report.document import choose_report
from rigaudit.orchestrator.session.core import open_session
from rigaudit.orchestrator.ui.terminal import terminal_for
from rigaudit.tools.schema.events.session import Warning_


def _add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("journal", type=Path, metavar="JOURNAL", help="the journal `rigaudit apply` wrote")
    parser.add_argument("--snapshot", type=Path, metavar="DIR", help="roll back this snapshot copy (apply --into DIR)")
    parser.add_argument("--yes", action="store_true", help="do not ask (scripts)")
    output(
        parser.add_argument(
            "--report", type=Path, metavar="FILE", help="append to this report (default: ./system-improve.md if it exists)"
        )
    )
    add_session_arguments(parser)


def _run(args: argparse.Namespace) -> int:
    prepared = anyio.run(prepare_rollback, args.journal, args.snapshot)
    report, note = choose_report(args.report, anyio.run(identify, prepared.host))
    ui = terminal_for(screen(args))
    with open_session(
        "rollback",
        consumers=[ui],
        transcript=args.transcript,
        record=not args.no_transcript,
        host=prepared.host.name,
        source=prepared.host.source,
        options={"journal": str(args.journal)},
    ) as session:
        if note:
            session.emit(Warning_(text=note))
        finished = anyio.run(lambda: run_rollback(prepared, assume_yes=args.yes, emit=session.emit, report=report))
        session.exit_code = 1 if finished.failed else 0
    return session.exit_code


COMMAND = Command("rollback", "undo an apply from its journal (newest change first, each verified)", _add, _run, __doc__ or "")
