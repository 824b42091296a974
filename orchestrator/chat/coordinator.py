"""The coordinator: what each conversation step does, through the same code as the commands.

Audits run ``run_audit``; the report is ``write_report``; a runtime apply is ``apply_plan`` behind the
approval :class:`~rigaudit.orchestrator.change.approval.StepApprover` (on a snapshot, into a copy, never the original);
benchmarks, compare and rollback are :mod:`rigaudit.orchestrator.bench.run` and
:mod:`rigaudit.orchestrator.change.rollback`, called with typed settings, as the commands call them. Every step that writes
or loads something asks first, through an injectable approval console. A step never raises: it
returns an :class:`Outcome` (``done``, ``skipped`` when this machine cannot run it, ``refused``,
``failed``), and a refused or failed step stops the sequence it belongs to.
"""

from __future__ import annotations

import re
import shlex
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import anyio

from rigaudit.agents.brain import Brain
from rigaudit.agents.llm.prompt import value_of
from rigaudit.orchestrator.audit.run import AuditOptions, run_audit
from rigaudit.orchestrator.bench.compare import CompareRun, compare_runs
from rigaudit.orchestrator.bench.run import (
    InferenceWords,
    Outputs,
    P2PRun,
    run_inference,
    run_p2p,
)
from rigaudit.orchestrator.change.apply import ApplyOptions, ApplyReport, apply_plan, classify
from rigaudit.orchestrator.change.approval import Console, StepApprover, require_approval
from rigaudit.orchestrator.change.rollback import prepare_rollback, run_rollback
from rigaudit.orchestrator.change.sections import apply_section
from rigaudit.orchestrator.chat.intent import parse_intent
from rigaudit.orchestrator.chat.steps import Step
from rigaudit.orchestrator.hosts.choose import in_container
from rigaudit.orchestrator.hosts.identity import identify
from rigaudit.orchestrator.hosts.snapshots import copy_snapshot
from rigaudit.orchestrator.report.document import append_section, write_report
from rigaudit.tools.actions.journal import default_journal_path, utc_now
from rigaudit.tools.core.errors import NotApprovedError, RigauditError, UsageError
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.files.bounded import InputError, load_json
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.events.chat import Message
from rigaudit.tools.schema.events.session import ReportWritten
from rigaudit.tools.schema.events.sink import EventSink, discard
from rigaudit.tools.schema.finding import Finding

OutcomeStatus = Literal["done", "skipped", "refused", "failed"]


class Outcome(Record):
    status: OutcomeStatus
    text: str

    @property
    def stops(self) -> bool:
        """A refused or failed step ends the sequence it is part of."""
        return self.status in ("refused", "failed")


class ChatSettings(Record, frozen=False):
    snapshot: Path | None = None
    """The snapshot the conversation audits; changes go to a copy (``into``, or a temporary one)."""
    into: Path | None = None
    workdir: Path = field(default_factory=Path.cwd)
    assume_yes: bool = False
    interactive: bool = False
    bench_base_url: str | None = None
    bench_model: str | None = None
    bench_args: tuple[str, ...] = ()
    """Extra ``bench inference`` arguments (``--concurrency 1,4 --requests 8``)."""
    baseline: Path | None = None
    """An earlier ``bench inference --json`` result that a rerun is compared with."""


def _finding_line(finding: Finding) -> str:
    severity = f" {finding.severity}" if finding.severity else ""
    mark = " (LLM: the model's, not a rule's)" if finding.source == "llm" else ""
    return f"{finding.check}{mark} [{finding.status}{severity}]: {finding.title}: {finding.observed}".rstrip(": ")


