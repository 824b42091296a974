"""system-improve.md: the document written before anything changes, and the sections appended after.

In order: the opening (the host, the counts of the rules' findings, what fixing can buy), the baseline
state, the rules' findings, the plan; then, with ``--llm``, the model's suggestions and what of the
model's was dropped, each as plain text (a fenced block: no link, no HTML, no markup of the model's is
rendered); then the sections filled in later (applied changes, validation, benchmarks).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from rigaudit.orchestrator.audit.suggestions import rules_plan
from rigaudit.orchestrator.hosts.identity import FACT as IDENTITY_FACT
from rigaudit.orchestrator.hosts.identity import HostIdentity, mismatch
from rigaudit.orchestrator.plan.text import plan_opening
from rigaudit.orchestrator.report.output import check_writable
from rigaudit.orchestrator.report.plots import draw_pcie, picture_markdown
from rigaudit.orchestrator.ui.pictures import pcie_tree
from rigaudit.tools.actions.text import describe, shell_lines
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.printable import printable
from rigaudit.tools.files.atomic import atomic_write_text
from rigaudit.tools.files.bounded import InputError, read_regular
from rigaudit.tools.files.when import utc_stamp
from rigaudit.tools.redact import redact_text
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.dropped import drop_counts
from rigaudit.tools.schema.events.audit import PcieDevice
from rigaudit.tools.schema.finding import SEVERITY_ORDER, WHERE_TEXT, Finding
from rigaudit.tools.schema.plan import Plan, PlanStep

LATER_SECTIONS = ("Applied changes", "Validation", "Where the time goes", "Benchmark comparison")
PLACEHOLDER = "_Not yet done._"
_STATUS_ORDER = {"problem": 0, "unknown": 1, "ok": 2, "not_applicable": 3}
MAX_REPORT_BYTES = 32 * 1024 * 1024
_MARK = re.compile(r"<!-- rigaudit report: host (?P<name>\S+) (?P<ids>[^;]*); audited (?P<when>\S*) -->")


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def _subjects(finding: Finding, limit: int = 4) -> str:
    subjects = list(finding.subjects)
    if len(subjects) > limit:
        return ", ".join(subjects[:limit]) + f" (+{len(subjects) - limit} more)"
    return ", ".join(subjects)


def _check(finding: Finding) -> str:
    return f"`{finding.check}`"


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
    also = (
        f" ({'decides' if step.kind == 'measure' else 'also resolves'} {', '.join(step.also_checks)})" if step.also_checks else ""
    )
    kind = "a measurement" if step.kind == "measure" else step.kind
    lines = [
        f"{number}. **[{step.priority}] {step.title}** — `{step.id}`{also}; {kind}, on {WHERE_TEXT[step.where]}, risk {step.risk}"
    ]
    if step.gain is not None:
        lines.append(f"   - Buys: {step.gain.text()}")
    lines.append(f"   - Why this rank: {step.rationale}")
    waits = [e.text() for e in step.edges]
    if step.kind != "measure":
        lines.append(f"   - Waits for: {'; '.join(waits) if waits else 'nothing'}")
    if step.blocked:
        lines.append(f"   - **Refused**: {step.blocked}")
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


def plan_section(plan: Plan) -> list[str]:
    """The report's plan: the measurements first, then every step in the graph's order (what it buys, why its
    rank, what it waits for); runtime steps take effect now, the others at their window."""
    out = ["## Plan", ""]
    measurements = list(plan.measurements)
    steps = [s for s in plan.steps if s.kind != "measure"]
    if measurements:
        out += ["### Measure first (decides what the audit could not see)", ""]
        out += [line for i, s in enumerate(measurements, 1) for line in _step_block(i, s)]
        out.append("")
    out += ["### Steps, in order (each after what it waits for; best gain for the risk first)", ""]
    out += [line for i, s in enumerate(steps, 1) for line in _step_block(i, s)] or ["None."]
    runtime = sum(1 for s in steps if s.kind == "runtime")
    if steps:
        out += [
            "",
            f"{runtime} runtime step(s) take effect now, without a reboot (lost at reboot unless persisted); "
            f"{len(steps) - runtime} wait for a restart, reboot, firmware or hardware window.",
        ]
    out.append("")
    return out


def _summary(result: AuditResult, findings: Sequence[Finding], problems: Sequence[Finding]) -> list[str]:
    """The title, the host and tallies, and whether the audit was whole (then the rules' judgement of the host)."""
    counts = {s: sum(1 for f in findings if f.status == s) for s in _STATUS_ORDER}
    identity = audit_identity(result)
    out: list[str] = [f"# System improvement plan: {result.host.name}", "", marker(identity, result.started_at), ""]
    out.append(
        f"Host **{identity.text()}**. "
        f"Audited {result.started_at} by rigaudit from `{result.host.source}` in {result.duration_s:.2f} s. "
        f"{len(result.findings)} checks: {counts['problem']} problem(s), {counts['ok']} ok, "
        f"{counts['unknown']} unknown, {counts['not_applicable']} not applicable."
        + (
            f" The model (LLM) made {len(result.suggestions)} suggestion(s), not counted among them: see Model suggestions."
            if result.suggestions
            else ""
        )
    )
    lost = [r.area for r in result.investigators if r.status != "done"]
    if result.status != "complete" or lost:
        out += [
            "",
            f"**Audit {result.status}: {len(lost)} of {len(result.investigators)} investigator(s) did not finish "
            f"({', '.join(lost) or 'baseline'}); their checks were not judged and are not listed. This is not a pass: "
            "what follows covers only the checks that finished.**",
        ]
    else:  # the rules' judgement of the host: only of a whole audit
        out += ["", expectation(problems, plan=rules_plan(result.plan))]
    return out


def _baseline(result: AuditResult, history: Sequence[str], pictures: Sequence[str]) -> list[str]:
    """That nothing was changed yet, the earlier reports, the host's facts and pictures, and what was checked."""
    out = [
        "",
        "Nothing has been changed yet. This document records the baseline and the plan *before* any change;",
        "the sections at the end are filled in as changes are applied, validated and measured.",
    ]
    if history:
        shown = ", ".join(f"[{name}]({name})" for name in history[:5])
        shown += f" and {len(history) - 5} more" if len(history) > 5 else ""
        out += ["", f"Earlier audits of this machine, with what was applied, validated and measured then: {shown}."]
    out += ["", "## Baseline state", "", "| fact | value |", "| --- | --- |"]
    out += [f"| {_cell(k)} | {_cell(v)} |" for k, v in result.host.facts.items()]
    for picture in pictures:
        out += ["", picture.rstrip()]
    out += ["", "### What was checked", "", "| area | status | checks | time (s) |", "| --- | --- | --- | --- |"]
    for run in result.investigators:
        status = run.status + (f": {run.error}" if run.error else "")
        out.append(f"| {run.area} | {_cell(status)} | {run.findings} | {run.duration_s:.3f} |")
    if result.warnings:
        out += ["", "Warnings:", ""] + [f"- {_cell(w)}" for w in result.warnings]
    return out


def _problems_section(problems: Sequence[Finding]) -> list[str]:
    out = ["", "## Findings", "", "### Problems", ""]
    if not problems:
        return [*out, "No problems found.", ""]
    out += ["| severity | check | finding | subjects |", "| --- | --- | --- | --- |"]
    out += [f"| {f.severity} | {_check(f)} | {_cell(f.title)} | {_cell(_subjects(f))} |" for f in problems]
    out.append("")
    for finding in problems:
        out += _problem_block(finding)
    return out


def render_report(result: AuditResult, *, history: Sequence[str] = (), pictures: Sequence[str] = ()) -> str:
    """The whole report as markdown; ``history`` names the earlier reports of this machine (newest first),
    ``pictures`` are markdown blocks shown with the baseline (the PCIe tree)."""
    findings = sorted(result.findings, key=lambda f: (_STATUS_ORDER[f.status], SEVERITY_ORDER.get(f.severity or "", 9), f.check))
    problems = [f for f in findings if f.status == "problem"]
    out = _summary(result, findings, problems)
    out += _baseline(result, history, pictures)
    out += _problems_section(problems)
    out += plan_section(result.plan)
    out += suggestions_section(result)
    rest = [
        *_simple_table("Unknown (could not be observed here)", (f for f in findings if f.status == "unknown")),
        *_simple_table("Not applicable", (f for f in findings if f.status == "not_applicable")),
        *_simple_table("Confirmed ok", (f for f in findings if f.status == "ok")),
    ]
    if rest:  # what a person reads first is the problems and the plan; the rest follows, ok rows last
        out += [f"## {OTHER_FINDINGS}", "", *rest]
    for title in LATER_SECTIONS:
        out += [f"## {title}", "", PLACEHOLDER, ""]
    return "\n".join(out)


SUGGESTIONS = "Model suggestions (LLM)"
OTHER_FINDINGS = "Other findings"


def _fenced(lines: Sequence[str]) -> list[str]:
    """``lines`` as a fenced text block: shown as written, whatever markdown or HTML they hold."""
    body = [" ".join(printable(line).split()) for line in lines]
    longest = max((len(run) for line in body for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}text", *body, fence]


def _suggestion_lines(suggestion: Finding, rule_checks: set[str]) -> list[str]:
    about = "explains the rule's finding" if suggestion.check in rule_checks else "the model rates it"
    rated = "" if suggestion.check in rule_checks else f" {suggestion.severity or suggestion.status}"
    lines = [f"{suggestion.check} ({about}{rated}): {suggestion.title}"]
    lines += [
        f"{label}: {value}" for label, value in (("observed", suggestion.observed), ("why", suggestion.explanation)) if value
    ]
    fix = suggestion.fix
    if fix is not None:
        lines.append(
            f"the model's suggestion, never applied ({fix.kind}, on {WHERE_TEXT[fix.where]}, risk {fix.risk}): {fix.summary}"
        )
        lines += [f"{label}: {value}" for label, value in (("verify", fix.verify), ("revert", fix.revert)) if value]
    if suggestion.evidence:
        lines.append(f"evidence: {', '.join(suggestion.evidence)}")
    return lines


def suggestions_section(result: AuditResult) -> list[str]:
    """The model's suggestions and what of the model's was dropped (nothing without either), after the rules'
    sections: never counted, planned or applied, each shown as plain text."""
    if not result.suggestions and not result.dropped:
        return []
    out = [f"## {SUGGESTIONS}", ""]
    out.append(
        "What the model suggested, apart from the rules: none of it is counted as a problem, planned or applied. "
        "Each cites evidence this audit recorded that contains what it says it observed; read it and decide."
    )
    out.append("")
    rule_checks = {f.check for f in result.findings}
    for number, suggestion in enumerate(result.suggestions, 1):
        out += [f"### Suggestion {number}", "", *_fenced(_suggestion_lines(suggestion, rule_checks)), ""]
    if not result.suggestions:
        out += ["None accepted.", ""]
    if result.dropped:
        out += [f"Model suggestions dropped ({len(result.dropped)}: {drop_counts(result.dropped)}); the rules stand:", ""]
        out += [*_fenced([f"{d.check} ({d.area}): {d.reason}" for d in result.dropped]), ""]
    return out


def expectation(problems: Sequence[Finding], *, markdown: bool = True, plan: Plan | None = None) -> str:
    """One paragraph on what fixing these problems can and cannot buy (the report's, and the terminal's); with
    ``plan``, what its steps can buy together and what is measured first."""
    serious = [f.check for f in problems if f.severity in ("critical", "high")]
    code = (lambda t: f"`{t}`") if markdown else (lambda t: t)
    lead = "**What to expect**:" if markdown else "What to expect:"
    head = ""
    if serious:
        head = (
            f"{', '.join(code(c) for c in serious)} can cost large factors of throughput or "
            "stability (or correctness): fix those first, then measure again."
        )
    if plan is not None and plan.steps:
        opening = plan_opening(plan, markdown=markdown)
        return f"{lead} {head} {_capital(opening)}" if head else f"{lead} {opening}"
    if serious:
        return f"{lead} {head}"
    if problems:
        return (
            f"{lead} the problems found are medium or low: tuning that is worth latency jitter and a few "
            "percent of throughput, not a multiple. If measured throughput is far below what the hardware allows, "
            f"compare it with the decode roofline ({code('rigaudit roofline')}) and look at the serving software as well."
        )
    return f"{lead} no problem found on this host; a throughput gap lies elsewhere (see {code('rigaudit roofline')})."


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _simple_table(title: str, findings: Iterable[Finding]) -> list[str]:
    rows = [f"| {_check(f)} | {_cell(f.title)} | {_cell(f.observed)} |" for f in findings]
    if not rows:
        return []
    return [f"### {title}", "", "| check | finding | observed |", "| --- | --- | --- |", *rows, ""]


class ReportRefused(UsageError):
    """A report of another machine, or a file that is not a rigaudit report: one line, nothing written."""


def report_host(path: Path) -> HostIdentity | None:
    """The machine a system-improve.md is for (its marker, or the title of one written before markers);
    ``None`` when ``path`` does not exist; :class:`ReportRefused` when it is not a rigaudit report."""
    if not path.exists():
        return None
    text = _read(path)
    found = _MARK.search(text)
    if found is not None:
        return HostIdentity.parse(found["name"], found["ids"])
    title = re.match(r"# System improvement plan: (\S+)", text)
    if title is not None:
        return HostIdentity(title[1])
    if any(text.startswith(f"## {name}\n") for name in LATER_SECTIONS):
        return HostIdentity("")  # sections a benchmark appended before any audit: no machine named yet
    raise ReportRefused(f"{path} exists and is not a rigaudit report: refusing to change it (choose another file)")


def _read(path: Path) -> str:
    try:
        return read_regular(path, limit=MAX_REPORT_BYTES, what=str(path)).decode("utf-8", "replace")
    except InputError as exc:
        raise ReportRefused(f"cannot read the report: {exc}") from None


def check_report(path: Path, here: HostIdentity) -> None:
    """Before any work: ``path`` can be written, and is not another machine's report (:class:`ReportRefused`)."""
    check_writable(path, "--report")
    recorded = report_host(path)
    if recorded is not None and (why := mismatch(f"{path}", recorded, here)) is not None:
        raise ReportRefused(why)


def audit_identity(result: AuditResult) -> HostIdentity:
    """The identity an audit recorded of its host."""
    return HostIdentity.parse(result.host.name, result.host.facts.get(IDENTITY_FACT, ""))


def archive_name(path: Path, when: str) -> Path:
    """``system-improve.20261127T091403Z.md`` beside ``path`` (``-2``, ``-3``... when taken)."""
    stamp = re.sub(r"[^0-9TZ]", "", when) or "undated"
    candidate = path.with_name(f"{path.stem}.{stamp}{path.suffix}")
    number = 2
    while candidate.exists():
        candidate = path.with_name(f"{path.stem}.{stamp}-{number}{path.suffix}")
        number += 1
    return candidate


def _audited_at(path: Path, text: str) -> str:
    found = _MARK.search(text)
    if found is not None and found["when"]:
        return found["when"]
    return utc_stamp(path.stat().st_mtime) or "an unknown time"


def write_report(path: Path, result: AuditResult, *, topology: Sequence[PcieDevice] = ()) -> Path | None:
    """Write the report atomically (a crash never leaves half a document). An earlier report of the same
    machine is kept beside it under a name that says when it was audited (returned), with its applied
    changes, validation and benchmarks; one of another machine is refused (:class:`ReportRefused`).
    ``topology`` adds the PCIe tree (an image beside the report, and as text)."""
    here = audit_identity(result)
    check_report(path, here)
    pictures: list[str] = []
    if sum(1 for d in topology if d.kind == "gpu") >= 2:
        tree = pcie_tree(topology)
        pictures.append("### PCIe tree\n\n" + picture_markdown("pcie-tree", "PCIe tree", path, draw_pcie(topology), tree))
    archived: Path | None = None
    history = _history(path)
    if path.is_file():
        archived = archive_name(path, _audited_at(path, _read(path)))
        os.replace(path, archived)
        history = [archived.name, *history]
    try:
        atomic_write_text(path, printable(redact_text(render_report(result, history=history, pictures=pictures))))
    except BaseException:
        if archived is not None and not path.exists():
            os.replace(archived, path)
        raise
    return archived


def _history(path: Path) -> list[str]:
    """The archived reports beside ``path``, newest first."""
    pattern = re.compile(rf"{re.escape(path.stem)}\.\d{{8}}T\d{{6}}Z(?:-\d+)?{re.escape(path.suffix)}")
    try:
        names = [p.name for p in path.parent.iterdir() if pattern.fullmatch(p.name)] if path.parent.is_dir() else []
    except OSError:
        return []
    return sorted(names, reverse=True)


def _name_host(markdown: str, host: HostIdentity) -> str:
    """The section's first line names the machine it is about."""
    first, _, rest = markdown.partition("\n")
    if host.name and host.name not in first:
        first = f"{first} on {host.name}" if first.startswith("#") else f"On {host.name}: {first}"
    return f"{first}\n{rest}" if rest else first


def append_section(path: Path, title: str, markdown: str, *, host: HostIdentity | None = None) -> None:
    """Add ``markdown`` under ``## title`` (replacing its placeholder), or a new section at the end.

    ``host`` is the machine the section is about: the report must be that machine's
    (:class:`ReportRefused` otherwise) and the section names it. ``None``: a section about something
    that is not a machine of its own (an inference server's benchmark), appended as it is.
    """
    if host is not None:
        recorded = report_host(path)
        if recorded is not None and (why := mismatch(f"{path}", recorded, host)) is not None:
            raise ReportRefused(why)
        markdown = _name_host(markdown, host)
    text = _read(path) if path.exists() else ""
    markdown = printable(redact_text(markdown))
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
    if not text:
        title = f"# System improvement plan: {host.name}" if host is not None else "# System improvement plan"
        text = f"{title}\n\n{marker(host or HostIdentity('-'), '')}\n"
    atomic_write_text(path, text.rstrip() + ("\n\n" if text else "") + f"{header}\n\n{markdown.rstrip()}\n")


def choose_report(given: Path | None, here: HostIdentity) -> tuple[Path | None, str]:
    """The report apply, rollback and the benchmarks append to, checked before any work: ``given`` (refused
    with one line when it is another machine's), else ./system-improve.md when it exists and is this
    machine's; a note says why ./system-improve.md was passed over."""
    if given is not None:
        check_report(Path(given), here)
        return Path(given), ""
    default = Path("system-improve.md")
    if not default.is_file():
        return None, ""
    try:
        check_report(default, here)
    except ReportRefused as exc:
        return None, f"{exc}; nothing appended to it (give --report FILE)"
    return default, ""


def marker(host: HostIdentity, when: str) -> str:
    """The comment under a report's title that says which machine it is for, and when it was audited."""
    return f"<!-- rigaudit report: host {host.name} {host.token() or 'no-id'}; audited {when or '-'} -->"
