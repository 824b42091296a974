"""Screenshot-as-text of `rigaudit audit --demo seed` in an 80-column terminal, for docs/terminal/.

It runs the audit of the seed demo and draws its events with the same terminal UI a person gets,
at the width asked for, as the screen reads once the live board has gone: the session line, then
the verdict (the board itself is transient). Run it again after changing what the terminal shows:

    python benchmarks/terminal_screenshot.py            # docs/terminal/seed-audit-80.txt and -120.txt
    python benchmarks/terminal_screenshot.py --width 100 --out -

Timings ("in 1.51 s") and the demo's unpacked path differ from run to run and machine to machine.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import anyio
from rich.console import Console

from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.orchestrator.ui.terminal import TerminalUI
from rigaudit.tools.hosts.demo import demo_snapshot
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.events.audit import InvestigatorActivity, InvestigatorFinished
from rigaudit.tools.schema.events.session import SessionStarted
from rigaudit.tools.schema.events.union import Event

DOCS = Path(__file__).resolve().parent.parent / "docs" / "terminal"


def screen(width: int, demo: str = "seed") -> str:
    """What the terminal shows after `rigaudit audit --demo DEMO` at ``width`` columns (no colour)."""
    host = SnapshotHost(demo_snapshot(demo))
    events: list[Event] = [SessionStarted(command="audit", host=host.name, source=host.source)]
    anyio.run(lambda: run_audit(host, emit=events.append))
    out = io.StringIO()
    ui = TerminalUI(Console(file=out, width=width, color_system=None, highlight=False, force_terminal=False), live=False)
    for event in events:
        if not isinstance(event, InvestigatorFinished | InvestigatorActivity):  # the live board, gone by now
            ui(event)
    ui.close()
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--width", type=int, action="append", help="columns (default: 80 and 120)")
    parser.add_argument("--demo", default="seed")
    parser.add_argument("--out", help="a file, or - for stdout (default: docs/terminal/<demo>-audit-<width>.txt)")
    args = parser.parse_args()
    for width in args.width or [80, 120]:
        text = screen(width, args.demo)
        if args.out == "-":
            sys.stdout.write(text)
            continue
        path = Path(args.out) if args.out else DOCS / f"{args.demo}-audit-{width}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        widest = max(len(line) for line in text.splitlines())
        print(f"{path}: {len(text.splitlines())} lines, widest {widest} of {width} columns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
