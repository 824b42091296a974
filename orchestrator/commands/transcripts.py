"""Recorded sessions: list them, show one, or print where they are kept.

Every audit, apply, bench and chat session is recorded (unless --no-transcript) as JSONL in
$XDG_STATE_HOME/rigaudit/transcripts (default ~/.local/state/rigaudit/transcripts).

Examples:
  rigaudit transcripts list
  rigaudit transcripts show last
  rigaudit transcripts show FILE --events
  rigaudit transcripts path
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.output import warn
from rigaudit.tools.errors import UsageError
from rigaudit.tools.model.events import (
    ApprovalDecided,
    BenchResultReported,
    ChangeApplied,
    Event,
    FindingReported,
    InvestigatorActivity,
    InvestigatorFinished,
    LlmExchange,
    Message,
    ReportWritten,
    ToolCall,
    Warning_,
)
from rigaudit.transcripts.reader import Transcript, read_transcript
from rigaudit.transcripts.store import find_transcript, list_transcripts, transcripts_dir


def _add(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    listing = sub.add_parser("list", help="the recorded sessions, newest first")
    listing.add_argument("--dir", type=Path, metavar="DIR", help="another folder of transcripts")
    show = sub.add_parser("show", help="what one transcript holds")
    show.add_argument("file", metavar="FILE", help="a path, `last`, or part of a stored name")
    show.add_argument("--events", action="store_true", help="also list every event, one line each")
    sub.add_parser("path", help="print the folder where transcripts are kept")


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


def _list(directory: Path | None) -> int:
    folder = directory or transcripts_dir()
    infos = list_transcripts(folder)
    if not infos:
        print(f"no transcripts in {folder}")
        return 0
    rows = [("STARTED", "COMMAND", "HOST", "EVENTS", "DURATION", "EXIT", "FILE")]
    for info in infos:
        if info.error:
            rows.append(("?", "?", "?", "-", "-", "-", f"{info.path.name} ({info.error})"))
            continue
        exit_text = "-" if info.exit_code is None else str(info.exit_code)
        rows.append(
            (info.started, info.command, info.host, str(info.events), _duration(info.duration_s), exit_text, info.path.name)
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1])
    print(f"({len(infos)} in {folder}; EXIT - means the session did not record its end)")
    return 0


def describe(event: Event) -> str:
    """One line about an event, for ``show --events``."""
    if isinstance(event, ToolCall):
        error = event.result.get("error")
        return f"{event.area or '-'}: {event.op} {event.target}" + (f" -> {error}" if error else "")
    if isinstance(event, InvestigatorActivity):
        return f"{event.area}: {event.ref}"
    if isinstance(event, InvestigatorFinished):
        return f"{event.area}: {event.status} in {event.duration_s:.2f}s"
    if isinstance(event, FindingReported):
        f = event.finding
        return f"{f.check}: {f.status}{f' ({f.severity})' if f.severity else ''}: {f.title}"
    if isinstance(event, (Message, Warning_)):
        return event.text.splitlines()[0] if event.text else ""
    fields = event.model_dump(exclude={"t", "type"})
    text = ", ".join(f"{k}={v}" for k, v in fields.items() if isinstance(v, (str, int, float)) and v != "")
    return text if len(text) <= 160 else text[:157] + "..."


def _show(transcript: Transcript, with_events: bool) -> int:
    header, events = transcript.header, transcript.events
    print(f"file:      {transcript.path}")
    writer = f", written by rigaudit {header['rigaudit']}" if header.get("rigaudit") else ""
    created = f", created {header['created_at']}" if header.get("created_at") else ""
    print(f"format:    {header.get('transcript')}{writer}{created}")
    session, ended = transcript.session, transcript.ended
    if session is not None:
        print(f"session:   {session.command} of {session.host or '?'} ({session.source or '?'})")
        if session.options:
            print("options:   " + ", ".join(f"{k}={v}" for k, v in session.options.items()))
        if session.versions:
            print("versions:  " + ", ".join(f"{k} {v}" for k, v in session.versions.items()))
    end = f"exit {ended.exit_code}" + (f" ({ended.reason})" if ended.reason else "") if ended else "no recorded end"
    print(f"duration:  {_duration(transcript.duration_s)}, {end}")
    counts = Counter(e.type for e in events)
    print(f"events:    {len(events)}: " + ", ".join(f"{n} {kind}" for kind, n in counts.most_common()))
    finished = [e for e in events if isinstance(e, InvestigatorFinished)]
    if finished:
        print("investigators: " + ", ".join(f"{e.area} {e.status}" for e in finished))
    findings = transcript.findings
    if findings:
        problems = [f.finding for f in findings if f.finding.status == "problem"]
        listed = ", ".join(f"{p.check} ({p.severity})" for p in problems)
        print(f"findings:  {len(findings)}, {len(problems)} problem(s)" + (f": {listed}" if listed else ""))
    audit = transcript.audit
    if audit is not None:
        print(f"plan:      {len(audit.result.plan.steps)} step(s)")
    for kind, label in ((ApprovalDecided, "approvals"), (ChangeApplied, "changes"), (BenchResultReported, "benchmarks")):
        n = sum(1 for e in events if isinstance(e, kind))
        if n:
            print(f"{label + ':':<10} {n}")
    usage = Counter[str]()
    for event in events:
        if isinstance(event, LlmExchange):
            usage.update(event.usage)
    if usage:
        print("LLM usage: " + ", ".join(f"{k} {v}" for k, v in sorted(usage.items())))
    for event in events:
        if isinstance(event, ReportWritten):
            print(f"report:    {event.path}")
    if with_events and events:
        start = events[0].t
        for event in events:
            print(f"+{event.t - start:9.3f}s  {event.type:<22} {describe(event)}")
    return 0


def _run(args: argparse.Namespace) -> int:
    action = getattr(args, "action", None)
    if action == "path":
        print(transcripts_dir())
        return 0
    if action == "list":
        return _list(args.dir)
    if action == "show":
        transcript = read_transcript(find_transcript(args.file))
        warn(transcript.warnings)
        return _show(transcript, args.events)
    raise UsageError("say what to do: rigaudit transcripts list | show FILE | path")


COMMAND = Command("transcripts", "list, show or locate recorded sessions", _add, _run, __doc__ or "")
