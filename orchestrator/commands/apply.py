"""Apply the plan's runtime fixes, each approved, journaled, verified, and reversible.

Examples:
  rigaudit apply                                   audit this machine, then ask about each runtime step
  rigaudit apply --plan audit.json --only numa.balancing
  rigaudit apply --snapshot SEED --into COPY --yes      prove the plan on a copy of a snapshot
  rigaudit apply --emit-script hypervisor.sh       steps for another machine, as a reviewed script

Only runtime steps run (--scope runtime); restart, reboot, firmware and hardware steps are listed
as deferred. Steps for the hypervisor are never attempted here. Without a terminal nothing is
applied unless --yes is given. Every change is journaled before it is made:
`rigaudit rollback JOURNAL` undoes it.

Exit status: 0 done; 1 a change failed (and was reverted where it could be); 2 usage error;
3 not approved.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import anyio

from rigaudit.orchestrator.apply import (
    SCOPES,
    ApplyOptions,
    ApplyReport,
    Emit,
    apply_plan,
    classify,
    copy_snapshot,
    host_in_container,
    load_plan,
    selected_steps,
    summarize,
    summary_rows,
)
from rigaudit.orchestrator.approval import Gate
from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.errors import OperationError, UsageError
from rigaudit.orchestrator.session import open_session
from rigaudit.tools.actions.script import render_script
from rigaudit.tools.actions.targets import AnyTarget
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.hosts.snapshot import SnapshotError, SnapshotHost
from rigaudit.tools.journal import JournalError, default_journal_path, utc_now
from rigaudit.tools.model.plan import Plan
from rigaudit.transcripts.events import ReportWritten

_MARK = {
    "applied": "ok",
    "unchanged": "ok",
    "partial": "!!",
    "failed": "!!",
    "declined": "--",
    "deferred": "..",
    "elsewhere": "->",
    "manual": "->",
    "not_attempted": "--",
}


def _add(parser: argparse.ArgumentParser) -> None:
    where = parser.add_argument_group("where (default: this machine)")
    where.add_argument("--snapshot", type=Path, metavar="SRC", help="a snapshot to copy and apply to (needs --into)")
    where.add_argument("--into", type=Path, metavar="DST", help="the new copy of --snapshot that is changed")
    parser.add_argument("--plan", type=Path, metavar="FILE", help="the plan from `audit --json FILE` (default: audit now)")
    parser.add_argument("--scope", choices=SCOPES, default="runtime", help="which steps may run (default: runtime)")
    parser.add_argument("--only", metavar="STEP,...", help="only these step ids")
    parser.add_argument("--yes", action="store_true", help="approve every runtime step without asking (scripts)")
    parser.add_argument("--persist", action="store_true", help="also write sysctl.d/modules-load.d/tmpfiles.d/udev files")
    parser.add_argument("--journal", type=Path, metavar="FILE", help="where to journal the changes (default: state dir)")
    parser.add_argument("--emit-script", type=Path, metavar="FILE", help="write the steps not run here as a bash script")
    parser.add_argument(
        "--report", type=Path, metavar="FILE", help="append to this report (default: ./system-improve.md if it exists)"
    )
    parser.add_argument("--transcript", type=Path, metavar="FILE", help="where to record this session (default: state dir)")
    parser.add_argument("--no-transcript", action="store_true", help="do not record this session")


def _source_host(args: argparse.Namespace) -> Host:
    if args.into is not None:
        args.into = args.into.absolute()
    if (args.snapshot is None) != (args.into is None):
        raise UsageError("--snapshot SRC and --into DST go together (a snapshot is changed only as a new copy)")
    if args.snapshot is not None:
        try:
            return SnapshotHost(args.snapshot)
        except SnapshotError as exc:
            raise UsageError(str(exc)) from None
    from rigaudit.tools.hosts.local import LocalHost

    return LocalHost()


async def _audit_plan(host: Host, emit: Emit) -> Plan:
    from rigaudit.orchestrator.audit import run_audit

    return (await run_audit(host, emit=emit)).plan


async def _reaudit(host: Host, checks: list[str]) -> dict[str, str]:
    """Status of ``checks`` on the changed copy: the proof that the plan did what it claims."""
    from rigaudit.orchestrator.audit import run_audit

    result = await run_audit(host)
    statuses = {f.check: f.status for f in result.findings}
    return {check: statuses.get(check, "not checked") for check in checks}


def _step_lines(report: ApplyReport) -> list[str]:
    lines: list[str] = []
    for entry in report.steps:
        head = f"  [{_MARK[entry.status]}] {entry.step.id}: {entry.status.replace('_', ' ')}"
        if entry.reason and entry.reason != entry.status:
            head += f" ({entry.reason.removeprefix('not attempted: ')})"
        lines.append(head)
        for outcome in ("verified", "applied", "reverted", "failed"):
            rows: list[tuple[AnyTarget, str | None, str | None]] = [
                (r.target, r.before, r.after) for r in entry.results if r.outcome == outcome
            ]
            for text in summarize(rows):
                lines.append(f"       {text} [{outcome}]")
        for r in entry.results:
            if r.outcome in ("reverted", "failed"):
                lines.append(f"       {r.target.describe()}: {r.message}")
    for r in report.persist:
        lines.append(f"  [{'ok' if r.verified else '!!'}] persist {r.target.describe()}: {r.outcome} {r.message}".rstrip())
    for note in report.persist_notes:
        lines.append(f"  persist: {note}")
    return lines


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def render_section(report: ApplyReport, when: str, reaudit: dict[str, str] | None) -> str:
    """The ``Applied changes`` section of system-improve.md."""
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
        out += [f"- `{e.step.id}` ({e.step.kind}, on the {e.step.where}): {e.status}; {e.reason}".rstrip("; ") for e in other]
    decided = [e.approval for e in report.steps if e.approval is not None]
    if decided:
        out += ["", "Approvals: " + "; ".join(f"`{a.step_id}` {a.decision} by {a.who} at {a.when}" for a in decided) + "."]
    if reaudit:
        out += ["", "Re-audit of the changed copy: " + ", ".join(f"`{c}` {s}" for c, s in reaudit.items()) + "."]
    if report.journal is not None:
        where = report.source.split(":", 1)[1] if report.source.startswith("snapshot:") else ""
        out += ["", f"Undo: `rigaudit rollback {report.journal}" + (f" --snapshot {where}`" if where else "`")]
    return "\n".join(out)


def _report_path(args: argparse.Namespace) -> Path | None:
    if args.report is not None:
        return Path(args.report)
    default = Path("system-improve.md")
    return default if default.exists() else None


def _run(args: argparse.Namespace) -> int:
    only = [s.strip() for s in args.only.split(",") if s.strip()] if args.only else None
    source = _source_host(args)
    plan_from_file = load_plan(args.plan) if args.plan is not None else None
    journal_path = args.journal or default_journal_path()
    with open_session(
        "apply",
        consumers=[],
        transcript=args.transcript,
        record=not args.no_transcript,
        host=source.name,
        source=source.source,
        options={"scope": args.scope, "only": only, "persist": args.persist, "yes": args.yes},
    ) as session:
        emit = session.emit

        async def prepare() -> tuple[Plan, bool]:
            plan = plan_from_file if plan_from_file is not None else await _audit_plan(source, emit)
            return plan, await host_in_container(source)

        plan, in_container = anyio.run(prepare)
        options = ApplyOptions(scope=args.scope, only=only, persist=args.persist, in_container=in_container)
        try:
            steps = selected_steps(plan, only)
        except KeyError as exc:
            raise UsageError(str(exc.args[0])) from None
        gate = Gate(plan.digest(), assume_yes=args.yes, emit=emit)
        runnable = [s for s in steps if classify(s, options)[0] is None]
        if runnable:
            gate.ensure_possible(f"nothing applied ({len(runnable)} runtime step(s) waiting for approval)")
        host: Host = source
        if args.into is not None:
            copy_snapshot(args.snapshot, args.into)
            host = SnapshotHost(args.into, writable=True)
        try:
            report = anyio.run(_apply, host, plan, gate, journal_path, options, emit)
        except JournalError as exc:
            raise OperationError(str(exc)) from None
        when = utc_now()
        print(f"apply: {report.host} ({report.source}), plan {report.plan_hash}")
        for line in _step_lines(report):
            print(line)
        reaudit: dict[str, str] | None = None
        if args.into is not None and report.changed:
            checks = [c for e in report.steps for c in (e.step.check, *e.step.also_checks)]
            reaudit = anyio.run(_reaudit, SnapshotHost(args.into), list(dict.fromkeys(checks)))
            print("re-audit of " + str(args.into) + ": " + ", ".join(f"{c} {s}" for c, s in reaudit.items()))
        if report.journal is not None:
            hint = f" --snapshot {args.into}" if args.into is not None else ""
            print(f"journal: {report.journal}  (undo: rigaudit rollback {report.journal}{hint})")
        if args.emit_script is not None:
            script = render_script(report.script_steps(), host=report.host, plan_hash=report.plan_hash, generated_at=when)
            _write_text(args.emit_script, script, executable=True)
            print(f"script: {args.emit_script} ({sum(1 for i in report.script_steps() if i.live)} step(s) to run elsewhere)")
        report_path = _report_path(args)
        if report_path is not None and report.journal is not None:
            from rigaudit.orchestrator.report import append_section

            append_section(report_path, "Applied changes", render_section(report, when, reaudit))
            emit(ReportWritten(path=str(report_path), section="Applied changes"))
        session.exit_code = 1 if report.problems else 0
    return session.exit_code


async def _apply(host: Host, plan: Plan, gate: Gate, journal: Path, options: ApplyOptions, emit: Emit) -> ApplyReport:
    try:
        return await apply_plan(host, plan, gate=gate, journal_path=journal, options=options, emit=emit)
    finally:
        await host.aclose()


def _write_text(path: Path, text: str, *, executable: bool = False) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if executable:
            path.chmod(0o755)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


COMMAND = Command(
    "apply", "apply the plan's runtime fixes (approved, journaled, verified, reversible)", _add, _run, __doc__ or ""
)
