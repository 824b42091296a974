"""List every check the audit runs: its id, area, what it reads, when it is a problem and how it is fixed.

`rigaudit checks` prints a table; `--json` the catalog as JSON; `--markdown` the text of docs/checks.md;
`--areas A,B` limits the list to these areas (as in audit and check); `--transcript FILE` records the session
(by default nothing is written).
"""

from __future__ import annotations

import argparse
import sys

from rigaudit.agents.catalog import catalog
from rigaudit.agents.registry import area_names, resolve_areas
from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.commands._options import add_transcript_argument, screen, transcript_path
from rigaudit.orchestrator.session.query import query_session
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.schema.events.catalog import CheckEntry, ChecksListed


def _add(parser: argparse.ArgumentParser) -> None:
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print the catalog as JSON")
    form.add_argument("--markdown", action="store_true", help="print docs/checks.md")
    parser.add_argument("--areas", metavar="A,B", help="only these areas, comma-separated (as in audit and check)")
    parser.add_argument("--area", action="append", metavar="AREA", help=argparse.SUPPRESS)  # the old spelling
    add_transcript_argument(parser)


def _run(args: argparse.Namespace) -> int:
    checks = catalog()
    if args.area:
        print("rigaudit: note: --area is now --areas A,B (one spelling in audit, check and checks)", file=sys.stderr)
    chosen = ",".join(filter(None, [args.areas, *(args.area or [])]))
    if chosen:
        areas, notes, unknown = resolve_areas(chosen)
        if unknown:
            raise UsageError(f"unknown area {', '.join(unknown)} (areas: {', '.join(area_names())})")
        for note in notes:
            print(f"rigaudit: note: {note}", file=sys.stderr)
        checks = [c for c in checks if c.area in set(areas)]
    entries = [CheckEntry.model_validate(c.as_dict()) for c in checks]
    event = ChecksListed(checks=entries, form="json" if args.json else "markdown" if args.markdown else "table")
    with query_session("checks", screen(args), transcript_path(args)) as session:
        session.emit(event)
    return 0


COMMAND = Command("checks", "list the checks the audit runs (the check catalog)", _add, _run, __doc__ or "")
