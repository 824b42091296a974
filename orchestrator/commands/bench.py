"""Benchmarks that close the loop: P2P copies, NCCL all-reduce, inference load, comparing runs, and A/B of fixes.

Examples:
  rigaudit bench p2p --yes --json p2p.json              every GPU pair: one way, both ways, staged, data check
  rigaudit bench nccl --sizes 1M,16M,256M,1G --yes      all-reduce algbw/busbw and NCCL's transport
  rigaudit bench inference --base-url http://127.0.0.1:30000 --model M --concurrency 1,4,16 --repeat 5 --json base.json
  rigaudit bench inference ... --slo ttft_ms=200 --slo tpot_ms=50   goodput under your objectives
  rigaudit bench inference --command 'python -m sglang.bench_serving --backend sglang ...' --json base.json
  rigaudit bench compare base.json after.json --report system-improve.md --fail-on-regression
  rigaudit bench ab --plan audit.json --only numa.balancing --base-url URL --model M --cycles 6 --yes

Every run that loads GPUs or a server is approved first, like an apply step (--yes for scripts;
without a terminal and without --yes nothing runs). The P2P result is also saved to
/var/tmp/rigaudit/p2p.json, where the audit's p2p.bandwidth check reads it.

How compare and ab judge (the repeat is the unit): each repeat's figure per level (output tok/s,
the headline; TTFT and ITL medians) counts once. The change is the ratio of geometric means with a
Welch t interval on the log scale (ab: a paired t interval over its cycles); the p-values of every
level and metric shown are adjusted together with Holm's weighted step-down procedure (output tok/s
carries 2/3 of each level's weight), so identical configurations are called different at most
1 - confidence of the time. A change counts when its adjusted p is below 1 - confidence and it is
at least --noise-floor; "no significant change" needs the interval within ±--resolution, otherwise
the verdict is "not enough repeats" with the number per side that the observed spread needs. A
trend over a session (warm-up, clocks, another tenant) is reported; inference runs its levels in a
balanced (Williams Latin square) order and ab its arms, so time is not mistaken for an effect.
compare refuses results of different workloads (model, URL, API, max/prompt tokens, levels,
requests per run, tool version) unless --allow-different.

Exit status: 0 done; 1 the benchmark failed, found corrupt data, or (ab) a switch failed and was
rolled back; 2 usage error, torch/GPUs missing, or (compare) different workloads; 3 not approved,
or with --fail-on-regression a significant regression of output tok/s; 130 interrupted (ab rolls
back first).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console
from rich.table import Table

from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.errors import OperationError, UsageError
from rigaudit.tools.bench.errors import BenchFailed, BenchInputError, BenchUnavailable
from rigaudit.tools.bench.render import Table as Rows

T = TypeVar("T")


def _ints(text: str, what: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise UsageError(f"{what} wants numbers like 1,4,16, not {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise UsageError(f"{what} wants positive numbers, not {text!r}")
    return values


def guarded(work: Callable[[], T]) -> T:
    """Run benchmark code, turning its errors into the CLI's one-line errors."""
    try:
        return work()
    except (BenchUnavailable, BenchInputError) as exc:
        raise UsageError(str(exc)) from None
    except BenchFailed as exc:
        raise OperationError(str(exc)) from None


def _out(args: argparse.Namespace) -> Console:
    """Human output: stdout, or stderr when JSON goes to stdout."""
    stderr = getattr(args, "json", None) == "-"
    console = Console(stderr=stderr, highlight=False)
    return console if console.is_terminal else Console(stderr=stderr, highlight=False, width=200)


def show(console: Console, rows: Rows, title: str) -> None:
    headers, body = rows
    table = Table(title=title, title_justify="left")
    for header in headers:
        table.add_column(header)
    for row in body:
        table.add_row(*row)
    console.print(table)


