"""Recorded sessions: list them, show one, or print where they are kept.

Every audit, apply, bench and chat session is recorded (unless --no-transcript) as JSONL in
$XDG_STATE_HOME/rigaudit/transcripts (default ~/.local/state/rigaudit/transcripts).

Examples:
  rigaudit transcripts list
  rigaudit transcripts show last
  rigaudit transcripts show FILE --events
  rigaudit transcripts path
  rigaudit transcripts show last --transcript shown.jsonl   also record what was shown (not recorded by default)
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.commands._options import add_transcript_argument, screen, transcript_path
from rigaudit.orchestrator.report.output import warn
from rigaudit.orchestrator.session.query import query_session
from rigaudit.orchestrator.session.transcripts import listed, summary
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.schema.events.transcripts import TranscriptsFolder
from rigaudit.tools.schema.events.union import Event
from rigaudit.transcripts.reader import read_transcript
from rigaudit.transcripts.store import find_transcript, transcripts_dir


def _add(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    listing = sub.add_parser("list", help="the recorded sessions, newest first")
    listing.add_argument("--dir", type=Path, metavar="DIR", help="another folder of transcripts")
    show = sub.add_parser("show", help="what one transcript holds")
    show.add_argument("file", metavar="FILE", help="a path, `last` (your own newest), or part of a stored name")
    show.add_argument("--events", action="store_true", help="also list every event, one line each")
    path = sub.add_parser("path", help="print the folder where transcripts are kept")
    for each in (listing, show, path):
        add_transcript_argument(each)


def _event(args: argparse.Namespace) -> Event:
    action = getattr(args, "action", None)
    if action == "path":
        return TranscriptsFolder(path=str(transcripts_dir()))
    if action == "list":
        return listed(args.dir or transcripts_dir())
    if action == "show":
        transcript = read_transcript(find_transcript(args.file))
        warn(transcript.warnings)
        return summary(transcript, with_events=args.events)
    raise UsageError("say what to do: rigaudit transcripts list | show FILE | path")


def _run(args: argparse.Namespace) -> int:
    event = _event(args)
    with query_session("transcripts", screen(args), transcript_path(args)) as session:
        session.emit(event)
    return 0


COMMAND = Command("transcripts", "list, show or locate recorded sessions", _add, _run, __doc__ or "")
