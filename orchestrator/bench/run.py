"""Benchmarks as work: P2P copies, NCCL all-reduce, inference load, and interleaved A/B of fixes.

The ``bench`` command and the chat call these with typed settings (comparing sessions and calibrating the
noise between them: :mod:`rigaudit.orchestrator.bench.compare`). Each one asks ``approve`` first
when it loads GPUs or a server (it raises :class:`~rigaudit.tools.core.errors.NotApprovedError` when
refused), reports progress and its result as events, and writes ``--json`` and the report section
from that result. None of them prints.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rigaudit.orchestrator.hosts.identity import this_machine
from rigaudit.orchestrator.report.document import append_section
from rigaudit.orchestrator.report.output import write_json
from rigaudit.orchestrator.report.plots import draw_nccl, draw_p2p, picture_markdown
from rigaudit.orchestrator.ui.pictures import nccl_plot, p2p_heatmap
from rigaudit.tools.bench.compare import Settings
from rigaudit.tools.bench.gpu import Backend
from rigaudit.tools.bench.loadgen import REAL, Load, LoadSpec
from rigaudit.tools.bench.nccl import NcclReport, Tool
from rigaudit.tools.bench.p2p import P2PReport
from rigaudit.tools.bench.p2p_file import DEFAULT_PATH
from rigaudit.tools.bench.render import (
    COMPARE_LEGEND,
    Table,
    bench_table,
    level_summary,
    nccl_table,
    p2p_table,
    section,
    serving_notes,
    serving_table,
)
from rigaudit.tools.bench.restart import ArmCommand
from rigaudit.tools.bench.results import BenchResult
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.schema.events.bench import BenchResultReported, BenchTable
from rigaudit.tools.schema.events.session import Output, Progress, Warning_
from rigaudit.tools.schema.events.sink import EventSink

if TYPE_CHECKING:
    from rigaudit.tools.schema.audit import HostSummary
    from rigaudit.tools.schema.plan import PlanStep

__all__ = [
    "AbBench",
    "AbDone",
    "Approve",
    "InferenceRun",
    "InferenceWords",
    "NcclRun",
    "Outputs",
    "P2PRun",
    "RestartBench",
    "publish_inference",
    "regression_warning",
    "run_ab_bench",
    "run_inference",
    "run_nccl",
    "run_p2p",
    "run_restart_bench",
]

MEASURES_HERE = ("p2p", "nccl")
"""Results about this machine's GPUs: appended only to this machine's report."""

Approve = Callable[[str, Sequence[str]], None]
"""Asks a person before a benchmark loads GPUs or a server; raises ``NotApprovedError`` when refused."""


class Outputs(Record):
    """Where a result goes besides the event stream."""

    json: Path | None = None
    """``-``: standard output."""
    report: Path | None = None
    """A system-improve.md to append the result's section to."""


NO_OUTPUTS = Outputs()
"""Nothing written but the events."""


def _progress(emit: EventSink) -> Callable[[str, int, int], None]:
    return lambda label, done, total: emit(Progress(label=label, done=done, total=total))


def _publish(
    emit: EventSink,
    outputs: Outputs,
    *,
    kind: str,
    text: str,
    section_title: str,
    tables: Sequence[tuple[str, Table]],
    markdown: str,
    notes: Sequence[str] = (),
) -> None:
    """Report the result as an event (its ``(title, table)`` pairs and the ``notes`` shown under them), then
    write ``--json`` and append ``markdown`` to the report's ``section_title`` from it."""
    data = json.loads(text)
    emit(
        BenchResultReported(
            kind=kind,
            summary=section_title,
            data=data if isinstance(data, dict) else {},
            tables=[BenchTable(title=t, headers=list(h), rows=[list(r) for r in rows]) for t, (h, rows) in tables],
            notes=list(notes),
        )
    )
    if outputs.json is not None:
        write_json(outputs.json, text)
    if outputs.report is not None and kind in MEASURES_HERE:
        markdown = markdown.rstrip() + "\n\n" + _picture(kind, data if isinstance(data, dict) else {}, outputs.report)
    if outputs.report is not None:
        try:  # P2P and NCCL measure this machine; an inference server or a comparison is no machine of its own
            append_section(outputs.report, section_title, markdown, host=this_machine() if kind in MEASURES_HERE else None)
        except OSError as exc:
            raise UsageError(f"cannot write {outputs.report}: {exc.strerror or exc}") from None