@contextmanager
def progress_bar(console: Console) -> Iterator[Callable[[str, int, int], None]]:
    """A callback for tools/bench progress: a rich bar on a terminal, nothing otherwise."""
    if not console.is_terminal:
        yield lambda label, done, total: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    tasks: dict[str, Any] = {}
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True
    ) as bar:

        def update(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(label, total=total)
            bar.update(tasks[label], completed=done, total=total)

        yield update


def approve(what: str, details: Sequence[str], args: argparse.Namespace) -> None:
    from rigaudit.orchestrator.approval import require_approval

    session = getattr(args, "_session", None)
    require_approval(what, details, assume_yes=bool(args.yes), emit=session.emit if session is not None else None)


def write_outputs(args: argparse.Namespace, text: str, title: str, markdown: str) -> None:
    from rigaudit.orchestrator.output import write_json

    session = getattr(args, "_session", None)
    if session is not None:
        import json

        from rigaudit.transcripts.events import BenchResultReported

        try:
            data = json.loads(text)
        except ValueError:
            data = {}
        session.emit(BenchResultReported(kind=str(args.bench_kind), summary=title, data=data if isinstance(data, dict) else {}))
    if getattr(args, "json", None):
        write_json(Path(args.json), text)
    if getattr(args, "report", None):
        from rigaudit.orchestrator.report import append_section

        try:
            append_section(Path(args.report), title, markdown)
        except OSError as exc:
            raise UsageError(f"cannot write {args.report}: {exc.strerror or exc}") from None


def _common(parser: argparse.ArgumentParser, *, gated: bool = True) -> None:
    parser.add_argument("--json", nargs="?", const="-", metavar="FILE", help="write the result as JSON (no FILE or '-': stdout)")
    parser.add_argument("--report", metavar="FILE", help="append the result to this system-improve.md")
    if gated:
        parser.add_argument("--yes", action="store_true", help="approve the run without asking (scripts)")
    parser.add_argument("--transcript", type=Path, metavar="FILE", help="where to record this session (default: state dir)")
    parser.add_argument("--no-transcript", action="store_true", help="do not record this session")


# --- p2p -------------------------------------------------------------------------------------------


def _p2p(args: argparse.Namespace) -> int:
    from rigaudit.tools.bench import p2p
    from rigaudit.tools.bench.gpu import parse_gpu_list, pick_backend
    from rigaudit.tools.bench.render import p2p_table, section

    backend = guarded(lambda: pick_backend(args.backend))
    gpus = guarded(lambda: parse_gpu_list(args.gpus))
    if args.size_mib <= 0 or args.iters <= 0:
        raise UsageError("--size-mib and --iters must be positive")
    which = "GPUs " + ",".join(map(str, gpus)) if gpus else "every visible GPU"
    approve(
        "run the P2P micro-benchmark",
        [
            f"copy {args.size_mib} MiB between every ordered pair of {which} through {backend}: one way, both ways, "
            f"and staged through pinned host memory, {args.iters} timed iterations each after {args.warmup} warm-up",
            "the GPUs' copy engines and links run flat out for a few seconds per pair: serving traffic on them will stall",
        ],
        args,
    )
    console = _out(args)
    with progress_bar(console) as progress:
        report = guarded(
            lambda: p2p.measure(backend, gpus, size_mib=args.size_mib, iters=args.iters, warmup=args.warmup, progress=progress)
        )
    show(console, p2p_table(report), f"P2P copies, {args.size_mib} MiB ({backend})")
    for gpu in report.gpus:
        console.print(f"GPU{gpu.index}: {gpu.name} at {gpu.pci_bus_id or 'unknown bus'}")
    warning = p2p.save_for_audit(report, Path(args.save_to))
    if warning:
        console.print(f"[yellow]warning:[/] {warning}")
    write_outputs(args, report.to_json(), "Validation", section(f"P2P micro-benchmark ({report.taken_at})", p2p_table(report)))
    if any(not pair.data_ok for pair in report.pairs):
        console.print("[red]data corrupted in a peer copy: P2P is unsafe on this host (IOMMU/ACS?), whatever its speed[/]")
        return 1
    return 0


def _add_p2p(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpus", help="GPU indices, e.g. 0,1 (default: all visible)")
    parser.add_argument("--size-mib", type=int, default=256, help="bytes per copy, MiB (default 256)")
    parser.add_argument("--iters", type=int, default=20, help="timed iterations per measurement (default 20; the median counts)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed copies first (default 3)")
    parser.add_argument("--backend", choices=("torch", "cuda-bindings"), help="default: torch if installed, else cuda-bindings")
    parser.add_argument("--save-to", default=str(Path("/var/tmp/rigaudit/p2p.json")), help="where the audit reads the result")
    _common(parser)


# --- nccl ------------------------------------------------------------------------------------------


def _nccl(args: argparse.Namespace) -> int:
    from rigaudit.tools.bench.nccl import run_allreduce
    from rigaudit.tools.bench.nccl_parse import human_size, parse_sizes
    from rigaudit.tools.bench.render import nccl_table, section

    sizes = guarded(lambda: parse_sizes(args.sizes))
    if args.gpus is not None and args.gpus < 2:
        raise UsageError("--gpus: the all-reduce needs at least 2 GPUs")
    approve(
        "run the NCCL all-reduce benchmark",
        [
            f"all-reduce {', '.join(human_size(s) for s in sizes)} over {args.gpus or 'all visible'} GPUs "
            f"({args.tool}), {args.iters} timed iterations per size; NCCL_NVLS_ENABLE=0 is forced",
            "the GPUs and their links run flat out while it runs: serving traffic on them will stall",
        ],
        args,
    )
    console = _out(args)
    with progress_bar(console) as progress:
        report = guarded(
            lambda: run_allreduce(args.tool, args.gpus, sizes, iters=args.iters, warmup=args.warmup, progress=progress)
        )
    show(console, nccl_table(report), f"NCCL all-reduce over {report.world_size} GPUs ({report.tool})")
    notes = [
        f"NCCL {report.nccl_version or '?'}; transport: {report.transport or 'unknown'} "
        f"({', '.join(f'{k} x{v}' for k, v in report.transports.items()) or 'no INFO transport lines'})",
        "busbw = algbw × 2(n−1)/n; about 80% of the link's one-way peak is healthy",
    ]
    for note in notes:
        console.print(note)
    markdown = section(f"NCCL all-reduce ({report.taken_at})", nccl_table(report), notes)
    write_outputs(args, report.to_json(), "Validation", markdown)
    return 1 if any(r.data_ok is False for r in report.rows) else 0


def _add_nccl(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpus", type=int, help="number of GPUs (ranks), default: all visible")
    parser.add_argument("--sizes", default="1M,16M,256M,1G", help="message sizes (default 1M,16M,256M,1G)")
    parser.add_argument("--iters", type=int, default=20, help="timed iterations per size (default 20)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed iterations per size (default 5)")
    parser.add_argument(
        "--tool",
        choices=("auto", "torch", "nccl-tests"),
        default="auto",
        help="auto: nccl-tests' all_reduce_perf when on PATH, else torch.distributed",
    )
    _common(parser)


# --- inference -------------------------------------------------------------------------------------


def _inference(args: argparse.Namespace) -> int:
    from rigaudit.tools.bench.render import bench_table, section, serving_notes, serving_table
    from rigaudit.tools.bench.results import BenchResult

    console = _out(args)
    result: BenchResult
    if args.command:
        from rigaudit.tools.bench.external import run_command

        approve("run an external serving benchmark", [f"command: {args.command}", "it sends load to the server it names"], args)
        result = guarded(
            lambda: run_command(
                args.command,
                base_url=args.base_url,
                model=args.model,
                on_line=lambda line: console.print(line, markup=False, highlight=False),
            )
        )
    else:
        if not args.base_url or not args.model:
            raise UsageError("bench inference needs --base-url and --model (or --command)")
        result = _load(args, console)
    show(console, bench_table(result), f"Inference benchmark: {result.model or '?'} at {result.base_url or '?'}")
    serving = serving_table(result)
    if serving[1]:
        show(console, serving, "Serving metrics, every repeat's requests pooled")
    notes = serving_notes(result)
    for note in notes:
        console.print(note, highlight=False)
    errors = sorted({s.error.split(":")[0] for r in result.runs for s in r.samples if s.error})
    if errors:
        console.print(f"[yellow]failed requests:[/] {', '.join(errors)}")
    markdown = section(f"Inference benchmark ({result.started_at})", bench_table(result), notes)
    if serving[1]:
        markdown += "\n" + section("Serving metrics (ms)", serving)
    write_outputs(args, result.to_json(), "Validation", markdown)
    return 1 if result.runs and all(r.requests_ok == 0 for r in result.runs) else 0


def load_spec(args: argparse.Namespace) -> Any:
    """The LoadSpec of the load options, every one bounded (one clear line otherwise)."""
    from rigaudit.tools.bench.loadgen import LoadSpec
    from rigaudit.tools.bench.serving import parse_slo

    if not args.base_url or not args.model:
        raise UsageError(f"bench {args.bench_kind} needs --base-url and --model")
    for name, value, low, high in (
        ("--max-tokens", args.max_tokens, 1, 131_072),
        ("--prompt-tokens", args.prompt_tokens, 1, 131_072),
        ("--repeat", getattr(args, "repeat", 1), 1, 100),
        ("--requests", args.requests if args.requests is not None else 1, 1, 100_000),
        ("--warmup", args.warmup, 0, 10_000),
    ):
        if not low <= value <= high:
            raise UsageError(f"{name} wants a whole number from {low} to {high}, not {value}")
    if not 0 < args.timeout <= 86_400:
        raise UsageError(f"--timeout wants seconds from 0 to 86400, not {args.timeout:g}")
    concurrency = _ints(args.concurrency, "--concurrency")
    if max(concurrency) > 4096 or len(concurrency) > 32 or len(set(concurrency)) != len(concurrency):
        raise UsageError(f"--concurrency wants up to 32 different levels of at most 4096, not {args.concurrency!r}")
    return LoadSpec(
        base_url=args.base_url,
        model=args.model,
        api=args.api,
        concurrency=concurrency,
        requests=args.requests,
        max_tokens=args.max_tokens,
        prompt_tokens=args.prompt_tokens,
        repeat=getattr(args, "repeat", 1),
        warmup=args.warmup,
        ignore_eos=not args.no_ignore_eos,
        api_key=args.api_key,
        timeout_s=args.timeout,
        order=getattr(args, "order", "balanced"),
        slo=guarded(lambda: parse_slo(args.slo or [])),
    )


def _load(args: argparse.Namespace, console: Console) -> Any:
    import anyio

    from rigaudit.tools.bench.loadgen import run_load

    spec = load_spec(args)
    approve(
        f"send {spec.total_requests(spec.repeat)} streaming requests to {spec.base_url}",
        [
            f"model {spec.model}, {spec.api} API, concurrency {','.join(map(str, spec.concurrency))}, {spec.repeat} repeat(s), "
            f"{spec.prompt_tokens} prompt / {spec.max_tokens} output tokens each",
            "a production server serves these requests alongside its real traffic",
        ],
        args,
    )
    with progress_bar(console) as progress:
        return anyio.run(run_load, spec, progress)


def _add_load(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base-url", help="the server, e.g. http://127.0.0.1:30000 (with or without /v1)")
    parser.add_argument("--model", help="model name as the server knows it")
    parser.add_argument("--api", choices=("chat", "completions"), default="chat")
    parser.add_argument("--concurrency", default="1,4,16", help="levels, e.g. 1,4,16 (default)")
    parser.add_argument("--requests", type=int, help="requests per level and repeat (default: 4 per slot, at least 8)")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--prompt-tokens", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=2, help="untimed requests first, excluded from every figure (default 2)")
    parser.add_argument(
        "--slo",
        action="append",
        metavar="KEY=MS",
        help="a service-level objective for goodput: ttft_ms=200, tpot_ms=50 or e2e_ms=5000 (repeatable)",
    )
    parser.add_argument("--no-ignore-eos", action="store_true", help="do not send ignore_eos (for servers that reject it)")
    parser.add_argument("--api-key", help="bearer token, if the server wants one")
    parser.add_argument("--timeout", type=float, default=600.0, help="per-request timeout, s")


def _add_inference(parser: argparse.ArgumentParser) -> None:
    from rigaudit.tools.bench.schedule import ORDERS

    _add_load(parser)
    parser.add_argument("--repeat", type=int, default=1, help="run every level K times (compare needs 3 or more; 5 is better)")
    parser.add_argument(
        "--order",
        choices=ORDERS,
        default="balanced",
        help="balanced (default): each repeat runs the levels in a row of a Williams Latin square, so a drift over "
        "the session is not taken for a difference between levels; sequential: the same order every repeat",
    )
    parser.add_argument("--command", help="run this external benchmark instead and parse its summary (sglang, vLLM)")
    _common(parser)


# --- compare ---------------------------------------------------------------------------------------


def settings_of(args: argparse.Namespace) -> Any:
    from rigaudit.tools.bench.compare import Settings, check_settings

    settings = Settings(confidence=args.confidence, noise_floor=args.noise_floor, resolution=args.resolution)
    problem = check_settings(settings)
    if problem:
        raise UsageError(problem)
    return settings


def show_comparison(console: Console, comparison: Any, title: str) -> list[str]:
    """Print the comparison table, its warnings and its method; returns the notes for the report."""
    from rigaudit.tools.bench.render import COMPARE_LEGEND, compare_table

    show(console, compare_table(comparison), title)
    for warning in comparison.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
    reasons = [
        f"concurrency {level.concurrency}: {level.headline.label}: {level.headline.reason}"
        for level in comparison.levels
        if level.headline.reason
    ]
    for reason in reasons:
        console.print(reason, highlight=False)
    console.print(f"method: {comparison.method}; {COMPARE_LEGEND}", highlight=False)
    return [*reasons, *comparison.warnings, f"method: {comparison.method}; {COMPARE_LEGEND}"]


def regression_exit(console: Console, regressions: Sequence[Any], args: argparse.Namespace) -> int:
    """3 with --fail-on-regression when a headline metric regressed significantly, else 0."""
    if regressions and args.fail_on_regression:
        what = ", ".join(str(r) for r in regressions)
        console.print(f"[red]significant regression of output tok/s ({what}): exit 3 (--fail-on-regression)[/]")
        return 3
    return 0


def _compare(args: argparse.Namespace) -> int:
    from rigaudit.tools.bench.compare import compare
    from rigaudit.tools.bench.render import compare_table, section
    from rigaudit.tools.bench.results import load_result

    settings = settings_of(args)
    base = guarded(lambda: load_result(Path(args.base)))
    new = guarded(lambda: load_result(Path(args.new)))
    result = guarded(lambda: compare(base, new, settings, allow_different=args.allow_different))
    console = _out(args)
    notes = show_comparison(console, result, f"{args.base} → {args.new}")
    write_outputs(
        args,
        json.dumps(result.to_dict(), indent=2),
        "Benchmark comparison",
        section(f"{Path(args.base).name} → {Path(args.new).name}", compare_table(result), notes),
    )
    return regression_exit(console, [f"concurrency {lv.concurrency}" for lv in result.regressions()], args)


def _add_judging(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--confidence", type=float, default=0.95, help="of the intervals and the verdicts, 0.5-0.999 (default 0.95)"
    )
    parser.add_argument(
        "--noise-floor", type=float, default=0.05, help="smallest relative change that counts, 0-0.5 (default 0.05)"
    )
    parser.add_argument(
        "--resolution",
        type=float,
        default=0.10,
        help="'no significant change' needs the interval within ±this, 0.01-1 (default 0.10); else 'not enough repeats'",
    )
    parser.add_argument(
        "--fail-on-regression", action="store_true", help="exit 3 when output tok/s regressed significantly at any level"
    )


def _add_compare(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("base", help="baseline rigaudit.bench/1 JSON")
    parser.add_argument("new", help="the run after the change")
    parser.add_argument(
        "--allow-different",
        action="store_true",
        help="compare results of different workloads (model, URL, API, tokens, levels, requests, tool) anyway, "
        "listing the differences",
    )
    _add_judging(parser)
    _common(parser, gated=False)


# --- ab --------------------------------------------------------------------------------------------


def _ab_host(args: argparse.Namespace) -> tuple[Any, Callable[[], Any]]:
    """(the host as it is now, a factory of the host to change): this machine, or a new copy of a snapshot."""
    from rigaudit.tools.hosts.snapshot import SnapshotError, SnapshotHost

    if (args.snapshot is None) != (args.into is None):
        raise UsageError("--snapshot SRC and --into DST go together (a snapshot is changed only as a new copy)")
    if args.snapshot is None:
        from rigaudit.tools.hosts.local import LocalHost

        return LocalHost(), LocalHost
    into = Path(args.into).absolute()
    try:
        source = SnapshotHost(args.snapshot)
    except SnapshotError as exc:
        raise UsageError(str(exc)) from None
    return source, lambda: SnapshotHost(into, writable=True)


def _ab(args: argparse.Namespace) -> int:
    import anyio

    from rigaudit.orchestrator.apply import copy_snapshot, host_in_container, load_plan
    from rigaudit.orchestrator.approval import Gate
    from rigaudit.orchestrator.bench_ab import AbOptions, ab_steps, run_ab
    from rigaudit.tools.bench.ab import analyze
    from rigaudit.tools.bench.render import COMPARE_LEGEND, ab_table, section
    from rigaudit.tools.journal import default_journal_path

    settings = settings_of(args)
    spec = load_spec(args)
    if args.plan is None:
        raise UsageError("bench ab needs --plan FILE (from `rigaudit audit --json FILE`)")
    plan = load_plan(Path(args.plan))
    source, open_host = _ab_host(args)
    in_container = anyio.run(host_in_container, source)
    options = AbOptions(cycles=args.cycles, settle=args.settle, together=args.together, in_container=in_container)
    only = [s.strip() for s in (args.only or "").split(",") if s.strip()]
    steps = ab_steps(plan, only, options)
    session = getattr(args, "_session", None)
    gate = Gate(plan.digest(), assume_yes=args.yes, emit=session.emit if session is not None else None)
    gate.ensure_possible(f"nothing switched ({len(steps)} step(s) waiting for approval)")
    if args.snapshot is not None:
        copy_snapshot(Path(args.snapshot), Path(args.into).absolute())
    journal = Path(args.journal) if args.journal else default_journal_path()
    console = _out(args)
    with progress_bar(console) as progress:
        outcome = run_ab(
            open_host, plan, steps, spec, gate, journal, options, emit=session.emit if session else None, progress=progress
        )
    result = outcome.result
    comparison = analyze(result, settings)
    show(console, ab_table(comparison), f"bench ab: {', '.join(result.steps)} on {result.host} ({result.source})")
    for line in comparison.bought:
        console.print(line, highlight=False)
    for warning in comparison.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
    console.print(f"method: {comparison.method}; {COMPARE_LEGEND}", highlight=False)
    restored = sum(1 for r in outcome.restores if r.outcome == "restored")
    back = f"back to the baseline: {restored} value(s) restored at the end, {len(outcome.restore_failed)} failed"
    console.print(f"{back}; journal {result.journal}", highlight=False)
    problems = [f"{r.step_id} {r.target.describe()}: {r.message}" for r in outcome.restore_failed]
    if outcome.restore_error:
        problems.append(outcome.restore_error)
    for problem in problems:
        console.print(f"[red]not restored:[/] {problem}; finish with: rigaudit rollback {result.journal}", highlight=False)
    if result.error:
        console.print(f"[red]bench ab stopped:[/] {result.error}", highlight=False)
    notes = [*comparison.bought, *comparison.warnings, f"method: {comparison.method}; {COMPARE_LEGEND}", back]
    data = {**json.loads(result.to_json()), "comparison": comparison.to_dict()}
    write_outputs(
        args,
        json.dumps(data, indent=2),
        "Benchmark comparison",
        section(f"bench ab {', '.join(result.steps)}", ab_table(comparison), notes),
    )
    if outcome.interrupted:
        return 130
    if result.error or problems:
        return 1
    return regression_exit(console, comparison.regressions(), args)


def _add_ab(parser: argparse.ArgumentParser) -> None:
    from rigaudit.orchestrator.bench_ab import MAX_CYCLES, MAX_SETTLE

    parser.add_argument("--plan", metavar="FILE", help="the plan from `rigaudit audit --json FILE`")
    parser.add_argument("--only", metavar="STEP,...", help="the runtime steps to switch on and off (required)")
    where = parser.add_argument_group("where (default: this machine)")
    where.add_argument("--snapshot", metavar="SRC", help="a snapshot to copy and switch (needs --into)")
    where.add_argument("--into", metavar="DST", help="the new copy of --snapshot that is changed")
    parser.add_argument(
        "--cycles", type=int, default=4, help=f"visits of every arm, 2-{MAX_CYCLES} (default 4; each visit runs every level once)"
    )
    parser.add_argument("--settle", type=int, default=1, help=f"untimed requests before every visit, 0-{MAX_SETTLE} (default 1)")
    parser.add_argument("--together", action="store_true", help="with several steps, measure only all of them together")
    parser.add_argument("--journal", metavar="FILE", help="where to journal the switches (default: state dir)")
    _add_load(parser)
    _add_judging(parser)
    _common(parser)


_KINDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {
    "p2p": ("peer-copy bandwidth and data check for every GPU pair", _add_p2p, _p2p),
    "nccl": ("NCCL all-reduce algbw/busbw and transport", _add_nccl, _nccl),
    "inference": ("streaming load on an OpenAI-compatible server: TTFT, ITL, tok/s", _add_inference, _inference),
    "compare": ("compare two inference results, repeat by repeat, with Holm-adjusted t intervals", _add_compare, _compare),
    "ab": ("interleaved A/B of runtime fixes: apply and roll back steps between repeats", _add_ab, _ab),
}


def _add(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="bench_kind", metavar="KIND", required=True)
    for name, (help_text, add, run) in _KINDS.items():
        child = sub.add_parser(name, help=help_text, description=help_text)
        add(child)
        child.set_defaults(_bench_run=run)


def _run(args: argparse.Namespace) -> int:
    from rigaudit.orchestrator.session import open_session

    options = {k: v for k, v in vars(args).items() if not k.startswith("_") and isinstance(v, (str, int, float, bool))}
    with open_session(
        "bench", consumers=[], transcript=args.transcript, record=not args.no_transcript, options=options
    ) as session:
        args._session = session
        code: int = args._bench_run(args)
        session.exit_code = code
    sys.stdout.flush()
    return code


COMMAND = Command("bench", "benchmarks: P2P, NCCL all-reduce, inference load, compare", _add, _run, __doc__ or "")