class Coordinator:
    """Runs conversation steps against one host (and, after an apply, its changed copy)."""

    def __init__(
        self,
        host: Host,
        settings: ChatSettings,
        *,
        console: Console | None = None,
        emit: EventSink | None = None,
        brain: Brain | None = None,
        bench_words: InferenceWords | None = None,
    ) -> None:
        self.source = host
        self.host = host
        """What audits look at: the source, or the copy an apply changed."""
        self.settings = settings
        self.console = console
        self.emit = emit or discard
        self.brain = brain
        self.bench_words = bench_words
        """Reads ``/bench inference`` words as the command line does (the chat command gives it)."""
        self.result: AuditResult | None = None
        self.report_path: Path | None = None
        self.copy: Path | None = None
        self._scratch: Path | None = None
        """The temporary folder of the copy (without ``into``): removed when the conversation ends."""
        self.journals: list[Path] = []
        self.inference_runs: list[Path] = []
        self.request = ""
        """The person's words of this turn: what ``--yes`` may approve of a model's steps."""
        self._step: Step | None = None

    def say(self, text: str) -> None:
        self.emit(Message(role="assistant", text=text))

    # -- dispatch -----------------------------------------------------------------------------

    async def run_step(self, step: Step) -> Outcome:
        """One step; every error becomes an outcome with one line, never an exception."""
        self._step = step
        try:
            if step.origin == "model" and (why := self._outside(step)) is not None:
                return Outcome("refused", why)
            match step.kind:
                case "audit":
                    return await self.audit()
                case "plan":
                    return await self.plan()
                case "explain":
                    return await self.explain(step.args[0] if step.args else "")
                case "report":
                    return await self.write_report(step.args[0] if step.args else "system-improve.md")
                case "apply_runtime":
                    return await self.apply_runtime()
                case "bench_p2p":
                    return await self.bench_p2p()
                case "bench_inference":
                    return await self.bench_inference(step.args if step.bench is None else step.bench.words())
                case "compare":
                    return (
                        await self.compare(*step.args[:2])
                        if len(step.args) >= 2
                        else Outcome("failed", "compare needs two files")
                    )
                case "rollback":
                    return await self.rollback(step.args[0] if step.args else None)
        except NotApprovedError as exc:
            return Outcome("refused", str(exc))
        except (RigauditError, OSError) as exc:
            return Outcome("failed", str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__)
        except Exception as exc:  # a step's bug must not end the conversation
            return Outcome("failed", f"{exc.__class__.__name__}: {exc}")
        return Outcome("failed", f"unknown step {step.kind}")

    async def run_steps(self, steps: Sequence[Step]) -> list[Outcome]:
        """Steps in order, each reported as it ends; a refused or failed one stops the rest."""
        if len(steps) > 1:
            listed = "; ".join(f"{i}. {s.describe()}" for i, s in enumerate(steps, 1))
            self.say(f"I will: {listed}. Each change asks for your approval first.")
        outcomes: list[Outcome] = []
        for index, step in enumerate(steps, 1):
            outcome = await self.run_step(step)
            outcomes.append(outcome)
            prefix = f"[{index}/{len(steps)}] " if len(steps) > 1 else ""
            self.say(f"{prefix}{step.describe()}: {outcome.status}. {outcome.text}".rstrip())
            if outcome.stops and index < len(steps):
                rest = ", ".join(s.describe() for s in steps[index:])
                self.say(f"Stopped at step {index} ({step.describe()}: {outcome.status}); not done: {rest}.")
                break
        return outcomes

    # -- what a model may ask for ------------------------------------------------------------------

    def _outside(self, step: Step) -> str | None:
        """Why a model's step may not run at all (a path outside the work directory, another journal), or ``None``."""
        for name in step.args if step.kind in ("report", "compare") else ():
            path = self._path(name)
            if not path.resolve().is_relative_to(self.settings.workdir.resolve()):
                return f"not run: {name} is outside the work directory {self.settings.workdir}"
        if step.kind == "compare" and not all(self._path(a).is_file() for a in step.args):
            return "not run: compare reads existing result files of the work directory"
        if step.kind == "rollback" and not self.journals:
            return "not run: this conversation applied nothing; a person names another journal (/rollback JOURNAL)"
        return None

    def asked_for(self, step: Step) -> bool:
        """Whether the person's own words of this turn ask for ``step`` as the model chose it: its kind (as the
        intent parser reads them), and every file name and number it carries."""
        if step.origin == "person":
            return True
        if step.kind not in {s.kind for s in parse_intent(self.request)}:
            return False
        words = set(re.findall(r"[\w./-]+", self.request)) | set(re.findall(r"\d+", self.request))
        named = [*step.args, *(str(v) for v in (step.bench.values() if step.bench is not None else ()))]
        return all(word in words for word in named)

    def _assume_yes(self) -> bool:
        """``--yes``, for a person's step or a model's the person asked for; never for what a model chose beyond it."""
        step = self._step
        return self.settings.assume_yes and (step is None or self.asked_for(step))

    def _chosen(self, details: Sequence[str]) -> list[str]:
        step = self._step
        if step is None or step.origin == "person":
            return list(details)
        if self.asked_for(step):
            return [*details, "asked for by you, in these words; planned by the model"]
        note = "chosen by the model, beyond what you asked"
        return [*details, note + (": --yes does not approve it" if self.settings.assume_yes else "")]

    def _beyond(self, what: str) -> None:
        """With ``--yes`` and no terminal, a model's step beyond the person's words is refused, saying why."""
        if self.settings.assume_yes and not self._assume_yes() and not self.settings.interactive:
            raise NotApprovedError(
                f"{what}: not approved: the model chose it beyond what you asked, and --yes approves only what you ask "
                "for (say it, or type the /command)"
            )

    def _approve(self, what: str, details: Sequence[str]) -> None:
        self._beyond(what)
        require_approval(
            what,
            self._chosen(details),
            assume_yes=self._assume_yes(),
            emit=self.emit,
            interactive=self.settings.interactive,
            console=self.console,
        )

    # -- read-only steps ----------------------------------------------------------------------

    async def _ensure_result(self) -> AuditResult:
        if self.result is None:
            await self.audit()
        assert self.result is not None
        return self.result

    async def audit(self) -> Outcome:
        self.result = await run_audit(self.host, options=AuditOptions(brain=self.brain), emit=self.emit)
        return Outcome("done", self.audit_summary(self.result))

    @staticmethod
    def audit_summary(result: AuditResult) -> str:
        problems = [f for f in result.findings if f.status == "problem"]
        unknown = sum(1 for f in result.findings if f.status == "unknown")
        runtime = [s.id for s in result.plan.runtime_steps]
        deferred = [s.id for s in result.plan.deferred_steps]
        measure = [s.id for s in result.plan.measurements]
        lines = [f"{result.host.name}: {len(result.findings)} checks, {len(problems)} problem(s), {unknown} unknown."]
        lines += [f"- {_finding_line(f)}" for f in problems]
        first = f"measure first {', '.join(measure)}; " if measure else ""
        lines.append(f"Plan: {first}runtime {', '.join(runtime) or 'none'}; deferred {', '.join(deferred) or 'none'}.")
        return "\n".join(lines)

    async def plan(self) -> Outcome:
        result = await self._ensure_result()
        if not result.plan.steps:
            return Outcome("done", "nothing to change.")
        lines = [
            f"[{s.priority}] {s.id}{' (LLM)' if s.source == 'llm' else ''} ({s.kind}, on the {s.where}, risk {s.risk}): "
            f"{s.title}; {s.rationale}".rstrip("; ")
            + "".join(f"; {e.text()}" for e in s.waits_for())
            for s in result.plan.steps
        ]
        return Outcome("done", "\n".join(lines))

    async def explain(self, check: str) -> Outcome:
        result = await self._ensure_result()
        matches = [f for f in result.findings if f.check == check] or [f for f in result.findings if check and check in f.check]
        if len(matches) != 1:
            names = ", ".join(f.check for f in (matches or result.findings))
            return Outcome("failed", f"no single check matches {check!r}; checks: {names}")
        finding = matches[0]
        evidence = {e.ref: e for e in result.evidence}
        lines = [_finding_line(finding)]
        if finding.expected:
            lines.append(f"expected: {finding.expected}")
        if finding.explanation:
            lines.append(f"why it matters: {finding.explanation}")
        for ref in finding.evidence[:6]:
            item = evidence.get(ref)
            value = value_of(item, 160) if item else ""  # as an agent's opening shows it: redacted, ids as digests
            lines.append(f"evidence {ref}" + (f" = {value}" if value else ""))
        if finding.fix is not None:
            label = "the model's suggestion, never applied" if finding.source == "llm" else "fix"
            fix = finding.fix
            lines.append(f"{label} ({fix.kind}, on the {fix.where}, risk {fix.risk}): {fix.summary}")
        step = next((s for s in result.plan.steps if s.check == finding.check or finding.check in s.also_checks), None)
        if step is not None:
            lines.append(f"plan: [{step.priority}] {step.id}: {step.rationale}")
        return Outcome("done", "\n".join(lines))

    # -- gated steps ----------------------------------------------------------------------------

    def _path(self, name: str) -> Path:
        path = Path(name).expanduser()
        return path if path.is_absolute() else self.settings.workdir / path

    async def write_report(self, name: str) -> Outcome:
        result = await self._ensure_result()
        path = self._path(name)
        problems = sum(1 for f in result.findings if f.status == "problem")
        details = [
            f"{len(result.findings)} findings ({problems} problems) and a plan of {len(result.plan.steps)} step(s)",
            f"{'replaces' if path.exists() else 'creates'} {path.resolve()}"
            + (" (the earlier one is kept beside it)" if path.exists() else ""),
        ]
        self._approve(f"write the report {path.name}", details)
        archived = write_report(path, result)
        self.report_path = path
        self.emit(ReportWritten(path=str(path), section=f"the earlier one kept as {archived.name}" if archived else ""))
        return Outcome("done", f"wrote {path}." + (f" The earlier report is kept as {archived}." if archived else ""))

    def discard_copy(self) -> Path | None:
        """Remove the temporary copy an apply changed (never one made ``into`` a folder); the path it had, if any."""
        scratch, self._scratch = self._scratch, None
        if scratch is None:
            return None
        shutil.rmtree(scratch, ignore_errors=True)
        return scratch / "copy"

    async def _apply_host(self) -> tuple[Host, str]:
        """Where the apply writes: this host, or a writable copy of the snapshot (made once)."""
        snapshot = self.settings.snapshot
        if snapshot is None:
            return self.source, self.source.name
        if self.copy is None:
            target = self.settings.into
            if target is None:
                self._scratch = Path(tempfile.mkdtemp(prefix="rigaudit-chat-"))
                target = self._scratch / "copy"
            await anyio.to_thread.run_sync(copy_snapshot, snapshot, target.absolute())
            self.copy = target.absolute()
        return SnapshotHost(self.copy, writable=True), f"the copy {self.copy} (the snapshot {snapshot} is never changed)"

    async def apply_runtime(self) -> Outcome:
        result = await self._ensure_result()
        plan = result.plan
        options = ApplyOptions(in_container=await in_container(self.host))
        runnable = [s for s in plan.steps if classify(s, options)[0] is None]
        if not runnable:
            return Outcome("done", "no runtime step can be applied here: " + _not_here(plan.steps, options))
        approver = StepApprover(
            plan.digest(),
            assume_yes=self._assume_yes(),
            interactive=self.settings.interactive,
            console=self.console,
            emit=self.emit,
        )
        self._beyond("apply the runtime changes")
        approver.ensure_possible(f"nothing applied ({len(runnable)} runtime step(s) waiting for approval)")
        host, where = await self._apply_host()
        journal = default_journal_path()
        try:
            report = await apply_plan(host, plan, approver=approver, journal_path=journal, options=options, emit=self.emit)
        finally:
            await host.aclose()
        if report.journal is not None:
            self.journals.append(report.journal)
        if report.interrupted:  # Ctrl-C at a prompt ends the conversation, once what was done is said and written
            await self._after_apply(report, reaudit=False)
            self.say(self._apply_outcome(report, where, None).text + " Interrupted (Ctrl-C).")
            raise KeyboardInterrupt
        reaudit = await self._after_apply(report)
        return self._apply_outcome(report, where, reaudit)

    async def _after_apply(self, report: ApplyReport, *, reaudit: bool = True) -> dict[str, str] | None:
        """Re-audit what changed (the copy, on a snapshot), and append the section to the report."""
        checked: dict[str, str] | None = None
        if report.changed and reaudit:
            if self.copy is not None:
                self.host = SnapshotHost(self.copy)
            self.result = await run_audit(self.host, options=AuditOptions(brain=None))
            statuses = {f.check: f.status for f in self.result.findings}
            checks = dict.fromkeys(
                c for e in report.steps if e.status in ("applied", "partial") for c in (e.step.check, *e.step.also_checks)
            )
            checked = {c: statuses.get(c, "not checked") for c in checks}
        if self.report_path is not None and report.journal is not None:
            section = apply_section(report, utc_now(), checked)
            append_section(self.report_path, "Applied changes", section, host=await identify(self.host))
            self.emit(ReportWritten(path=str(self.report_path), section="Applied changes"))
        return checked

    def _apply_outcome(self, report: ApplyReport, where: str, reaudit: dict[str, str] | None) -> Outcome:
        groups: dict[str, list[str]] = {}
        for entry in report.steps:
            groups.setdefault(entry.status, []).append(entry.step.id)
        parts = [f"{status.replace('_', ' ')}: {', '.join(ids)}" for status, ids in groups.items()]
        text = f"on {where}: " + "; ".join(parts) + "."
        if reaudit:
            text += " Re-audit: " + ", ".join(f"{c} {s}" for c, s in reaudit.items()) + "."
        if report.journal is not None:
            text += f" Journal {report.journal} (undo: /rollback)."
        if report.problems:
            return Outcome("failed", text + f" {len(report.problems)} change(s) failed or were reverted.")
        if report.quit or (not report.changed and (groups.get("declined") or groups.get("not_attempted"))):
            return Outcome("refused", text)
        return Outcome("done", text)

    def _outputs(self, json_path: Path | None = None) -> Outputs:
        return Outputs(json=json_path, report=self.report_path)

    @staticmethod
    def _approved(what: str, details: Sequence[str]) -> None:
        """The step asked the person already (with what the conversation knows): the benchmark does not ask again."""
        del what, details

    async def bench_p2p(self) -> Outcome:
        details = [
            "copies between every GPU pair of THIS machine: one way, both ways, staged through the host, with a data check",
            "the GPUs' links run flat out for a few seconds per pair: serving traffic on them stalls",
        ]
        if self.settings.snapshot is not None:
            details.append(f"note: the audited host is a snapshot ({self.settings.snapshot}); its GPUs are not these")
        self._approve("run the P2P micro-benchmark", details)
        outputs = self._outputs()
        try:
            report = await anyio.to_thread.run_sync(
                lambda: run_p2p(P2PRun(), approve=self._approved, emit=self.emit, outputs=outputs)
            )
        except UsageError as exc:
            return Outcome("skipped", f"not run here: needs torch/CUDA and NVIDIA GPUs: {exc}")
        if any(not pair.data_ok for pair in report.pairs):
            return Outcome("failed", "data corrupted in a peer copy: P2P is unsafe on this host")
        return Outcome("done", "P2P micro-benchmark done (every pair's data check passed).")

    async def bench_inference(self, extra: Sequence[str]) -> Outcome:
        args = list(extra)
        if "--base-url" not in args and "--command" not in args:
            if not (self.settings.bench_base_url and self.settings.bench_model):
                return Outcome(
                    "failed",
                    "which server? start the chat with --bench-base-url URL --bench-model NAME, "
                    "or type /bench inference --base-url URL --model NAME",
                )
            args = [
                "--base-url",
                self.settings.bench_base_url,
                "--model",
                self.settings.bench_model,
                *self.settings.bench_args,
                *args,
            ]
        if self.bench_words is None:
            return Outcome("skipped", "not run here: this conversation reads no bench inference options")
        run = self.bench_words(args)
        out = _new_file(self._path(f"bench-inference-{utc_now().replace(':', '')}.json"))
        shown = " ".join(shlex.quote(a) for a in args)
        runs = f"runs: {run.command}" if run.command is not None else f"runs: rigaudit bench inference {shown}"
        where = f"sends streaming requests to {run.spec.base_url}" if run.spec is not None else "an external benchmark command"
        self._approve(
            "rerun the inference benchmark",
            [runs, f"{where}: a production server serves them alongside its real traffic", f"writes {out.resolve()}"],
        )
        result = await run_inference(run, approve=self._approved, emit=self.emit, outputs=self._outputs(out))
        if result.runs and all(r.requests_ok == 0 for r in result.runs):
            return Outcome("failed", f"no request succeeded (result {out})")
        baseline = self.inference_runs[-1] if self.inference_runs else self.settings.baseline
        self.inference_runs.append(out)
        text = f"result {out}: {_bench_line(out)}"
        if baseline is not None:
            compared = await self.compare(str(baseline), str(out))
            text += f" Compared with {baseline}: {compared.text}"
        return Outcome("done", text)

    async def compare(self, base: str, new: str) -> Outcome:
        run = CompareRun(base=self._path(base), new=self._path(new))
        try:
            await anyio.to_thread.run_sync(lambda: compare_runs(run, emit=self.emit, outputs=self._outputs()))
        except RigauditError as exc:
            return Outcome("failed", str(exc))
        return Outcome("done", "comparison shown above.")

    async def rollback(self, journal: str | None) -> Outcome:
        if self._step is not None and self._step.origin == "model":
            journal = None  # a model undoes this conversation's last apply only
        path = self._path(journal) if journal else (self.journals[-1] if self.journals else None)
        if path is None:
            return Outcome("failed", "nothing to roll back in this conversation; give the journal: /rollback JOURNAL")
        self._approve(f"roll back {path.name}", [f"restores every value the journal {path} changed, newest first"])
        prepared = await prepare_rollback(path, self.copy)
        finished = await run_rollback(prepared, assume_yes=True, emit=self.emit, report=self.report_path)
        if finished.failed:
            return Outcome("failed", f"{finished.failed} value(s) could not be restored from {path}")
        self.result = None
        return Outcome("done", f"rolled back {path}.")


