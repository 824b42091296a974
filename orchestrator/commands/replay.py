"""Show a recorded session again, or re-diagnose its audit with today's investigators.

Examples:
  rigaudit replay last                          the newest transcript, at the recorded pace
  rigaudit replay last --rediagnose             the newest session that audited (audit, apply, chat)
  rigaudit replay FILE --speed 4                four times faster
  rigaudit replay FILE --no-live                plain lines, as fast as possible
  rigaudit replay FILE --rediagnose             rebuild the host from the recorded tool results,
                                                run today's investigators, show what changed
  rigaudit replay FILE --rediagnose --json changes.json
  rigaudit replay FILE --rediagnose --transcript rediag.jsonl   also record the re-diagnosis
  rigaudit replay FILE --rediagnose --snapshot DIR   an audit of a snapshot: its reads are recorded by reference,
                                                answered from the snapshot (DIR: where it is now)

FILE is a path, `last`, or a unique part of a stored transcript's name (`rigaudit transcripts list`).
Exit status: 0 replayed, or re-diagnosed with no change; 1 re-diagnosis found changes;
2 not a transcript (or another usage error).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.text import Text

from rigaudit.orchestrator.audit.rediagnose import rediagnose_json, rediagnosis
from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.commands._arguments import number
from rigaudit.orchestrator.commands._options import add_transcript_argument, screen, transcript_path
from rigaudit.orchestrator.commands._outputs import output
from rigaudit.orchestrator.report.output import check_writable, warn, write_json
from rigaudit.orchestrator.session.query import query_session
from rigaudit.orchestrator.ui.queries import when
from rigaudit.orchestrator.ui.terminal import terminal_for
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.printable import printable
from rigaudit.tools.files.outputs import Kind
from rigaudit.transcripts.reader import Transcript, read_transcript
from rigaudit.transcripts.replay import DEFAULT_MAX_GAP_S, replay_events
from rigaudit.transcripts.store import AUDIT_COMMANDS, AUDIT_MARK, find_transcript


def _add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="a transcript: path, `last` (your own newest), or part of a stored name")
    parser.add_argument(
        "--speed",
        type=number("the pace", above=0),
        default=1.0,
        metavar="X",
        help="pace: 1 as recorded, 4 four times faster, 0.5 half as fast (--no-live: at once)",
    )
    parser.add_argument("--no-live", action="store_true", help="plain lines instead of the live board, as fast as possible")
    parser.add_argument("--all", action="store_true", help="list every check of an audit (default: problems and unknowns)")
    parser.add_argument(
        "--max-gap",
        type=number("the longest pause", least=0, infinite=True),
        default=DEFAULT_MAX_GAP_S,
        metavar="S",
        help="shorten longer pauses to S seconds",
    )
    group = parser.add_argument_group("re-diagnosis")
    group.add_argument("--rediagnose", action="store_true", help="re-run today's investigators on the recorded evidence")
    output(
        group.add_argument(
            "--json", type=Path, metavar="FILE", help="with --rediagnose: write the changes as JSON; - for stdout"
        ),
        stdout=True,
    )
    group.add_argument("--audit", type=int, default=1, metavar="N", help="which audit of the session (apply audits twice)")
    group.add_argument("--all-areas", action="store_true", help="run every investigator, not only the areas recorded")
    output(
        group.add_argument("--save-snapshot", type=Path, metavar="DIR", help="keep the rebuilt snapshot in DIR"), Kind.NEW_FOLDER
    )
    group.add_argument(
        "--snapshot",
        type=Path,
        metavar="DIR",
        help="the snapshot an audit of a snapshot read, where it is not at the path recorded (its reads are recorded "
        "by reference)",
    )
    add_transcript_argument(group, "with --rediagnose: record the re-diagnosis to FILE (default: not recorded)")


def load(name: str, *, audited: bool = False) -> Transcript:
    """Find and read a transcript (every problem with it is a usage error, exit 2); its warnings go to stderr.
    ``audited``: ``last`` is the newest session that recorded an audit (a bench run after it is passed over)."""
    kind: dict[str, Any] = {"commands": AUDIT_COMMANDS, "holding": AUDIT_MARK} if audited else {}
    transcript = read_transcript(find_transcript(name, **kind))
    warn(transcript.warnings)
    return transcript


def _replay(args: argparse.Namespace, transcript: Transcript) -> int:
    speed = 0.0 if args.no_live else args.speed
    ui = terminal_for(screen(args), show_all=args.all)
    console = ui.console
    first = transcript.events[0].t if transcript.events else 0.0
    pace = "" if speed == 0 else f", speed {speed:g}"
    header = f"replaying {transcript.path} (recorded {when(first)}, {len(transcript.events)} events, "
    console.print(Text(printable(f"{header}{transcript.duration_s:.1f} s{pace})"), style="dim"))
    try:
        replay_events(transcript.events, ui, speed=speed, max_gap_s=max(0.0, args.max_gap))
    finally:
        ui.close()
    return 0


# -- re-diagnosis ------------------------------------------------------------------------


def _run_rediagnose(args: argparse.Namespace, transcript: Transcript) -> int:
    if args.json is not None:
        check_writable(args.json, "--json")
    with query_session("replay", screen(args), transcript_path(args)) as session:
        event = rediagnosis(
            transcript, number=args.audit, all_areas=args.all_areas, keep=args.save_snapshot, snapshot=args.snapshot
        )
        session.emit(event)
        session.exit_code = 1 if event.changes else 0
        if args.json:
            write_json(args.json, json.dumps(rediagnose_json(event), indent=2))
    return session.exit_code


def _run(args: argparse.Namespace) -> int:
    for given, option in ((args.json, "--json"), (args.transcript, "--transcript"), (args.snapshot, "--snapshot")):
        if given is not None and not args.rediagnose:
            raise UsageError(f"{option} needs --rediagnose")
    transcript = load(args.file, audited=args.rediagnose)
    if args.rediagnose:
        return _run_rediagnose(args, transcript)
    return _replay(args, transcript)


COMMAND = Command("replay", "show a recorded session again, or re-diagnose it with today's rules", _add, _run, __doc__ or "")
