"""``rigaudit audit --explain CHECK``: one check's verdict, each of its premises as read, and its evidence."""

from __future__ import annotations

from rigaudit.orchestrator.ui.queries import one_line
from rigaudit.tools.schema.events.catalog import CheckEntry
from rigaudit.tools.schema.finding import WHERE_TEXT, Finding


def explain_lines(check: CheckEntry, finding: Finding | None) -> list[str]:
    """The check, its verdict (or why there is none), each premise held or missing with its value, the evidence."""
    lines = [f"{check.check}  {check.title}", f"reads:     {one_line(check.reads)}"]
    if finding is None:
        return [*lines, "verdict:   not judged (its area's investigator did not finish or was not run)"]
    severity = f" ({finding.severity})" if finding.severity else ""
    lines += [f"verdict:   {finding.status}{severity}", f"observed:  {one_line(finding.observed)}"]
    if finding.expected:
        lines.append(f"expected:  {one_line(finding.expected)}")
    if finding.fix is not None:
        lines.append(f"fix:       {one_line(finding.fix.summary)} (runs on {WHERE_TEXT[finding.fix.where]})")
    declared = {p.name: p.reads for p in check.premises}
    if not declared:
        lines.append("premises:  none: the verdict rests only on what the check reads")
    else:
        lines.append("premises:")
        width = max(len(name) for name in declared)
        read = {p.name: p for p in finding.premises}
        for name, reads in declared.items():
            premise = read.get(name)
            state, value = (premise.state, premise.value) if premise is not None else ("unread", f"reads {reads}")
            lines.append(f"  {state:<7}  {name:<{width}}  {one_line(value)}")
    lines.append("evidence:" + ("" if finding.evidence else "  none"))
    lines += [f"  {ref}" for ref in finding.evidence]
    return lines
