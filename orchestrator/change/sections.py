"""The ``Applied changes`` sections that apply and rollback append to system-improve.md."""

from __future__ import annotations

from pathlib import Path

from rigaudit.orchestrator.change.apply import ApplyReport
from rigaudit.tools.actions.preview import summary_rows
from rigaudit.tools.actions.rollback import Restore
from rigaudit.tools.actions.targets import AnyTarget

__all__ = ["apply_section", "rollback_section"]


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def _outcome(status: str, reason: str) -> str:
    """``blocked; not run: waits for ...``; a reason that only repeats the status (``declined``) is said once."""
    return f"{status}; {reason}" if reason and reason != status else status


def apply_section(report: ApplyReport, when: str, reaudit: dict[str, str] | None) -> str:
    """What one apply changed, step by step, with its approvals, its re-audit and how to undo it."""
    out = [f"### apply {when} on {report.host} (`{report.source}`)", ""]
    out.append(f"Plan `{report.plan_hash}`; journal `{report.journal}`.")
    out += ["", "| step | change | before | after | result |", "| --- | --- | --- | --- | --- |"]
    for entry in report.steps:
        for outcome in ("verified", "applied", "reverted", "failed"):
            rows: list[tuple[AnyTarget, str | None, str | None]] = [
                (r.target, r.before, r.after) for r in entry.results if r.outcome == outcome
            ]
            for what, before, after in summary_rows(rows):
                out.append(f"| {entry.step.id} | {_cell(what)} | {_cell(before)} | {_cell(after)} | {outcome} |")
    for r in report.persist:
        before = "absent" if r.before is None else "previous content"
        out.append(f"| persist | {_cell(r.target.describe())} | {before} | written | {r.outcome} |")
    other = [e for e in report.steps if e.status not in ("applied", "partial", "failed")]
    if other:
        out += ["", "Not changed by this apply:"]
        out += [f"- `{e.step.id}` ({e.step.kind}, on the {e.step.where}): {_outcome(e.status, e.reason)}" for e in other]
    decided = [e.approval for e in report.steps if e.approval is not None]
    if decided:
        out += ["", "Approvals: " + "; ".join(f"`{a.step_id}` {a.decision} by {a.who} at {a.when}" for a in decided) + "."]
    if reaudit:
        out += ["", "Re-audit of the changed copy: " + ", ".join(f"`{c}` {s}" for c, s in reaudit.items()) + "."]
    if report.journal is not None:
        where = report.source.split(":", 1)[1] if report.source.startswith("snapshot:") else ""
        out += ["", f"Undo: `rigaudit rollback {report.journal}" + (f" --snapshot {where}`" if where else "`")]
    return "\n".join(out)


def rollback_section(journal: Path, host: str, source: str, results: list[Restore], when: str) -> str:
    """What one rollback restored, and every value it could not."""
    restored = sum(1 for r in results if r.outcome == "restored")
    failed = [r for r in results if r.outcome == "failed"]
    lines = [f"### rollback {when} on {host} (`{source}`)", ""]
    lines.append(f"Journal `{journal}`: {restored} value(s) restored and verified, {len(failed)} failed.")
    lines += [f"- `{r.step_id}` {r.target.describe()}: {r.message}" for r in failed]
    return "\n".join(lines)
