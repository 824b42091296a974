"""Plain lines for the query commands' events: the check catalog, the policy, transcripts, a re-diagnosis.

The terminal prints them as they are (text from hosts and transcripts shows its control characters as escapes).
"""

from __future__ import annotations

import json
import math

from rigaudit.agents.llm.cost import usd
from rigaudit.tools.files.when import local_stamp
from rigaudit.tools.schema.events.catalog import CheckEntry, ChecksListed, PolicyListed, PolicyVerdict, SchemaShown
from rigaudit.tools.schema.events.diff import RediagnoseFinished
from rigaudit.tools.schema.events.transcripts import TranscriptShown, TranscriptsListed
from rigaudit.transcripts.store import SKIPPED

CHECKS_SCHEMA = "rigaudit.checks/1"


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines too) as one space."""
    return " ".join(text.split())


def duration(seconds: float | None) -> str:
    """``12.3s``, ``4m05s``, ``2h07m``; ``?`` when unknown."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


def when(t: float) -> str:
    """Local time of an epoch ``t``, to the second (``?`` for one no clock shows)."""
    return local_stamp(t) or "?"


# -- checks, policy, schema --------------------------------------------------------------


def checks_document(checks: list[CheckEntry]) -> dict[str, object]:
    """``rigaudit.checks/1``: what ``rigaudit checks --json`` writes."""
    return {"schema": CHECKS_SCHEMA, "checks": [c.model_dump(mode="json") for c in checks]}


def checks_text(event: ChecksListed) -> str:
    """The catalog in the form asked for: a line per check, JSON, or docs/checks.md (each ending in a newline)."""
    if event.form == "json":
        return json.dumps(checks_document(event.checks), indent=2) + "\n"
    if event.form == "markdown":
        from rigaudit.agents.catalog import render_entries  # the registry: only for this form

        return render_entries([c.model_dump(mode="json") for c in event.checks])
    width = max((len(c.check) for c in event.checks), default=0)
    lines = [f"{c.check:<{width}}  {c.title}" + (f"  [{', '.join(c.fix_kinds)}]" if c.fix_kinds else "") for c in event.checks]
    return "".join(line + "\n" for line in [*lines, f"{len(event.checks)} checks"])


def schema_text(event: SchemaShown) -> str:
    return json.dumps(event.document, indent=2) + "\n"


def policy_verdict_lines(event: PolicyVerdict) -> list[str]:
    """``deny <reason> [rule]``: the verdict word first, on one line."""
    return [f"{event.decision} {one_line(event.reason)}" + (f" [{event.rule}]" if event.rule else "")]


def policy_rules_lines(event: PolicyListed) -> list[str]:
    width = max((len(rule.name) for rule in event.rules), default=0)
    return [f"{rule.name:<{width}}  {rule.decision:<5}  {one_line(rule.description)}" for rule in event.rules]


# -- transcripts -------------------------------------------------------------------------


def transcripts_lines(event: TranscriptsListed) -> list[str]:
    """A row per stored transcript, newest first, in aligned columns; then how many and where."""
    if not event.entries:
        return [f"no transcripts in {event.folder}"]
    rows = [("STARTED", "COMMAND", "HOST", "EVENTS", "DURATION", "EXIT", "FILE")]
    for entry in event.entries:
        if entry.error:
            rows.append(("?", "?", "?", "-", "-", "-", f"{entry.file} ({entry.error})"))
            continue
        exit_text = "-" if entry.exit_code is None else str(entry.exit_code)
        events = "-" if entry.events is None else str(entry.events)
        rows.append((entry.started, entry.command, entry.host, events, duration(entry.duration_s), exit_text, entry.file))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1] for row in rows]
    skipped = sum(1 for e in event.entries if e.error.endswith(SKIPPED))
    count = f"{len(event.entries) - skipped} in {event.folder}" + (f", {skipped} skipped: not a regular file" if skipped else "")
    return [*lines, f"({count}; EXIT - means the session did not record its end)"]