def _picture(kind: str, data: dict[str, Any], report: Path) -> str:
    """The heat map (P2P) or the plot (NCCL) for the report: an image beside it, and as text."""
    if kind == "p2p":
        return picture_markdown("p2p", "P2P bandwidth", report, draw_p2p(data), p2p_heatmap(data))
    return picture_markdown("nccl", "NCCL bus bandwidth by size", report, draw_nccl(data), nccl_plot(data))


# --- p2p -------------------------------------------------------------------------------------------


class P2PRun(Record):
    gpus: str | None = None
    """GPU indices, ``0,1``; ``None``: every visible GPU."""
    size_mib: int = 256
    iters: int = 20
    warmup: int = 3
    backend: Backend | None = None
    """``None``: torch if installed, else cuda-bindings."""
    save_to: Path = DEFAULT_PATH
    """Where the audit's ``p2p.bandwidth`` check reads the result."""


def run_p2p(run: P2PRun, *, approve: Approve, emit: EventSink, outputs: Outputs = NO_OUTPUTS) -> P2PReport:
    """Every ordered GPU pair: one way, both ways, staged through the host, with a data check."""
    from rigaudit.tools.bench import p2p
    from rigaudit.tools.bench.gpu import parse_gpu_list, pick_backend

    backend = pick_backend(run.backend)
    gpus = parse_gpu_list(run.gpus)
    if run.size_mib <= 0 or run.iters <= 0:
        raise UsageError("--size-mib and --iters must be positive")
    which = "GPUs " + ",".join(map(str, gpus)) if gpus else "every visible GPU"
    approve(
        "run the P2P micro-benchmark",
        [
            f"copy {run.size_mib} MiB between every ordered pair of {which} through {backend}: one way, both ways, "
            f"and staged through pinned host memory, {run.iters} timed iterations each after {run.warmup} warm-up",
            "the GPUs' copy engines and links run flat out for a few seconds per pair: serving traffic on them will stall",
        ],
    )
    report = p2p.measure(backend, gpus, size_mib=run.size_mib, iters=run.iters, warmup=run.warmup, progress=_progress(emit))
    table = p2p_table(report)
    _publish(
        emit,
        outputs,
        kind="p2p",
        text=report.to_json(),
        section_title="Validation",
        tables=[(f"P2P copies, {run.size_mib} MiB ({backend})", table)],
        markdown=section(f"P2P micro-benchmark ({report.taken_at})", table),
        notes=[f"GPU{g.index}: {g.name} at {g.pci_bus_id or 'unknown bus'}" for g in report.gpus],
    )
    warning = p2p.save_for_audit(report, run.save_to)
    if warning:
        emit(Warning_(text=warning))
    if any(not pair.data_ok for pair in report.pairs):
        emit(Warning_(text="data corrupted in a peer copy: P2P is unsafe on this host (IOMMU/ACS?), whatever its speed"))
    return report


# --- nccl ------------------------------------------------------------------------------------------


class NcclRun(Record):
    gpus: int | None = None
    """Ranks; ``None``: every visible GPU."""
    sizes: str = "1M,16M,256M,1G"
    iters: int = 20
    warmup: int = 5
    tool: Tool = "auto"
    """``auto`` (nccl-tests' all_reduce_perf when on PATH, else torch.distributed), ``torch``, ``nccl-tests``."""


def run_nccl(run: NcclRun, *, approve: Approve, emit: EventSink, outputs: Outputs = NO_OUTPUTS) -> NcclReport:
    """All-reduce algbw/busbw by message size, and the transport NCCL chose."""
    from rigaudit.tools.bench.nccl import run_allreduce
    from rigaudit.tools.bench.nccl_parse import human_size, parse_sizes

    sizes = parse_sizes(run.sizes)
    if run.gpus is not None and run.gpus < 2:
        raise UsageError("--gpus: the all-reduce needs at least 2 GPUs")
    approve(
        "run the NCCL all-reduce benchmark",
        [
            f"all-reduce {', '.join(human_size(s) for s in sizes)} over {run.gpus or 'all visible'} GPUs "
            f"({run.tool}), {run.iters} timed iterations per size; NCCL_NVLS_ENABLE=0 is forced",
            "the GPUs and their links run flat out while it runs: serving traffic on them will stall",
        ],
    )
    report = run_allreduce(run.tool, run.gpus, sizes, iters=run.iters, warmup=run.warmup, progress=_progress(emit))
    notes = [
        f"NCCL {report.nccl_version or '?'}; transport: {report.transport or 'unknown'} "
        f"({', '.join(f'{k} x{v}' for k, v in report.transports.items()) or 'no INFO transport lines'})",
        "busbw = algbw × 2(n−1)/n; about 80% of the link's one-way peak is healthy",
    ]
    table = nccl_table(report)
    _publish(
        emit,
        outputs,
        kind="nccl",
        text=report.to_json(),
        section_title="Validation",
        tables=[(f"NCCL all-reduce over {report.world_size} GPUs ({report.tool})", table)],
        markdown=section(f"NCCL all-reduce ({report.taken_at})", table, notes),
        notes=notes,
    )
    return report


