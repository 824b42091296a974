"""List every check the audit runs: its id, area, what it reads, when it is a problem and how it is fixed.

`rigaudit checks` prints a table; `--json` the catalog as JSON; `--markdown` the text of docs/checks.md;
`--area AREA` limits the list to one or more areas.
"""

from __future__ import annotations

import argparse
import json
import sys

from rigaudit.agents.catalog import catalog, render_markdown
from rigaudit.agents.registry import area_names, resolve_areas
from rigaudit.orchestrator.command import Command
from rigaudit.tools.errors import UsageError


def _add(parser: argparse.ArgumentParser) -> None:
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print the catalog as JSON")
    form.add_argument("--markdown", action="store_true", help="print docs/checks.md")
    parser.add_argument("--area", action="append", metavar="AREA", help="only these areas (repeatable)")


def _run(args: argparse.Namespace) -> int:
    checks = catalog()
    if args.area:
        areas, notes, unknown = resolve_areas(",".join(args.area))
        if unknown:
            raise UsageError(f"unknown area {', '.join(unknown)} (areas: {', '.join(area_names())})")
        for note in notes:
            print(f"rigaudit: note: {note}", file=sys.stderr)
        checks = [c for c in checks if c.area in set(areas)]
    if args.json:
        print(json.dumps({"schema": "rigaudit.checks/1", "checks": [c.as_dict() for c in checks]}, indent=2))
    elif args.markdown:
        print(render_markdown(checks), end="")
    else:
        width = max((len(c.id) for c in checks), default=0)
        for check in checks:
            kinds = f"  [{', '.join(check.kinds)}]" if check.kinds else ""
            print(f"{check.id:<{width}}  {check.title}{kinds}")
        print(f"{len(checks)} checks")
    return 0


COMMAND = Command("checks", "list the checks the audit runs (the check catalog)", _add, _run, __doc__ or "")