def transcript_lines(event: TranscriptShown) -> list[str]:
    """What a transcript holds, a labelled line each; with ``--events`` every event after."""
    writer = f", written by rigaudit {event.written_by}" if event.written_by else ""
    created = f", created {event.created_at}" if event.created_at else ""
    lines = [f"file:      {event.path}", f"format:    {event.format}{writer}{created}"]
    if event.command is not None:
        lines.append(f"session:   {event.command} of {event.host or '?'} ({event.source or '?'})")
        if event.options:
            lines.append("options:   " + ", ".join(f"{k}={v}" for k, v in event.options.items()))
        if event.versions:
            lines.append("versions:  " + ", ".join(f"{k} {v}" for k, v in event.versions.items()))
    reason = f" ({event.end_reason})" if event.end_reason else ""
    end = f"exit {event.exit_code}{reason}" if event.exit_code is not None else "no recorded end"
    lines.append(f"duration:  {duration(event.duration_s)}, {end}")
    total = sum(n for _, n in event.counts)
    lines.append(f"events:    {total}: " + ", ".join(f"{n} {kind}" for kind, n in event.counts))
    if event.investigators:
        lines.append("investigators: " + ", ".join(f"{area} {status}" for area, status in event.investigators))
    if event.findings:
        listed = ", ".join(f"{check} ({severity})" for check, severity in event.problems)
        lines.append(f"findings:  {event.findings}, {len(event.problems)} problem(s)" + (f": {listed}" if listed else ""))
    if event.plan_steps is not None:
        lines.append(f"plan:      {event.plan_steps} step(s)")
    for n, label in ((event.approvals, "approvals"), (event.changes, "changes"), (event.benchmarks, "benchmarks")):
        if n:
            lines.append(f"{label + ':':<10} {n}")
    if event.llm_usage:
        cost = f", cost {usd(event.llm_cost_usd)}" if event.llm_cost_usd is not None else ""
        lines.append("LLM usage: " + ", ".join(f"{k} {v}" for k, v in sorted(event.llm_usage.items())) + cost)
    lines += [f"report:    {path}" for path in event.reports]
    lines += [f"+{e.after_s:9.3f}s  {e.type:<22} {e.text}" for e in event.listing]
    return lines


# -- re-diagnosis ------------------------------------------------------------------------

_REDIAGNOSE_WORDS = {"only_b": "new", "only_a": "dropped", "observed": "changed"}
"""Recorded = A, today = B: a check only today is new, one only recorded is dropped."""

SHOWN_WARNINGS = 10


def rediagnose_lines(event: RediagnoseFinished) -> list[str]:
    """Where the evidence came from, the rebuild's warnings, then each change (a new problem with what it saw)."""
    lines = [
        f"Re-diagnosing {event.transcript}: {event.what}, recorded {when(event.recorded_at)}",
        f"Rebuilt the host from its tool results: {event.rebuild}",
        *(f"  warning: {warning}" for warning in [*event.warnings, *event.mismatches][:SHOWN_WARNINGS]),
    ]
    if event.saved:
        lines.append(f"Snapshot kept in {event.saved}")
    current = len(event.result.findings)
    llm = _llm_replay_lines(event)
    if not event.changes:
        return [*lines, f"No change: today's investigators reach the same {current} findings as recorded.", *llm]
    lines.append(f"{len(event.changes)} change(s) between the {event.recorded} recorded findings and today's {current}:")
    width = max(len(c.check) for c in event.changes)
    for change in event.changes:
        lines.append(f"  {_REDIAGNOSE_WORDS.get(change.kind, change.kind):<9} {change.check:<{width}}  {change.detail}")
        finding = change.b or change.a
        if change.kind in ("appeared", "only_b") and finding is not None and finding.status == "problem":
            lines.append(f"  {'':<9} {'':<{width}}  {finding.title}: {finding.observed}")
    return [*lines, *llm]


def _llm_replay_lines(event: RediagnoseFinished) -> list[str]:
    """The model's side: its recorded answers replayed, what no longer matched, and how its suggestions changed."""
    llm = event.llm
    if llm is None:
        return []
    lines = [f"The model's side: {llm.exchanges} recorded answer(s) replayed to the agents (no server)"]
    lines += [f"  changed: {line}" for line in llm.changed[:SHOWN_WARNINGS]]
    lines += [f"  asked more than was recorded: {agent}" for agent in llm.unanswered]
    lines += [f"  never asked for: {n} recorded answer(s) of {agent}" for agent, n in sorted(llm.left.items())]
    now = len(event.result.suggestions)
    if not llm.changes:
        return [*lines, f"  the same {now} suggestion(s) as recorded"]
    lines.append(f"  {len(llm.changes)} change(s) between the {llm.recorded} recorded suggestions and the replay's {now}:")
    lines += [f"    {_REDIAGNOSE_WORDS.get(c.kind, c.kind):<9} {c.check}  {c.detail}" for c in llm.changes]
    return lines