# --- inference -------------------------------------------------------------------------------------


class InferenceRun(Record):
    """A load on an OpenAI-compatible server (``spec``), or an external benchmark command instead."""

    spec: LoadSpec | None = None
    command: str | None = None
    base_url: str | None = None
    model: str | None = None
    """With ``command``: what the result names (the command itself knows where it sends)."""


InferenceWords = Callable[[Sequence[str]], InferenceRun]
"""Reads ``bench inference`` options given as words into a run (the chat's ``/bench inference ARGS``)."""


def reach_server(spec: LoadSpec, emit: EventSink, load: Load = REAL) -> None:
    """Before a load is approved or sent: one request to the server, within a deadline
    (:class:`~rigaudit.tools.bench.endpoint.EndpointError`: one line, exit status 2); a warning when it lists
    other models. For a caller outside an event loop; :func:`~rigaudit.tools.bench.loadgen.reach` inside one."""
    import anyio

    from rigaudit.tools.bench.loadgen import reach

    note = anyio.run(reach, load, spec)
    if note is not None:
        emit(Warning_(text=note))


async def run_inference(run: InferenceRun, *, approve: Approve, emit: EventSink, outputs: Outputs = NO_OUTPUTS) -> BenchResult:
    """Streaming load at each concurrency level (TTFT, ITL, tok/s), or an external benchmark's parsed summary."""
    import anyio

    result: BenchResult
    if run.command is not None:
        from rigaudit.tools.bench.external import run_command

        command = run.command
        approve("run an external serving benchmark", [f"command: {command}", "it sends load to the server it names"])
        result = await anyio.to_thread.run_sync(
            lambda: run_command(command, base_url=run.base_url, model=run.model, on_line=lambda line: emit(Output(text=line)))
        )
    else:
        from rigaudit.tools.bench.loadgen import reach, run_load

        spec = run.spec
        if spec is None:
            raise UsageError("bench inference needs --base-url and --model (or --command)")
        if (note := await reach(REAL, spec)) is not None:
            emit(Warning_(text=note))
        approve(
            f"send {spec.total_requests(spec.repeat)} streaming requests to {spec.base_url}",
            [
                f"model {spec.model}, {spec.api} API, concurrency {','.join(map(str, spec.concurrency))}, "
                f"{spec.repeat} repeat(s), {spec.prompt_tokens} prompt / {spec.max_tokens} output tokens each",
                "a production server serves these requests alongside its real traffic",
            ],
        )
        result = await run_load(spec, _progress(emit))
    publish_inference(result, emit=emit, outputs=outputs)
    return result


def publish_inference(result: BenchResult, *, emit: EventSink, outputs: Outputs = NO_OUTPUTS) -> None:
    """An inference result as its event, ``--json`` and the report's Validation section; failed requests as a warning."""
    table, serving, notes = bench_table(result), serving_table(result), serving_notes(result)
    levels = level_summary(result)
    markdown = section(f"Inference benchmark ({result.started_at})", table, notes)
    if levels[1]:
        markdown += "\n" + section("Per level: the median of the repeats (range: max - min over the median)", levels)
    if serving[1]:
        markdown += "\n" + section("Serving metrics (ms)", serving)
    _publish(
        emit,
        outputs,
        kind="inference",
        text=result.to_json(),
        section_title="Validation",
        tables=[
            (f"Inference benchmark: {result.model or '?'} at {result.base_url or '?'}", table),
            *([("Per level: the median of the repeats (range: max - min over the median)", levels)] if levels[1] else []),
            *([("Serving metrics, every repeat's requests pooled", serving)] if serving[1] else []),
        ],
        markdown=markdown,
        notes=notes,
    )
    errors = sorted({s.error.split(":")[0] for r in result.runs for s in r.samples if s.error})
    if errors:
        emit(Warning_(text=f"failed requests: {', '.join(errors)}"))


# --- compare ---------------------------------------------------------------------------------------


def regression_warning(regressions: Sequence[object]) -> Warning_ | None:
    """What ``--fail-on-regression`` says before it exits 3, when output tok/s regressed somewhere."""
    if not regressions:
        return None
    what = ", ".join(str(r) for r in regressions)
    return Warning_(text=f"significant regression of output tok/s ({what}): exit 3 (--fail-on-regression)")