def _new_file(path: Path) -> Path:
    """``path``, or ``name-2.json``... when it exists: a result never replaces a file."""
    number = 1
    candidate = path
    while candidate.exists() or candidate.is_symlink():
        number += 1
        candidate = path.with_name(f"{path.stem}-{number}{path.suffix}")
    return candidate


def _not_here(steps: Sequence[object], options: ApplyOptions) -> str:
    from rigaudit.tools.schema.plan import PlanStep

    reasons = [f"{s.id} ({classify(s, options)[1]})" for s in steps if isinstance(s, PlanStep)]
    return "; ".join(reasons) or "the plan is empty"


def _bench_line(path: Path) -> str:
    """``c=1: 153.2 tok/s, TTFT p50 21 ms; ...`` from a ``rigaudit.bench/1`` file."""
    try:
        raw = load_json(path, limit=64 * 1024 * 1024)
    except InputError:
        return "(result unreadable)"
    runs = (raw.get("runs") or []) if isinstance(raw, dict) else None
    if not isinstance(runs, list):
        return "(result unreadable)"
    parts = []
    for run in [r for r in runs if isinstance(r, dict)][:4]:
        tps, ttft = run.get("output_tokens_per_s"), run.get("ttft_ms_p50")
        tps_text = f"{tps:.1f} tok/s" if isinstance(tps, (int, float)) else "? tok/s"
        ttft_text = f", TTFT p50 {ttft:.0f} ms" if isinstance(ttft, (int, float)) else ""
        parts.append(f"c={run.get('concurrency')}: {tps_text}{ttft_text}")
    return "; ".join(parts) or "no runs"
