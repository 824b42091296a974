"""Show a recorded session again, or re-diagnose its audit with today's investigators.

Examples:
  rigaudit replay last                          the newest transcript, at the recorded pace
  rigaudit replay last --rediagnose             the newest session that audited (audit, apply, chat)
  rigaudit replay FILE --speed 4                four times faster
  rigaudit replay FILE --no-live                plain lines, as fast as possible
  rigaudit replay FILE --rediagnose             rebuild the host from the recorded tool results,
                                                run today's investigators, show what changed
  rigaudit replay FILE --rediagnose --json changes.json

FILE is a path, `last`, or a unique part of a stored transcript's name (`rigaudit transcripts list`).
Exit status: 0 replayed, or re-diagnosed with no change; 1 re-diagnosis found changes;
2 not a transcript (or another usage error).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.output import warn, write_json
from rigaudit.orchestrator.rediagnose import rediagnose
from rigaudit.orchestrator.ui.terminal import terminal_for
from rigaudit.tools.diffing import FindingChange
from rigaudit.tools.errors import UsageError
from rigaudit.transcripts.reader import Transcript, read_transcript
from rigaudit.transcripts.replay import DEFAULT_MAX_GAP_S, replay_events
from rigaudit.transcripts.store import AUDIT_COMMANDS, AUDIT_MARK, find_transcript

REDIAGNOSE_SCHEMA = "rigaudit.rediagnose/1"


def _add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="a transcript: path, `last`, or part of a stored name")
    parser.add_argument("--speed", type=float, default=1.0, metavar="X", help="pace: 1 as recorded, 4 faster, 0 at once")
    parser.add_argument("--no-live", action="store_true", help="plain lines instead of the live board, as fast as possible")
    parser.add_argument("--all", action="store_true", help="list every check of an audit (default: problems and unknowns)")
    parser.add_argument(
        "--max-gap", type=float, default=DEFAULT_MAX_GAP_S, metavar="S", help="shorten longer pauses to S seconds"
    )
    group = parser.add_argument_group("re-diagnosis")
    group.add_argument("--rediagnose", action="store_true", help="re-run today's investigators on the recorded evidence")
    group.add_argument("--json", type=Path, metavar="FILE", help="with --rediagnose: write the changes as JSON; - for stdout")
    group.add_argument("--audit", type=int, default=1, metavar="N", help="which audit of the session (apply audits twice)")
    group.add_argument("--all-areas", action="store_true", help="run every investigator, not only the areas recorded")
    group.add_argument("--save-snapshot", type=Path, metavar="DIR", help="keep the rebuilt snapshot in DIR")


def load(name: str, *, audited: bool = False) -> Transcript:
    """Find and read a transcript (every problem with it is a usage error, exit 2); its warnings go to stderr.
    ``audited``: ``last`` is the newest session that recorded an audit (a bench run after it is passed over)."""
    kind: dict[str, Any] = {"commands": AUDIT_COMMANDS, "holding": AUDIT_MARK} if audited else {}
    transcript = read_transcript(find_transcript(name, **kind))
    warn(transcript.warnings)
    return transcript


def _when(t: float) -> str:
    return datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S")


def _replay(args: argparse.Namespace, transcript: Transcript) -> int:
    if args.speed < 0:
        raise UsageError("--speed must be 0 (at once) or more")
    speed = 0.0 if args.no_live else args.speed
    ui = terminal_for(args, show_all=args.all)
    console = ui.console
    first = transcript.events[0].t if transcript.events else 0.0
    console.print(
        f"[dim]replaying {transcript.path} (recorded {_when(first)}, {len(transcript.events)} events, "
        f"{transcript.duration_s:.1f} s{'' if speed == 0 else f', speed {speed:g}'})[/dim]"
    )
    try:
        replay_events(transcript.events, ui, speed=speed, max_gap_s=max(0.0, args.max_gap))
    finally:
        ui.close()
    return 0


# -- re-diagnosis ------------------------------------------------------------------------


_REDIAGNOSE_WORDS = {"only_b": "new", "only_a": "dropped", "observed": "changed"}
"""Recorded = A, today = B: a check only today is new, one only recorded is dropped."""


def _print_changes(changes: list[FindingChange], recorded: int, current: int, out: Any) -> None:
    if not changes:
        print(f"No change: today's investigators reach the same {current} findings as recorded.", file=out)
        return
    print(f"{len(changes)} change(s) between the {recorded} recorded findings and today's {current}:", file=out)
    width = max(len(c.check) for c in changes)
    for change in changes:
        kind = _REDIAGNOSE_WORDS.get(change.kind, change.kind)
        print(f"  {kind:<9} {change.check:<{width}}  {change.detail}", file=out)
        finding = change.after or change.before
        if change.kind in ("appeared", "only_b") and finding is not None and finding.status == "problem":
            print(f"  {'':<9} {'':<{width}}  {finding.title}: {finding.observed}", file=out)


def _run_rediagnose(args: argparse.Namespace, transcript: Transcript) -> int:
    json_to_stdout = args.json is not None and str(args.json) == "-"
    out = sys.stderr if json_to_stdout else sys.stdout
    changes, recorded, report, mismatches, result = rediagnose(
        transcript, number=args.audit, all_areas=args.all_areas, keep=args.save_snapshot
    )
    session = transcript.session
    what = f"{session.command} of {session.host or '?'}" if session else "session"
    print(f"Re-diagnosing {transcript.path}: {what}, recorded {_when(transcript.events[0].t)}", file=out)
    print(f"Rebuilt the host from its tool results: {report.summary()}", file=out)
    for warning in [*report.warnings, *mismatches][:10]:
        print(f"  warning: {warning}", file=out)
    if args.save_snapshot:
        print(f"Snapshot kept in {args.save_snapshot}", file=out)
    _print_changes(changes, len(recorded), len(result.findings), out)
    if args.json:
        payload = {
            "schema": REDIAGNOSE_SCHEMA,
            "transcript": str(transcript.path),
            "audit": args.audit,
            "identical": not changes,
            "recorded": len(recorded),
            "current": len(result.findings),
            "changes": [c.to_json() for c in changes],
            "rebuild": {"summary": report.summary(), "warnings": report.warnings, "mismatches": mismatches},
            "result": result.model_dump(mode="json", by_alias=True),
        }
        write_json(args.json, json.dumps(payload, indent=2))
    return 0 if not changes else 1


def _run(args: argparse.Namespace) -> int:
    if args.json is not None and not args.rediagnose:
        raise UsageError("--json needs --rediagnose")
    transcript = load(args.file, audited=args.rediagnose)
    if args.rediagnose:
        return _run_rediagnose(args, transcript)
    return _replay(args, transcript)


COMMAND = Command("replay", "show a recorded session again, or re-diagnose it with today's rules", _add, _run, __doc__ or "")