# --- ab --------------------------------------------------------------------------------------------


class AbBench(Record):
    """An interleaved A/B of plan steps: switched on and off between repeats of one load."""

    plan: Path
    only: tuple[str, ...]
    spec: LoadSpec
    settings: Settings
    journal: Path
    snapshot: Path | None = None
    into: Path | None = None
    cycles: int = 4
    settle: int = 1
    together: bool = False
    assume_yes: bool = False
    ready_timeout_s: float = 300.0
    """For a restart step: seconds a restart and the server's first token may take."""
    end_on: str | None = None
    """For a restart step: the arm to leave the server as (base or fix; None: base)."""


class AbDone(Record):
    """How an A/B ended: interrupted, stopped by an error, or with values it could not restore."""

    interrupted: bool
    failed: bool
    regressions: list[str]


def _ab_hosts(bench: AbBench) -> tuple[Host, Callable[[], Host]]:
    """(the host as it is now, a factory of the host to change): this machine, or a new copy of a snapshot."""
    from rigaudit.tools.hosts.snapshot import SnapshotHost

    if (bench.snapshot is None) != (bench.into is None):
        raise UsageError("--snapshot SRC and --into DST go together (a snapshot is changed only as a new copy)")
    if bench.snapshot is None or bench.into is None:
        from rigaudit.tools.hosts.local import LocalHost

        return LocalHost(), LocalHost
    into = bench.into.absolute()
    return SnapshotHost(bench.snapshot), lambda: SnapshotHost(into, writable=True)


def run_ab_bench(bench: AbBench, *, emit: EventSink, outputs: Outputs = NO_OUTPUTS) -> AbDone:
    """Ask once, switch the steps between repeats through a journal, always end on the baseline; report it."""
    import anyio

    from rigaudit.orchestrator.bench.ab import AbOptions, ab_steps, run_ab, vouch
    from rigaudit.orchestrator.change.apply import load_plan_file
    from rigaudit.orchestrator.change.approval import StepApprover
    from rigaudit.orchestrator.hosts.choose import in_container
    from rigaudit.orchestrator.hosts.snapshots import copy_snapshot
    from rigaudit.tools.bench.ab import analyze
    from rigaudit.tools.bench.render import ab_table

    plan, plan_host = load_plan_file(bench.plan)
    source, open_host = _ab_hosts(bench)
    inside = anyio.run(in_container, source)
    options = AbOptions(cycles=bench.cycles, settle=bench.settle, together=bench.together, in_container=inside)
    steps = ab_steps(plan, list(bench.only), options)
    if steps[0].kind == "restart":
        return _restart_step_bench(bench, plan_host, steps[0], source, emit=emit, outputs=outputs)
    if bench.end_on is not None:
        raise UsageError("--end-on names an arm that restarts the server: it goes with --arm or a restart step")
    anyio.run(lambda: vouch(plan_host, source, steps, live=bench.snapshot is None))
    approver = StepApprover(plan.digest(), assume_yes=bench.assume_yes, emit=emit)
    approver.ensure_possible(f"nothing switched ({len(steps)} step(s) waiting for approval)")
    if bench.snapshot is not None and bench.into is not None:
        copy_snapshot(bench.snapshot, bench.into.absolute())
    outcome = run_ab(open_host, plan, steps, bench.spec, approver, bench.journal, options, emit=emit, progress=_progress(emit))
    result = outcome.result
    comparison = analyze(result, bench.settings)
    restored = sum(1 for r in outcome.restores if r.outcome == "restored")
    back = f"back to the baseline: {restored} value(s) restored at the end, {len(outcome.restore_failed)} failed"
    method = f"method: {comparison.method}; {COMPARE_LEGEND}"
    table = ab_table(comparison)
    _publish(
        emit,
        outputs,
        kind="ab",
        text=json.dumps({**json.loads(result.to_json()), "comparison": comparison.to_dict()}, indent=2),
        section_title="Benchmark comparison",
        tables=[(f"bench ab: {', '.join(result.steps)} on {result.host} ({result.source})", table)],
        markdown=section(f"bench ab {', '.join(result.steps)}", table, [*comparison.bought, *comparison.warnings, method, back]),
        notes=[*comparison.bought, method, f"{back}; journal {result.journal}"],
    )
    for warning in comparison.warnings:
        emit(Warning_(text=warning))
    problems = [f"{r.step_id} {r.target.describe()}: {r.message}" for r in outcome.restore_failed]
    if outcome.restore_error:
        problems.append(outcome.restore_error)
    for problem in problems:
        emit(Warning_(text=f"not restored: {problem}; finish with: rigaudit rollback {result.journal}"))
    if result.error:
        emit(Warning_(text=f"bench ab stopped: {result.error}"))
    return AbDone(interrupted=outcome.interrupted, failed=bool(result.error or problems), regressions=comparison.regressions())


