"""system-improve.md: the document written before anything changes, and the sections appended after."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from rigaudit.tools.action_text import describe, shell_lines
from rigaudit.tools.atomic import atomic_write_text
from rigaudit.tools.model.audit import AuditResult
from rigaudit.tools.model.finding import SEVERITY_ORDER, WHERE_TEXT, Finding
from rigaudit.tools.model.plan import PlanStep
from rigaudit.tools.redact import redact_text

LATER_SECTIONS = ("Applied changes", "Validation", "Where the time goes", "Benchmark comparison")
PLACEHOLDER = "_Not yet done._"
_STATUS_ORDER = {"problem": 0, "unknown": 1, "ok": 2, "not_applicable": 3}


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def _subjects(finding: Finding, limit: int = 4) -> str:
    subjects = list(finding.subjects)
    if len(subjects) > limit:
        return ", ".join(subjects[:limit]) + f" (+{len(subjects) - limit} more)"
    return ", ".join(subjects)


def _problem_block(finding: Finding) -> list[str]:
    lines = [f"### {finding.check}: {finding.title}", ""]
    lines.append(f"- **Severity**: {finding.severity}" + (f" · **Subjects**: {_subjects(finding)}" if finding.subjects else ""))
    lines.append(f"- **Observed**: {finding.observed}")
    if finding.expected:
        lines.append(f"- **Expected**: {finding.expected}")
    if finding.explanation:
        lines.append(f"- **Why it matters**: {finding.explanation}")
    if finding.evidence:
        shown = ", ".join(f"`{ref}`" for ref in finding.evidence[:6])
        more = f" (+{len(finding.evidence) - 6} more)" if len(finding.evidence) > 6 else ""
        lines.append(f"- **Evidence**: {shown}{more}")
    if finding.fix is not None:
        lines.append(
            f"- **Fix** ({finding.fix.kind}, on {WHERE_TEXT[finding.fix.where]}, risk {finding.fix.risk}): {finding.fix.summary}"
        )
    return [*lines, ""]


def _step_block(number: int, step: PlanStep) -> list[str]:
    also = f" (also resolves {', '.join(step.also_checks)})" if step.also_checks else ""
    lines = [f"{number}. **[{step.priority}] {step.title}** — `{step.id}`{also}, on {WHERE_TEXT[step.where]}, risk {step.risk}"]
    lines.append(f"   - Why this rank: {step.rationale}")
    for action in step.actions:
        lines.append(f"   - Change: {describe(action)}")
    commands = [line for action in step.actions for line in shell_lines(action)]
    if commands:
        lines.append("   - Commands:")
        lines.append("     ```sh")
        lines.extend(f"     {c}" for c in commands[:12])
        if len(commands) > 12:
            lines.append(f"     # ... {len(commands) - 12} more of the same form")
        lines.append("     ```")
    for label, text in (("Verify", step.verify), ("Revert", step.revert), ("Persist", step.persist)):
        if text:
            lines.append(f"   - {label}: {text}")
    return lines


def render_report(result: AuditResult) -> str:
    """The whole report as markdown."""
    findings = sorted(result.findings, key=lambda f: (_STATUS_ORDER[f.status], SEVERITY_ORDER.get(f.severity or "", 9), f.check))
    problems = [f for f in findings if f.status == "problem"]
    counts = {s: sum(1 for f in findings if f.status == s) for s in _STATUS_ORDER}
    out: list[str] = [f"# System improvement plan: {result.host.name}", ""]
    out.append(
        f"Audited {result.started_at} by rigaudit from `{result.host.source}` in {result.duration_s:.2f} s. "
        f"{len(result.findings)} checks: {counts['problem']} problem(s), {counts['ok']} ok, "
        f"{counts['unknown']} unknown, {counts['not_applicable']} not applicable."
    )
    out += ["", expectation(problems), ""]
    out.append("Nothing has been changed yet. This document records the baseline and the plan *before* any change;")
    out.append("the sections at the end are filled in as changes are applied, validated and measured.")
    out += ["", "## Baseline state", "", "| fact | value |", "| --- | --- |"]
    out += [f"| {_cell(k)} | {_cell(v)} |" for k, v in result.host.facts.items()]
    out += ["", "### What was checked", "", "| area | status | checks | time (s) |", "| --- | --- | --- | --- |"]
    for run in result.investigators:
        status = run.status + (f": {run.error}" if run.error else "")
        out.append(f"| {run.area} | {_cell(status)} | {run.findings} | {run.duration_s:.3f} |")
    if result.warnings:
        out += ["", "Warnings:", ""] + [f"- {_cell(w)}" for w in result.warnings]
    out += ["", "## Findings", "", "### Problems", ""]
    if not problems:
        out += ["No problems found.", ""]
    else:
        out += ["| severity | check | finding | subjects |", "| --- | --- | --- | --- |"]
        out += [f"| {f.severity} | `{f.check}` | {_cell(f.title)} | {_cell(_subjects(f))} |" for f in problems]
        out.append("")
        for finding in problems:
            out += _problem_block(finding)
    out += _simple_table("Confirmed ok", (f for f in findings if f.status == "ok"))
    out += _simple_table("Unknown (could not be observed here)", (f for f in findings if f.status == "unknown"))
    out += _simple_table("Not applicable", (f for f in findings if f.status == "not_applicable"))
    out += ["## Plan", ""]
    runtime = [s for s in result.plan.steps if s.kind == "runtime"]
    deferred = [s for s in result.plan.steps if s.kind != "runtime"]
    out += ["### Runtime changes (now, no reboot; lost at reboot unless persisted)", ""]
    out += [line for i, s in enumerate(runtime, 1) for line in _step_block(i, s)] or ["None."]
    out += ["", "### Deferred (restart, reboot, firmware or hardware window)", ""]
    out += [line for i, s in enumerate(deferred, 1) for line in _step_block(i, s)] or ["None."]
    out.append("")
    for title in LATER_SECTIONS:
        out += [f"## {title}", "", PLACEHOLDER, ""]
    return "\n".join(out)


def expectation(problems: Sequence[Finding], *, markdown: bool = True) -> str:
    """One paragraph on what fixing these problems can and cannot buy (the report's, and the terminal's)."""
    serious = [f.check for f in problems if f.severity in ("critical", "high")]
    code = (lambda t: f"`{t}`") if markdown else (lambda t: t)
    lead = "**What to expect**:" if markdown else "What to expect:"
    if serious:
        return (
            f"{lead} {', '.join(code(c) for c in serious)} can cost large factors of throughput or "
            "stability (or correctness): fix those first, then measure again."
        )
    if problems:
        return (
            f"{lead} the problems found are medium or low: tuning that is worth latency jitter and a few "
            "percent of throughput, not a multiple. If measured throughput is far below what the hardware allows, "
            f"compare it with the decode roofline ({code('rigaudit roofline')}) and look at the serving software as well."
        )
    return f"{lead} no problem found on this host; a throughput gap lies elsewhere (see {code('rigaudit roofline')})."


def _simple_table(title: str, findings: Iterable[Finding]) -> list[str]:
    rows = [f"| `{f.check}` | {_cell(f.title)} | {_cell(f.observed)} |" for f in findings]
    if not rows:
        return []
    return [f"### {title}", "", "| check | finding | observed |", "| --- | --- | --- |", *rows, ""]


def write_report(path: Path, result: AuditResult) -> None:
    """Write the report atomically (a crash never leaves half a document)."""
    atomic_write_text(path, redact_text(render_report(result)))


def append_section(path: Path, title: str, markdown: str) -> None:
    """Add ``markdown`` under ``## title`` (replacing its placeholder), or a new section at the end."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    markdown = redact_text(markdown)
    header = f"## {title}"
    lines = text.splitlines()
    if header in lines:
        start = lines.index(header) + 1
        end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
        body = [line for line in lines[start:end] if line.strip() != PLACEHOLDER]
        while body and not body[-1].strip():
            body.pop()
        new_body = [*body, "", markdown.rstrip(), ""]
        lines = lines[:start] + new_body + lines[end:]
        atomic_write_text(path, "\n".join(lines) + "\n")
        return
    atomic_write_text(path, text.rstrip() + ("\n\n" if text else "") + f"{header}\n\n{markdown.rstrip()}\n")


def default_report(given: Path | None) -> Path | None:
    """The report apply and rollback append to: ``given``, else ./system-improve.md when it exists."""
    if given is not None:
        return Path(given)
    default = Path("system-improve.md")
    return default if default.exists() else None
