"""Compare two audits: what changed across a driver update, or between two nodes that should match.

A and B are each a snapshot directory, an audit JSON (`rigaudit audit --json`), a transcript (JSONL)
or a share bundle (`rigaudit snapshot --share`). Snapshots and bundles are audited now; audit JSONs
and transcripts give the findings they recorded. Findings are matched by check id: appeared,
resolved, status, severity or observed value changed. Between snapshots the values read are
compared too (files, commands, NVML calls); with --values a transcript's snapshot is rebuilt from
its tool calls so that its values are compared as well. Values that move on their own (power,
temperature, free memory, /proc counters) are listed apart and do not count as differences.

Examples:
  rigaudit diff before/ after/                   two snapshots: findings and values read
  rigaudit diff node1.json node2.json            two audit results
  rigaudit diff old.jsonl new/ --values          a transcript against a snapshot, values included
  rigaudit diff a/ b/ --json diff.json           also write rigaudit.diff/1
  rigaudit diff a/ b/ --transcript diff.jsonl    also record the session (replay it with `rigaudit replay`)

Exit status: 0 no differences; 1 differences; 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import anyio

from rigaudit.orchestrator.audit.diff import Side, diff_event, diff_json, load_side
from rigaudit.orchestrator.audit.run import AuditOptions
from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.commands._options import add_transcript_argument, screen, transcript_path
from rigaudit.orchestrator.commands._outputs import output
from rigaudit.orchestrator.report.output import check_writable, write_json
from rigaudit.orchestrator.session.query import query_session
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.diffing import ValuesDiff, diff_document, diff_findings, diff_snapshots, headline
from rigaudit.tools.schema.events.diff import DiffReported


def _add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", type=Path, metavar="A", help="snapshot dir, audit JSON, transcript or share bundle")
    parser.add_argument("b", type=Path, metavar="B", help="the same kinds; compared with A")
    output(
        parser.add_argument("--json", type=Path, metavar="FILE", help="write the diff (rigaudit.diff/1); - for stdout"),
        stdout=True,
    )
    parser.add_argument("--values", action="store_true", help="also compare a transcript's values (rebuilds its snapshot)")
    parser.add_argument("--rows", type=int, default=40, metavar="N", help="value changes shown in the table (default 40)")
    add_transcript_argument(parser)


async def _load_both(args: argparse.Namespace, scratch: Path) -> tuple[Side, Side]:
    options = AuditOptions()
    (scratch / "a").mkdir()
    (scratch / "b").mkdir()
    a = await load_side(args.a, values=args.values, scratch=scratch / "a", options=options)
    b = await load_side(args.b, values=args.values, scratch=scratch / "b", options=options)
    return a, b


def _values(a: Side, b: Side) -> tuple[ValuesDiff | None, str]:
    if a.snapshot is None or b.snapshot is None:
        lacking = [s for s in (a, b) if s.snapshot is None]
        hint = " (add --values)" if any(s.kind == "transcript" for s in lacking) else ""
        what = ", ".join(f"{s.path} is {'an' if s.kind == 'audit' else 'a'} {s.kind}" for s in lacking)
        return None, f"values not compared: {what}{hint}"
    return diff_snapshots(a.snapshot, b.snapshot), ""


def _diff(args: argparse.Namespace) -> DiffReported:
    with tempfile.TemporaryDirectory(prefix="rigaudit-diff-") as tmp:
        a, b = anyio.run(_load_both, args, Path(tmp))
        findings = diff_findings(a.findings, b.findings)
        values, note = _values(a, b)
    warnings = [*a.warnings, *b.warnings]
    changed_facts = headline(a.facts, b.facts, a.findings, b.findings)
    document = diff_document(a.info, b.info, findings, values, values_note=note, warnings=warnings, headline=changed_facts)
    return diff_event(document, facts_compared=bool(a.facts and b.facts), rows=args.rows)


def _run(args: argparse.Namespace) -> int:
    if args.rows < 0:
        raise UsageError("--rows must be 0 or more")
    if args.json is not None:
        check_writable(args.json, "--json")
    with query_session("diff", screen(args), transcript_path(args)) as session:
        event = _diff(args)
        session.emit(event)
        session.exit_code = 1 if event.different else 0
        if args.json is not None:
            write_json(args.json, json.dumps(diff_json(event), indent=2, ensure_ascii=False))
    return session.exit_code


COMMAND = Command("diff", "compare two snapshots, audit results or transcripts", _add, _run, __doc__ or "")