def _restart_step_bench(
    bench: AbBench, plan_host: HostSummary | None, step: PlanStep, host: Host, *, emit: EventSink, outputs: Outputs
) -> AbDone:
    """A restart step: derive its two arms from this machine's server (or ask for them), then run them as --arm does."""
    import anyio

    from rigaudit.orchestrator.bench.step_arms import derive_arms
    from rigaudit.orchestrator.change.trust import check_machine

    if bench.snapshot is not None:
        raise UsageError(f"{step.id} needs a server restart: it is measured on this machine's server, not on --snapshot")
    derived = anyio.run(derive_arms, host, step)
    anyio.run(lambda: check_machine(plan_host, host, live=True))
    restart = RestartBench(
        arms=derived.arms,
        spec=bench.spec,
        settings=bench.settings,
        journal=bench.journal,
        cycles=bench.cycles,
        settle=bench.settle,
        ready_timeout_s=bench.ready_timeout_s,
        end_on=bench.end_on,
        assume_yes=bench.assume_yes,
        steps=(step.id,),
        about=derived.about,
    )
    return run_restart_bench(restart, emit=emit, outputs=outputs)


class RestartBench(Record):
    """An interleaved A/B of arms that restart the server: each arm the command that brings it up as that arm."""

    arms: tuple[ArmCommand, ...]
    spec: LoadSpec
    settings: Settings
    journal: Path
    cycles: int = 6
    settle: int = 1
    ready_timeout_s: float = 300.0
    end_on: str | None = None
    assume_yes: bool = False
    steps: tuple[str, ...] = ()
    """The plan step the arms were derived from (none: the person's --arm commands)."""
    about: tuple[str, ...] = ()


def run_restart_bench(bench: RestartBench, *, emit: EventSink, outputs: Outputs = NO_OUTPUTS) -> AbDone:
    """Say what it can detect, ask once, restart before every visit, leave the server as found; report it."""
    from rigaudit.orchestrator.bench.restart import RestartOptions, check_arms, plan_power, run_restart_ab
    from rigaudit.orchestrator.change.approval import StepApprover
    from rigaudit.tools.bench.ab import analyze
    from rigaudit.tools.bench.render import ab_table

    options = RestartOptions(
        cycles=bench.cycles,
        settle=bench.settle,
        ready_timeout_s=bench.ready_timeout_s,
        end_on=bench.end_on,
        steps=bench.steps,
        about=bench.about,
    )
    check_arms(bench.arms, options)
    emit(Output(text=plan_power(bench.spec, len(bench.arms), bench.cycles, bench.settings)))
    approver = StepApprover("", assume_yes=bench.assume_yes, emit=emit)
    outcome = run_restart_ab(bench.arms, bench.spec, approver, bench.journal, options, bench.settings, progress=_progress(emit))
    result = outcome.result
    comparison = analyze(result, bench.settings)
    ready = [v.ready_s for v in result.visits if v.ready_s is not None]
    back = (
        f"left as {result.restored} (restarted last)"
        if result.restored
        else f"NOT left as found: {outcome.restore_error or 'unknown'}"
    )
    restarts = (
        f"{len(ready)} restarts, {sum(ready) / len(ready):.1f} s each on average until the first token"
        if ready
        else "no restart completed"
    )
    method = f"method: {comparison.method}; every visit a new server session; {COMPARE_LEGEND}"
    table = ab_table(comparison)
    names = ", ".join(a.name for a in result.arms)
    _publish(
        emit,
        outputs,
        kind="ab",
        text=json.dumps({**json.loads(result.to_json()), "comparison": comparison.to_dict()}, indent=2),
        section_title="Benchmark comparison",
        tables=[(f"bench ab (restarts): {names} at {bench.spec.base_url}", table)],
        markdown=section(
            f"bench ab {names} (restarts)", table, [*comparison.bought, *comparison.warnings, method, restarts, back]
        ),
        notes=[*comparison.bought, method, restarts, f"{back}; journal {result.journal}"],
    )
    for warning in comparison.warnings:
        emit(Warning_(text=warning))
    if outcome.restore_error:
        emit(Warning_(text=f"not left as found: {outcome.restore_error}"))
    if result.error:
        emit(Warning_(text=f"bench ab stopped: {result.error}"))
    failed = bool(result.error or outcome.restore_error)
    return AbDone(interrupted=outcome.interrupted, failed=failed, regressions=comparison.regressions())
