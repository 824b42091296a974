"""List every check the audit runs: its id, area, what it reads, when it is a problem and how it is fixed.

`rigaudit checks` prints a table; `--json` the catalog as JSON; `--markdown` the text of docs/checks.md;
`--area AREA` limits the list to one or more areas.
"""

from __future__ import annotations

import argparse
import json

from rigaudit.agents.catalog import catalog, render_markdown
from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.errors import UsageError


def _add(parser: argparse.ArgumentParser) -> None:
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print the catalog as JSON")
    form.add_argument("--markdown", action="store_true", help="print docs/checks.md")
    parser.add_argument("--area", action="append", metavar="AREA", help="only these areas (repeatable)")


def _run(args: argparse.Namespace) -> int:
    entries = catalog()
    if args.area:
        known = {e.area for e in entries}
        unknown = sorted(set(args.area) - known)
        if unknown:
            raise UsageError(f"unknown area {', '.join(unknown)} (areas: {', '.join(sorted(known))})")
        entries = [e for e in entries if e.area in set(args.area)]
    if args.json:
        print(json.dumps({"schema": "rigaudit.checks/1", "checks": [e.as_dict() for e in entries]}, indent=2))
    elif args.markdown:
        print(render_markdown(entries), end="")
    else:
        width = max(len(e.check) for e in entries)
        for entry in entries:
            doc = entry.doc
            title = doc.title if doc else ""
            kinds = f"  [{', '.join(doc.kinds)}]" if doc and doc.kinds else ""
            print(f"{entry.check:<{width}}  {title}{kinds}")
        print(f"{len(entries)} checks")
    return 0


COMMAND = Command("checks", "list the checks the audit runs (the check catalog)", _add, _run, __doc__ or "")
