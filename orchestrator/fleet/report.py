"""The fleet's system-improve.md: who was audited, who differs from their peers, one grouped plan."""

from __future__ import annotations

from pathlib import Path

from rigaudit.orchestrator.fleet.analysis import outliers_by_host
from rigaudit.orchestrator.fleet.result import FleetFix, FleetResult, Outlier
from rigaudit.tools.actions.text import describe, shell_lines
from rigaudit.tools.core.printable import printable
from rigaudit.tools.files.atomic import atomic_write_text
from rigaudit.tools.redact import redact_text
from rigaudit.tools.schema.plan import STEP_EDGE_TEXT

OUTLIER_CHECKS_SHOWN = 12
"""Per host; a host that differs on more checks is probably another kind of machine."""
GRID_MAX_HOSTS = 12
"""Up to this many hosts the matrix has a column per host; beyond, it names the hosts that differ."""
_MARK = {"ok": "ok", "problem": "**PROBLEM**", "unknown": "?", "not_applicable": "n/a"}


def _cell(text: str) -> str:
    return " ".join(str(text).replace("|", "\\|").split())


def _hosts(hosts: list[str] | tuple[str, ...], limit: int = 8) -> str:
    shown = ", ".join(hosts[:limit])
    return shown + (f" (+{len(hosts) - limit} more)" if len(hosts) > limit else "")


def _count(items: list[Outlier], noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def _outlier_line(o: Outlier) -> str:
    if o.kind == "check":
        sev = f" ({o.severity})" if o.severity else ""
        detail = f": {_cell(o.detail)[:200]}" if o.detail else ""
        return f"- **{o.host}**: `{o.key}` is **{o.value}**{sev} where {o.peers} of {o.compared} hosts are {o.usual}{detail}"
    return f"- **{o.host}**: {o.key} = **{_cell(o.value)}**; {o.peers} of {o.compared} hosts: {_cell(o.usual)}"


def _matrix(result: FleetResult) -> list[str]:
    hosts = [a.target for a in result.audits]
    if not result.matrix:
        return ["No host was audited.", ""]
    if len(hosts) <= GRID_MAX_HOSTS:
        lines = ["| check | " + " | ".join(_cell(h) for h in hosts) + " |", "| --- |" + " --- |" * len(hosts)]
        for check, row in result.matrix.items():
            lines.append(f"| `{check}` | " + " | ".join(_MARK.get(row.get(h, ""), "–") for h in hosts) + " |")
        return [*lines, ""]
    lines = ["| check | ok | problem | unknown | n/a | problem on | unknown on |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for check, row in result.matrix.items():
        count = {s: [h for h in hosts if row.get(h) == s] for s in _MARK}
        lines.append(
            f"| `{check}` | {len(count['ok'])} | {len(count['problem'])} | {len(count['unknown'])} | "
            f"{len(count['not_applicable'])} | {_hosts(count['problem'])} | {_hosts(count['unknown'])} |"
        )
    return [*lines, ""]


def _fix_block(number: int, fix: FleetFix, total: int) -> list[str]:
    step = fix.step
    on = "every audited host" if len(fix.hosts) == total else f"{len(fix.hosts)} host(s): {_hosts(fix.hosts, 12)}"
    head = f"{number}. **[{step.priority}] {step.title}** — `{step.check}`"
    lines = [f"{head}, {step.kind} on the {step.where}, risk {step.risk}; on {on}"]
    for action in step.actions:
        lines.append(f"   - Change: {describe(action)}")
    commands = [line for action in step.actions for line in shell_lines(action)]
    if commands:
        lines += ["   - Commands (each host):", "     ```sh", *[f"     {c}" for c in commands[:12]], "     ```"]
    if step.verify:
        lines.append(f"   - Verify: {step.verify}")
    for wait in fix.waits:
        on = "" if len(wait.hosts) == len(fix.hosts) else f" on {_hosts(wait.hosts, 12)}"
        lines.append(f"   - Order: {STEP_EDGE_TEXT[wait.kind]} fix {wait.fix}{on}")
    if fix.unordered:
        lines.append(f"   - Order: {fix.unordered}")
    return lines


def render_fleet_report(result: FleetResult) -> str:
    audited = len(result.audits)
    out = [f"# Fleet improvement plan: {len(result.targets)} host(s)", ""]
    out.append(
        f"Audited {result.started_at} by rigaudit ({result.kind}) in {result.duration_s:.1f} s: {audited} host(s) audited, "
        f"{len(result.failures)} failed. Evidence was collected on each host and audited here, with one version of the rules."
    )
    out += ["", "Nothing has been changed. Each host's own report is in its folder (hosts/NAME/system-improve.md).", ""]
    if result.warnings:
        out += ["Warnings:", "", *[f"- {_cell(w)}" for w in result.warnings], ""]
    out += ["## Hosts that could not be audited", ""]
    if result.failures:
        out += ["| host | stage | error |", "| --- | --- | --- |"]
        out += [f"| {_cell(f.target)} | {f.stage} | {_cell(f.error)} |" for f in result.failures]
    else:
        out.append("None.")
    out += ["", "## Outliers: hosts that differ from their peers", ""]
    if not result.outliers:
        out.append(
            "None: every compared check and key fact agrees across the audited hosts."
            if audited >= 3
            else "Fewer than three hosts were audited: nobody can be the odd one out."
        )
    for host, found in outliers_by_host(result.outliers).items():
        facts = [o for o in found if o.kind == "fact"]
        checks = [o for o in found if o.kind == "check"]
        out += [f"### {host}: {_count(facts, 'key fact')}, {_count(checks, 'check')} differ", ""]
        out += [_outlier_line(o) for o in facts]
        out += [_outlier_line(o) for o in checks[:OUTLIER_CHECKS_SHOWN]]
        if len(checks) > OUTLIER_CHECKS_SHOWN:
            out.append(
                f"- ... and {len(checks) - OUTLIER_CHECKS_SHOWN} more checks (see the matrix): a different kind of machine?"
            )
        out.append("")
    out += ["", "## Check matrix", "", *_matrix(result)]
    out += ["## Fleet plan (identical fixes grouped)", ""]
    if not result.plan:
        out.append("No fix is needed on any audited host.")
    for number, fix in enumerate(result.plan, 1):
        out += _fix_block(number, fix, audited)
    out += [
        "",
        "## Hosts",
        "",
        "| host | name | collected by | problems | plan steps | collect (s) | audit (s) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for a in result.audits:
        out.append(
            f"| {_cell(a.target)} | {_cell(a.result.host.name)} | {a.mode} | {a.problems} | {len(a.result.plan.steps)} | "
            f"{a.collect_s:.2f} | {a.audit_s:.2f} |"
        )
    return "\n".join(out) + "\n"


def write_fleet_report(path: Path, result: FleetResult) -> None:
    atomic_write_text(path, printable(redact_text(render_fleet_report(result))))
